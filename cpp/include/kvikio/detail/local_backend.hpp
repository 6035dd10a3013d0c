/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/local_backend.hpp
 * @brief The seam between `FileHandle` and the local backends (POSIX, io_uring, cuFile): what a
 * backend does for host memory (HostBackend), what it does for device memory (DeviceBackend),
 * and the staged algorithms that the POSIX and io_uring backends share (StagedBackend).
 *
 * `FileHandle` picks the backends of each transfer (io/local_choice); a backend never decides
 * about another one. Adding a backend means implementing one or both interfaces here and adding
 * it to that choice.
 */

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <future>
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

/// @brief "fd <n> (<path>)": a descriptor as error messages name it, with the path it is open on
/// (read from `/proc/self/fd`; the number alone where that fails); errno is left as it was.
/// For failure paths only.
[[nodiscard]] std::string fd_for_message(int fd);

/// @brief Throws the detail::EndOfFileError of a read of `size` bytes at `offset` past the end of
/// `fd` (naming the file's size), for every local backend.
[[noreturn]] void throw_read_past_end(int fd, std::size_t size, std::size_t offset);

/// @brief One `pread` (`read`) or `pwrite` of at most `size` bytes at `offset`, retried on EINTR.
/// @return What the call returned (0 at the end of the file).
/// @throws kvikio::GenericSystemError naming the call, the descriptor, the size and the offset.
std::size_t transfer_once(bool read, int fd, void* buf, std::size_t size, std::size_t offset);

/// @brief This thread's page-aligned buffer for O_DIRECT transfers of unaligned user buffers;
/// `size` receives its size (the bounce buffer size rounded to whole pages).
std::byte* aligned_scratch(std::size_t& size);

/// @brief An open file as the backends see it, for one transfer.
struct LocalFile {
  int fd{-1};                      ///< the page-cache descriptor
  int fd_direct{-1};               ///< an O_DIRECT descriptor to use for aligned parts, or -1
  bool overread{false};            ///< reads: an unaligned tail as one whole page via fd_direct
  CUfileHandle_t cufile{nullptr};  ///< the registered cuFile handle, where cuFile serves the file
  /// Threads of the pool that runs the call (io_uring shares the cores among their rings and
  /// sizes its staging by them); 0: `thread_pool_nthreads`.
  std::size_t pool_threads{0};
};

/// @brief A backend that moves bytes between a file and host memory, on the calling thread.
class HostBackend {
 public:
  virtual ~HostBackend() = default;
  /// @brief The name `KVIKIO_LOCAL_IO_BACKEND` and the logs use.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// @brief Whether one thread keeps many requests in flight: a parallel transfer then gives
  /// each pool thread one long range instead of task-size pieces.
  [[nodiscard]] virtual bool deep_queue() const noexcept = 0;
  /**
   * @brief Reads exactly `size` bytes at `offset`.
   * @throws kvikio::detail::EndOfFileError if the file ends first (naming its size);
   * kvikio::GenericSystemError if a read fails.
   */
  virtual std::size_t read_host(LocalFile const& file,
                                void* buf,
                                std::size_t size,
                                std::size_t offset) = 0;
  /// @brief Writes exactly `size` bytes at `offset`; throws kvikio::GenericSystemError.
  virtual std::size_t write_host(LocalFile const& file,
                                 void const* buf,
                                 std::size_t size,
                                 std::size_t offset) = 0;
};

/// @brief A backend that moves bytes between a file and device memory of the current context,
/// on the calling thread.
class DeviceBackend {
 public:
  virtual ~DeviceBackend()                                     = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// @brief Whether the threads of a parallel read share one ChunkCursor of small chunks (true)
  /// or each reads a range of its own through a cursor of that range (false).
  [[nodiscard]] virtual bool shares_chunks() const noexcept = 0;
  /**
   * @brief Reads the chunks of `cursor` (the transfer starts at `file_offset` and at
   * `base + base_offset`; `base` is the allocation's start) until none is left; several threads
   * may share the cursor. Returns the bytes this thread moved, once they are in device memory.
   */
  virtual std::size_t read_device(LocalFile const& file,
                                  void* base,
                                  std::size_t base_offset,
                                  std::size_t file_offset,
                                  ChunkCursor& cursor) = 0;
  /// @brief Writes `size` bytes from `base + base_offset` at `file_offset`.
  virtual std::size_t write_device(LocalFile const& file,
                                   void const* base,
                                   std::size_t base_offset,
                                   std::size_t size,
                                   std::size_t file_offset) = 0;
  /// @brief The largest read that read_device_overlapped() may leave in flight (0: none).
  [[nodiscard]] virtual std::size_t overlapped_read_limit() const { return 0; }
  /**
   * @brief Reads `size` bytes at `file_offset` into `dst` (device memory of the current
   * context), making `done` ready with `size` once they are in device memory, or with the error.
   * On a thread pool worker, a read of at most overlapped_read_limit() bytes may return with its
   * copy in flight, or held to start with the reads that follow, for the worker to finish later
   * (detail::WorkerLeftovers), so that the worker reads the next one from the file meanwhile;
   * otherwise it returns when `done` is set.
   */
  virtual void read_device_overlapped(LocalFile const& file,
                                      void* dst,
                                      std::size_t size,
                                      std::size_t file_offset,
                                      std::promise<std::size_t> done) noexcept;
};

