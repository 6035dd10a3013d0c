/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/local_choice.hpp
 * @brief Which local backend serves a transfer: the one place that decides, for `FileHandle`
 * (once per call, before its tasks are made).
 */

#include <cstddef>
#include <string>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/local_backend.hpp>

namespace kvikio::detail {

/**
 * @brief Whether reads (`reading`) or writes of `size` bytes by a pool of `pool_threads` threads
 * go through io_uring: `KVIKIO_LOCAL_IO_BACKEND` asks for it (`io_uring`; `auto`: reads of more
 * than one io_uring_piece_size(), while the pool has at most half as many threads as there are
 * cores) and io_uring_available() (the process's probe: a pool thread whose own ring is refused
 * moves its share by system calls). A read of one piece has no second request to overlap: a
 * ring would only add the kernel worker's round trip (4 KiB from the page cache on an H100
 * machine: 16.6 us against pread(2)'s 1.7).
 */
[[nodiscard]] bool io_uring_selected(bool reading,
                                     std::size_t size,
                                     std::size_t pool_threads = defaults::thread_pool_nthreads());

/**
 * @brief Why compat mode AUTO moves a file's bytes through POSIX rather than cuFile, asked
 * without opening cuFile's driver where it need not be: "" where GPUDirect Storage is available.
 */
[[nodiscard]] std::string gds_unavailable_reason();

/// @brief Which backend moves large reads into host memory, and why (see local_backend_choice()).
struct LocalBackendChoice {
  std::string backend;  ///< "io_uring" or "posix": the backend of a read of more than one piece
  std::string why;      ///< the setting and the facts that chose it
};

/**
 * @brief What io_uring_selected() decides for a large read by a pool of `pool_threads` threads,
 * with its reasons in words (writes and reads of one piece go through POSIX under `auto`).
 */
[[nodiscard]] LocalBackendChoice local_backend_choice(
  std::size_t pool_threads = defaults::thread_pool_nthreads());

/// @brief The backend of host-memory transfers: io_uring where io_uring_selected(), else POSIX.
[[nodiscard]] HostBackend& host_backend(bool reading, std::size_t size, std::size_t pool_threads);

/// @brief The backend of device-memory transfers of `size` bytes of `file`: cuFile where it
/// serves the file (`file.cufile`), else that of host_backend() (staged through pinned memory).
[[nodiscard]] DeviceBackend& device_backend(bool reading, std::size_t size, LocalFile const& file);

}  // namespace kvikio::detail
