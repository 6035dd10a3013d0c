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

#include <kvikio/defaults.hpp>
#include <kvikio/detail/local_backend.hpp>

namespace kvikio::detail {

/**
 * @brief Whether reads (`reading`) or writes of a pool of `pool_threads` threads go through
 * io_uring: `KVIKIO_LOCAL_IO_BACKEND` asks for it (`io_uring`; `auto`: reads, while the pool has
 * at most half as many threads as there are cores) and io_uring_available() (the process's
 * probe: a pool thread whose own ring is refused moves its share by system calls).
 */
[[nodiscard]] bool io_uring_selected(bool reading,
                                     std::size_t pool_threads = defaults::thread_pool_nthreads());

/// @brief The backend of host-memory transfers: io_uring where io_uring_selected(), else POSIX.
[[nodiscard]] HostBackend& host_backend(bool reading, std::size_t pool_threads);

/// @brief The backend of device-memory transfers of `file`: cuFile where it serves the file
/// (`file.cufile`), else that of host_backend() (staged through pinned memory).
[[nodiscard]] DeviceBackend& device_backend(bool reading, LocalFile const& file);

}  // namespace kvikio::detail