/**
 * @brief The shape of a staged device transfer's ring for the settings now: `slots` slots
 * (defaults::num_bounce_buffers()), each at most a task's share (defaults::task_size() / slots),
 * so that a ring spans one task as one task's buffer would.
 */
struct StagingRingShape {
  std::size_t slots{0};     ///< Number of slots.
  std::size_t max_slot{0};  ///< The largest a slot may be, in bytes.
  /// @brief Equal when both members are.
  bool operator==(StagingRingShape const&) const = default;
};

/// @brief The StagingRingShape of the settings now.
[[nodiscard]] StagingRingShape staging_ring_shape();

/**
 * @brief The POSIX and io_uring backends: the same algorithms over a different way of moving
 * bytes between a descriptor and host memory (transfer_all()).
 *
 * Host memory: with an O_DIRECT descriptor, the page-aligned middle of a range goes through it
 * (straight into the caller's buffer when that is page aligned too, else through a page-aligned
 * buffer of this thread) while the unaligned head and tail go through the page-cache one.
 * Device memory: staged through a ring of pinned slots (BounceBufferRing) and this thread's
 * stream, so that reading the next chunk overlaps the copy of the current one.
 */
class StagedBackend : public HostBackend, public DeviceBackend {
 public:
  [[nodiscard]] bool shares_chunks() const noexcept override { return true; }
  std::size_t read_host(LocalFile const& file,
                        void* buf,
                        std::size_t size,
                        std::size_t offset) override;
  std::size_t write_host(LocalFile const& file,
                         void const* buf,
                         std::size_t size,
                         std::size_t offset) override;
  std::size_t read_device(LocalFile const& file,
                          void* base,
                          std::size_t base_offset,
                          std::size_t file_offset,
                          ChunkCursor& cursor) override;
  std::size_t write_device(LocalFile const& file,
                           void const* base,
                           std::size_t base_offset,
                           std::size_t size,
                           std::size_t file_offset) override;
  /// @brief One slot of this thread's staging ring for overlapped reads, as the settings are now.
  [[nodiscard]] std::size_t overlapped_read_limit() const override;
  void read_device_overlapped(LocalFile const& file,
                              void* dst,
                              std::size_t size,
                              std::size_t file_offset,
                              std::promise<std::size_t> done) noexcept override;

 protected:
  /**
   * @brief Moves exactly `size` bytes at `offset` through `file.fd` (`buffered`) or through
   * `file.fd_direct` (then `buf`, `size` and `offset` are page aligned).
   * @throws kvikio::detail::EndOfFileError for a read past the end; kvikio::GenericSystemError.
   */
  virtual void transfer_all(bool read,
                            LocalFile const& file,
                            bool buffered,
                            std::byte* buf,
                            std::size_t size,
                            std::size_t offset) = 0;
  /// @brief transfer_all() by `pread`/`pwrite` calls, retried on EINTR and short transfers.
  static void transfer_by_syscalls(
    bool read, int fd, std::byte* buf, std::size_t size, std::size_t offset);
  /// @brief The descriptor transfer_all() moves bytes through.
  static int descriptor(LocalFile const& file, bool buffered) noexcept
  {
    return buffered ? file.fd : file.fd_direct;
  }
  /// @brief This thread's stream for the current context (device memory needs one).
  /// @throws std::invalid_argument if no context is current.
  static CUstream current_context_stream();

 private:
  friend class OverlappedReads;
  std::size_t host_io(
    bool read, LocalFile const& file, std::byte* buf, std::size_t size, std::size_t offset);
  std::size_t transfer_direct(
    bool read, LocalFile const& file, std::byte* buf, std::size_t length, std::size_t offset);
};

}  // namespace kvikio::detail
