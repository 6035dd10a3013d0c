/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file file_handle.hpp
 * @brief FileHandle: a local file read and written to and from host or device memory.
 */

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <cuda.h>

#include <kvikio/batch_read.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/compat_mode.hpp>
#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/cufile/config.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/stream.hpp>
#include <kvikio/threadpool_wrapper.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

namespace detail {
struct LocalFile;
struct FileState;
}  // namespace detail

class FileHandle;

/// @brief One range of a local batch read: `size` bytes at `file_offset` of `handle`'s file into
/// `buf` (host or device memory).
struct FileReadRequest {
  FileHandle* handle{nullptr};  ///< not owned; must stay open until the request's future is done
  void* buf{nullptr};           ///< not owned; must outlive the request's future
  std::size_t size{0};          ///< bytes to read
  std::size_t file_offset{0};   ///< where the range starts in the file
};

/**
 * @brief Reads every request, of one or several files, into host or device memory (several
 * CUDA contexts allowed); returns one future per request, in `requests`' order, each holding
 * the request's size or its error. Nearby requests of the same file and the same destination
 * kind merge into one read as `options` allows (batch_read.hpp): a merged read is one task of
 * `options.thread_pool` through the file's host path (POSIX or io_uring), copied out to each
 * request; a request read by itself is its handle's pread(). Nothing starts before every
 * request is checked.
 * @throws std::invalid_argument naming the request's index for a null handle, a null buffer or
 * a range past the end of the file, or for a `task_size` of 0; std::runtime_error for a closed
 * handle; kvikio::CUfileException for a file not opened for reading.
 */
std::vector<std::future<std::size_t>> file_batch_read(std::span<FileReadRequest const> requests,
                                                      BatchReadOptions const& options = {});

/**
 * @brief An open file. Move-only; closes on destruction. Its I/O methods are safe to call from
 * many threads at once.
 *
 * Two descriptors are opened: a buffered one, and one with O_DIRECT when the file system allows
 * it (used for the page-aligned parts of transfers when the `auto_direct_io_*` settings say so).
 */
class FileHandle {
 public:
  /// @brief rw-r--r--
  static constexpr mode_t m644 = S_IRUSR | S_IWUSR | S_IRGRP | S_IROTH;

  /// @brief A closed handle.
  FileHandle() noexcept;

  /**
   * @brief Opens `file_path`.
   * @param file_path path of the file to open.
   * @param flags "r" (read), "r+" (read/write), "w" (write; create, truncate), "w+" (read/write;
   * create, truncate).
   * @param mode permission bits of a file that "w" or "w+" creates (before the umask).
   * @param compat_mode how I/O is done: cuFile, POSIX, or AUTO (see CompatModeManager).
   * @throws std::invalid_argument for any other flags.
   * @throws kvikio::GenericSystemError if the file cannot be opened (with errno's text).
   * @throws kvikio::CUfileException if `compat_mode` is OFF and cuFile cannot serve the file.
   */
  FileHandle(std::string const& file_path,
             std::string const& flags = "r",
             mode_t mode              = m644,
             CompatMode compat_mode   = defaults::compat_mode());

  /// @brief Takes over the open file of `o`, which is left closed.
  FileHandle(FileHandle&& o) noexcept;
  /// @brief close()s this handle, then takes over the open file of `o`, which is left closed.
  FileHandle& operator=(FileHandle&& o) noexcept;
  FileHandle(FileHandle const&)            = delete;
  FileHandle& operator=(FileHandle const&) = delete;
  ~FileHandle() noexcept;

  /// @brief Whether the handle is closed (default-constructed, moved from, or close()d).
  [[nodiscard]] bool closed() const noexcept;
  /**
   * @brief Closes the file once nothing uses it: refuses new operations (they throw "the file
   * handle is closed"), waits for every read and write still using the descriptors (on other
   * threads, behind futures not yet ready, stream-ordered ones the stream has not run yet), then
   * deregisters the cuFile handle, if any, and closes both descriptors. So a descriptor is never
   * closed, and its number reused for another file, under a running operation. Errors are
   * logged, not thrown. Closing a closed handle does nothing. The destructor does the same.
   */
  void close() noexcept;

  /// @brief The cuFile handle. @throws kvikio::CUfileException in compat mode.
  [[nodiscard]] CUfileHandle_t handle();

  /// @brief The descriptor (with O_DIRECT if `o_direct`), or -1 if that one is not open.
  [[nodiscard]] int fd(bool o_direct = false) const noexcept;
  /// @brief `fcntl(F_GETFL)` of that descriptor. @throws kvikio::GenericSystemError
  [[nodiscard]] int fd_open_flags(bool o_direct = false) const;

