/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file io/mover/mover.hpp
 * @brief The byte movers of local I/O: what moves bytes between an open file and host memory
 * (POSIX system calls, io_uring), the file as they see it, and the chunks of one transfer.
 *
 * A mover only moves bytes. Which mover serves a call, and how the call is cut into tasks, is
 * decided above it, once, by the plan (io/local_plan); the O_DIRECT split of host transfers and
 * the staging of device transfers are the components between (io/staging).
 */

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <cuda.h>

#include <kvikio/shim/cufile_h_wrapper.hpp>

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

/// @brief An open file as the movers see it, for one transfer.
struct LocalFile {
  int fd{-1};                      ///< the page-cache descriptor
  int fd_direct{-1};               ///< an O_DIRECT descriptor to use for aligned parts, or -1
  bool overread{false};            ///< reads: an unaligned tail as one whole page via fd_direct
  CUfileHandle_t cufile{nullptr};  ///< the registered cuFile handle, where cuFile serves the file
  /// Threads of the pool that runs the call (io_uring shares the cores among their rings and
  /// sizes its staging by them); 0: `thread_pool_nthreads`.
  std::size_t pool_threads{0};

  /// @brief Whether an O_DIRECT descriptor is given (any value but -1 is one to try).
  [[nodiscard]] bool direct() const noexcept { return fd_direct != -1; }
  /// @brief The descriptor a piece goes through: the page-cache one or the O_DIRECT one.
  [[nodiscard]] int descriptor(bool buffered) const noexcept { return buffered ? fd : fd_direct; }
};

/// @brief A piece of a host transfer: host memory `buf` and the `size` bytes at `offset` of the
/// file it is moved to or from.
struct HostPiece {
  std::byte* buf;
  std::size_t size;
  std::size_t offset;
};

/// @brief Moves bytes between a file and host memory on the calling thread.
class ByteMover {
 public:
  virtual ~ByteMover() = default;
  /// @brief The name `KVIKIO_LOCAL_IO_BACKEND` and the logs use.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /**
   * @brief Moves exactly the bytes of `piece` through `file.descriptor(buffered)` (O_DIRECT:
   * the piece is page aligned).
   * @throws kvikio::detail::EndOfFileError for a read past the end; kvikio::GenericSystemError.
   */
  virtual void move_all(bool read, LocalFile const& file, bool buffered, HostPiece piece) = 0;
  /**
   * @brief Reads the chunks of `cursor` (from `file_offset` of the file to `dev`) into device
   * memory of the current context with a staging of the mover's own, on `stream`; nothing where
   * the mover has none for this file and thread (the staging ring of io/staging serves then).
   */
  virtual std::optional<std::size_t> read_to_device(LocalFile const& /*file*/,
                                                    CUdeviceptr /*dev*/,
                                                    std::size_t /*file_offset*/,
                                                    ChunkCursor& /*cursor*/,
                                                    CUstream /*stream*/)
  {
    return std::nullopt;
  }
};

/// @brief The POSIX mover: `pread`/`pwrite` calls (one object for the process).
ByteMover& posix_mover() noexcept;

/// @brief "fd <n> (<path>)": a descriptor as error messages name it, with the path it is open on
/// (read from `/proc/self/fd`; the number alone where that fails); errno is left as it was.
/// For failure paths only.
[[nodiscard]] std::string fd_for_message(int fd);

/// @brief Throws the detail::EndOfFileError of a read of `size` bytes at `offset` past the end of
/// `fd` (naming the file's size), for every local mover.
[[noreturn]] void throw_read_past_end(int fd, std::size_t size, std::size_t offset);

/// @brief One `pread` (`read`) or `pwrite` of at most `size` bytes at `offset`, retried on EINTR.
/// @return What the call returned (0 at the end of the file).
/// @throws kvikio::GenericSystemError naming the call, the descriptor, the size and the offset.
std::size_t transfer_once(bool read, int fd, void* buf, std::size_t size, std::size_t offset);

/// @brief Exactly `size` bytes by `pread`/`pwrite` calls, retried on EINTR and short transfers.
/// @throws kvikio::detail::EndOfFileError for a read past the end; kvikio::GenericSystemError.
void move_by_syscalls(bool read, int fd, std::byte* buf, std::size_t size, std::size_t offset);

}  // namespace kvikio::detail
