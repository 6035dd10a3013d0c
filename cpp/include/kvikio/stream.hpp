/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file stream.hpp
 * @brief StreamFuture: the arguments and result of an asynchronous read or write on a stream.
 */

#include <sys/types.h>

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <memory>
#include <tuple>
#include <utility>

#include <cuda.h>
#include <kvikio/shim/cuda.hpp>

namespace kvikio {

/**
 * @brief Keeps the arguments of `read_async`/`write_async` alive (the stream reads them when
 * the operation runs) and yields the bytes moved once the stream reaches it.
 *
 * Move-only. The destructor synchronises the stream, so the arguments outlive the operation.
 */
class StreamFuture {
 public:
  StreamFuture() noexcept = default;
  /**
   * @brief Holds the arguments of one operation on `stream`, with no bytes moved yet.
   * @param devPtr_base device memory of the operation; not owned.
   * @param size bytes to move.
   * @param file_offset offset in the file, in bytes.
   * @param devPtr_offset offset from `devPtr_base`, in bytes.
   * @param stream the stream the operation is enqueued on; not owned.
   */
  StreamFuture(
    void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream);
  /**
   * @fn StreamFuture::StreamFuture(StreamFuture&&)
   * @brief Takes over the arguments of another future, which is left empty (its get_args() and
   * check_bytes_done() throw kvikio::CUfileException; its destructor does nothing).
   */
  StreamFuture(StreamFuture&&) noexcept = default;
  /**
   * @brief Takes over the arguments of another future, which is left empty. The operation this
   * future held is waited for first (its stream synchronised, as by the destructor): the stream
   * may still write into the arguments it is about to free.
   */
  StreamFuture& operator=(StreamFuture&& o) noexcept;
  StreamFuture(StreamFuture const&)            = delete;
  StreamFuture& operator=(StreamFuture const&) = delete;
  ~StreamFuture() noexcept;

  /// @brief (devPtr_base, &size, &file_offset, &devPtr_offset, &bytes_done, stream).
  [[nodiscard]] std::tuple<void*, std::size_t*, off_t*, off_t*, ssize_t*, CUstream> get_args()
    const;

  /**
   * @brief Synchronises the stream and returns the bytes moved.
   * Rethrows the error of the operation, as it was thrown by the task that failed.
   * @throws kvikio::CUfileException if the operation reported a failure (a negative byte count),
   * the stream cannot be synchronised, or the future is empty (default-constructed or moved
   * from).
   */
  std::size_t check_bytes_done();

 private:
  /// Synchronises the stream unless the future is empty or already synchronised; logs failures.
  void wait_for_stream() noexcept;
  friend class FileHandle;
  friend class RemoteHandle;
  struct Args {
    std::size_t size;
    off_t file_offset;
    off_t devPtr_offset;
    ssize_t bytes_done;
  };
  void* devPtr_base_{nullptr};
  CUstream stream_{nullptr};
  CUcontext context_{nullptr};  // the context the operation was enqueued in, if known
  std::unique_ptr<Args> args_;  // on the heap: its address is handed to the stream
  std::shared_ptr<std::exception_ptr> error_{std::make_shared<std::exception_ptr>()};
  bool synchronized_{false};
};

namespace detail {
/// @brief Whether `stream` is a default stream (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD): one
/// that names the current context's, so that waiting for work enqueued on it needs the context it
/// was enqueued in (a StreamFuture's destination's) current.
[[nodiscard]] bool is_default_stream(CUstream stream) noexcept;
}  // namespace detail

/**
 * @brief Registers a stream with cuFile for asynchronous I/O (no-op where cuFile is not used).
 * @throws kvikio::CUfileException if cuFile is used and refuses.
 */
void stream_register(CUstream stream, unsigned flags);

/// @brief Deregisters a stream registered with stream_register().
void stream_deregister(CUstream stream);

}  // namespace kvikio