  /// @brief File size, cached; kept correct after writes through this handle; 0 if closed.
  [[nodiscard]] std::size_t nbytes() const;

  /// @brief Whether the O_DIRECT descriptor could be opened.
  [[nodiscard]] bool is_direct_io_supported() const noexcept;

  /**
   * @brief Reads `size` bytes at `file_offset` into device memory at `devPtr_base +
   * devPtr_offset`, synchronously, on the calling thread.
   * @param devPtr_base device memory; not owned.
   * @param size bytes to read.
   * @param file_offset offset in the file, in bytes.
   * @param devPtr_offset where the bytes land, as an offset from `devPtr_base` in bytes.
   * @param sync_default_stream for cuFile I/O: synchronise the legacy default stream first, so
   * that work queued on it has landed (cuFile is not ordered with it). Staged (POSIX, io_uring)
   * I/O is always ordered after work queued earlier on the legacy default stream, as the
   * non-async CUDA API is: its copies run on blocking streams.
   * @return bytes read.
   * @throws kvikio::CUfileException "POSIX error on pread: EOF" if the file ends first;
   * kvikio::CUfileException or
   * kvikio::GenericSystemError on I/O errors.
   * @throws std::invalid_argument if `devPtr_base` is null and `size` is not 0.
   * @throws std::overflow_error if `file_offset + size` does not fit a file offset.
   */
  std::size_t read(void* devPtr_base,
                   std::size_t size,
                   std::size_t file_offset,
                   std::size_t devPtr_offset,
                   bool sync_default_stream = true);

  /// @brief Writes from device memory; the counterpart of read().
  std::size_t write(void const* devPtr_base,
                    std::size_t size,
                    std::size_t file_offset,
                    std::size_t devPtr_offset,
                    bool sync_default_stream = true);

  /**
   * @brief Reads `size` bytes at `file_offset` into `buf` (host or device memory) in parallel
   * tasks of `task_size` on `thread_pool`.
   *
   * Reads smaller than `gds_threshold` (host or device memory) run on the calling thread: a
   * task hand-off costs more than they do. The future holds the bytes read, or the first error
   * of any task; it is ready only after every task finished.
   * @throws std::invalid_argument for a null buffer, a task size of 0 or a null pool;
   * std::overflow_error if `file_offset + size` overflows.
   */
  std::future<std::size_t> pread(void* buf,
                                 std::size_t size,
                                 std::size_t file_offset   = 0,
                                 std::size_t task_size     = defaults::task_size(),
                                 std::size_t gds_threshold = defaults::gds_threshold(),
                                 bool sync_default_stream  = true,
                                 ThreadPool* thread_pool   = &defaults::thread_pool());

  /// @brief Writes in parallel; the counterpart of pread().
  std::future<std::size_t> pwrite(void const* buf,
                                  std::size_t size,
                                  std::size_t file_offset   = 0,
                                  std::size_t task_size     = defaults::task_size(),
                                  std::size_t gds_threshold = defaults::gds_threshold(),
                                  bool sync_default_stream  = true,
                                  ThreadPool* thread_pool   = &defaults::thread_pool());

  /**
   * @brief Reads into device memory in the order of `stream`, without blocking the caller: the
   * bytes land after the work enqueued on `stream` before the call and before the work enqueued
   * after it. `*bytes_read_p` is written once the read has ended (-1 if it failed); the
   * pointers must stay valid until `stream` gets there.
   *
   * With cuFile's stream API (compat mode off), cuFileReadAsync, which reads the arguments when
   * the stream gets there. Otherwise the read runs on the thread pool through the bounce-buffer
   * ring, its copies waiting for the stream's earlier work, and the stream waits for it (stream
   * memory operations, or a host function where the driver lacks them); the arguments are read
   * at the call.
   */
  void read_async(void* devPtr_base,
                  std::size_t* size_p,
                  off_t* file_offset_p,
                  off_t* devPtr_offset_p,
                  ssize_t* bytes_read_p,
                  CUstream stream);

  /// @brief read_async() whose arguments live in the returned StreamFuture.
  StreamFuture read_async(void* devPtr_base,
                          std::size_t size,
                          off_t file_offset   = 0,
                          off_t devPtr_offset = 0,
                          CUstream stream     = nullptr);

