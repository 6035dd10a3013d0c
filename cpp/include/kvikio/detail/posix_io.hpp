/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/posix_io.hpp
 * @brief The POSIX backend: moves exactly `size` bytes between a file and memory.
 *
 * Short transfers and EINTR are retried. With a second descriptor opened with O_DIRECT
 * (`fd_direct` >= 0), the page-aligned middle of a range goes through it (straight into the
 * caller's buffer when that is page aligned too, else through a page-aligned buffer of this
 * thread) while the unaligned head and tail go through `fd`. Device memory is staged through
 * a pinned bounce buffer and this thread's stream.
 */

#include <cstddef>

namespace kvikio::detail {

/// @brief Throws the detail::EndOfFileError of a read of `size` bytes at `offset` past the end of
/// `fd` (naming the file's size), for every local backend.
[[noreturn]] void throw_read_past_end(int fd, std::size_t size, std::size_t offset);

/**
 * @brief Reads `size` bytes at `file_offset` into host memory.
 * @param fd_direct descriptor opened with O_DIRECT, or -1 to read through `fd` only.
 * @param overread with `fd_direct`, read the unaligned tail as a whole page through it.
 * @throws kvikio::detail::EndOfFileError if the file ends first (naming offset, size and file
 * size).
 * @throws kvikio::GenericSystemError if a read fails.
 */
std::size_t posix_host_read(int fd,
                            void* buf,
                            std::size_t size,
                            std::size_t file_offset,
                            int fd_direct = -1,
                            bool overread = false);

/**
 * @brief Writes `size` bytes at `file_offset` from host memory.
 * @throws kvikio::GenericSystemError if a write fails (e.g. ENOSPC, EFBIG).
 */
std::size_t posix_host_write(
  int fd, void const* buf, std::size_t size, std::size_t file_offset, int fd_direct = -1);

/**
 * @brief Reads into device memory at `devPtr_base + devPtr_offset`, in the current context,
 * through a pinned bounce buffer and this thread's stream.
 */
std::size_t posix_device_read(int fd,
                              void* devPtr_base,
                              std::size_t size,
                              std::size_t file_offset,
                              std::size_t devPtr_offset,
                              int fd_direct = -1,
                              bool overread = false);

/// @brief Writes from device memory; the counterpart of posix_device_read().
std::size_t posix_device_write(int fd,
                               void const* devPtr_base,
                               std::size_t size,
                               std::size_t file_offset,
                               std::size_t devPtr_offset,
                               int fd_direct = -1);

}  // namespace kvikio::detail
