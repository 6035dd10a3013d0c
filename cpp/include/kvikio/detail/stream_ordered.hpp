/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <vector>

#include <cuda.h>

#include <kvikio/threadpool_wrapper.hpp>

namespace kvikio::detail {

/// @brief How the caller's stream waits for the host side of a stream-ordered operation.
enum class StreamWaitKind {
  stream_memops,  ///< cuStreamWaitValue32/WriteValue32 on pinned flags (the GPU waits)
  host_function,  ///< host functions on the stream that wait for the flags (a driver thread)
};

/// @brief A contiguous piece of a stream-ordered operation, handled by one pool task.
struct StreamOrderedRange {
  CUdeviceptr device;       ///< device memory of the piece
  std::size_t size;         ///< its bytes
  std::size_t file_offset;  ///< where it is in the file
};

/**
 * @brief Host I/O of one chunk: reads `size` bytes at `file_offset` into `host` (to_device), or
 * writes them from there; returns the bytes moved (a short read means the end of the file).
 */
using StreamOrderedHostIo =
  std::function<std::size_t(void* host, std::size_t size, std::size_t file_offset)>;

/**
 * @brief Moves `ranges` between a file and device memory in the order of `stream`, without
 * blocking the caller.
 *
 * Every device copy is enqueued on `stream` itself, at the call, between waits for flags in
 * pinned memory: for a read, a chunk's copy waits until a pool task has read the chunk into a
 * slot of its bounce buffer; for a write, the task waits (on the host) until the stream has
 * copied the chunk into a slot, writes it, and tells the stream the slot is free. The stream
 * thus orders the bytes after its earlier work and before its later work, and waits on the GPU
 * for nothing but the host (never for another stream: a stream blocked on a wait can hold up
 * other streams that share its hardware queue). Its last wait is for the whole operation; then
 * `on_done(bytes, error)` has run (on a pool thread): `error` is the first failure (`bytes` is
 * then -1). A failing task still releases every wait, so the stream never hangs; what it copies
 * then is unspecified, but only within the ranges.
 *
 * The caller has pushed the context of `stream`. The bounce buffers are taken from the pool at
 * the call. @throws what the driver throws while enqueuing; then nothing was submitted.
 */
void run_stream_ordered(CUstream stream,
                        bool to_device,
                        std::vector<StreamOrderedRange> const& ranges,
                        StreamOrderedHostIo host_io,
                        ThreadPool& pool,
                        std::function<void(ssize_t bytes, std::exception_ptr error)> on_done);

/**
 * @brief Returns to their pools the staging buffers and flags of operations whose streams have
 * gone past them (also done whenever an operation starts). StreamFuture calls it after
 * synchronising.
 */
void reclaim_stream_ordered();

/**
 * @brief For tests: force one kind of wait (std::nullopt: choose, the default: stream memory
 * operations, or host functions once the driver refused them).
 */
void force_stream_wait_kind(std::optional<StreamWaitKind> kind) noexcept;

/// @brief The kind the last stream-ordered operation of this process used.
[[nodiscard]] std::optional<StreamWaitKind> last_stream_wait_kind() noexcept;

}  // namespace kvikio::detail