  /// @brief Writes from device memory in stream order; the counterpart of read_async().
  void write_async(void* devPtr_base,
                   std::size_t* size_p,
                   off_t* file_offset_p,
                   off_t* devPtr_offset_p,
                   ssize_t* bytes_written_p,
                   CUstream stream);

  /// @brief write_async() whose arguments live in the returned StreamFuture.
  StreamFuture write_async(void* devPtr_base,
                           std::size_t size,
                           off_t file_offset   = 0,
                           off_t devPtr_offset = 0,
                           CUstream stream     = nullptr);

  /// @brief How this file's I/O is done (cuFile or POSIX).
  [[nodiscard]] CompatModeManager const& get_compat_mode_manager() const noexcept;

  /**
   * @brief file_batch_read() of `ranges` of this file: one future per range, in order.
   */
  std::vector<std::future<std::size_t>> batch_read(std::span<ReadRange const> ranges,
                                                   BatchReadOptions const& options = {});

 private:
  friend std::vector<std::future<std::size_t>> file_batch_read(
    std::span<FileReadRequest const> requests, BatchReadOptions const& options);
  enum class Direction { read, write };
  using Lease = std::shared_ptr<void>;  // a detail::InFlight lease on the descriptors
  // A lease for an operation named `what`. @throws std::runtime_error if the handle is closed.
  [[nodiscard]] Lease enter(char const* what) const;
  // How this handle's bytes move (compat mode, backend, O_DIRECT, pool), in words, and with
  // `with_reasons` why: the lines logged at info and debug level when it opens a file.
  [[nodiscard]] std::string how_bytes_move(bool with_reasons) const;
  // The descriptors (and cuFile handle) a backend uses for a transfer in direction `dir` whose
  // tasks run on a pool of `pool_threads` threads.
  [[nodiscard]] detail::LocalFile local_file(Direction dir, std::size_t pool_threads) const;
  // The body of read() and write(), on the calling thread.
  std::size_t sync_transfer(Direction dir,
                            void* devPtr_base,
                            std::size_t size,
                            std::size_t file_offset,
                            std::size_t devPtr_offset,
                            bool sync_default_stream);
  // The body of read_async() and write_async(); returns the context the operation was enqueued
  // in (null where cuFile enqueued it, or nothing was). `error`, if given, receives a failure of
  // the stream-ordered tasks (a StreamFuture's).
  CUcontext async_transfer(Direction dir,
                           void* devPtr_base,
                           std::size_t* size_p,
                           off_t* file_offset_p,
                           off_t* devPtr_offset_p,
                           ssize_t* bytes_p,
                           CUstream stream,
                           std::shared_ptr<std::exception_ptr> error = nullptr);
  // The body of the read_async() and write_async() that return a StreamFuture.
  StreamFuture async_transfer(Direction dir,
                              void* devPtr_base,
                              std::size_t size,
                              off_t file_offset,
                              off_t devPtr_offset,
                              CUstream stream);
  // The body of pread() and pwrite().
  // check_allowed(), a refusal recorded as a failed operation where `observed`.
  void check_allowed_observed(
    Direction dir, void const* buf, std::size_t offset, std::size_t size, bool observed) const;
  // `observed`: the call is one observation (observation.hpp); false for a part of another call.
  std::future<std::size_t> parallel_transfer(Direction dir,
                                             void* buf,
                                             std::size_t size,
                                             std::size_t file_offset,
                                             std::size_t task_size,
                                             std::size_t gds_threshold,
                                             bool sync_default_stream,
                                             ThreadPool* thread_pool,
                                             bool observed = true);
  void check_open() const;
  void check_range(void const* buf,
                   std::size_t size,
                   std::size_t file_offset,
                   char const* what) const;
  // Throws CUfileException "POSIX error: Operation not permitted" if the flags forbid `dir`.
  void check_allowed(Direction dir) const;
  [[nodiscard]] ThreadPool* pool_for(ThreadPool* requested) const;

  std::string path_;
  std::shared_ptr<std::string const> source_;  // path_, as observations name the file
  std::string flags_;
  // Read by closed() and fd() while close() may run on another thread: atomic.
  std::atomic<int> fd_{-1};
  std::atomic<int> fd_direct_{-1};
  int access_mode_{O_RDONLY};  // O_RDONLY, O_WRONLY or O_RDWR
  dev_t device_{};
  // What running operations share with the handle (the leases on the descriptors, the size);
  // on the heap, so that it stays put when the handle is moved. Null only if the handle never
  // opened a file or was moved from; close() keeps it (another thread may be calling in).
  std::unique_ptr<detail::FileState> state_;
  CompatModeManager compat_;
};

}  // namespace kvikio
