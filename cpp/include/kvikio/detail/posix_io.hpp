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

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>

namespace kvikio::detail {

/**
 * @brief The chunks of one transfer of `size` bytes, handed out in order to whichever thread
 * asks next: the threads of a device read each take the next chunk when they are ready for one,
 * so that a thread that falls behind (descheduled, a slow page) holds up only its own chunk,
 * not a fixed share of the file.
 */
class ChunkCursor {
 public:
  explicit ChunkCursor(std::size_t size) noexcept : size_{size} {}
  /// @brief The next chunk, [first, first + length) of the transfer, at most `max_length`
  /// bytes; none when every byte has been handed out.
  struct Chunk {
    std::size_t first, length;
  };
  std::optional<Chunk> take(std::size_t max_length) noexcept
  {
    std::size_t const first = next_.fetch_add(max_length, std::memory_order_relaxed);
    if (first >= size_) { return std::nullopt; }
    return Chunk{first, std::min(max_length, size_ - first)};
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::size_t size_;
  std::atomic<std::size_t> next_{0};
};

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

/**
 * @brief Reads the chunks of `cursor` (the transfer starts at `file_offset` of `fd` and at
 * `dev`) into device memory, one ring slot each, until none is left; several threads may share
 * the cursor. Returns the bytes this thread moved, once their copies have completed.
 */
std::size_t posix_device_read_chunks(int fd,
                                     void* dev,
                                     std::size_t file_offset,
                                     ChunkCursor& cursor,
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
