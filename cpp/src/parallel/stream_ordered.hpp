/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <cuda.h>

namespace kvikio::detail {

/// @brief How the caller's stream waits for the host side of a stream-ordered operation.
enum class StreamWaitKind {
  stream_memops,  ///< cuStreamWaitValue32/WriteValue32 on pinned flags (the GPU waits)
  host_function,  ///< host functions on the stream that wait for the flags (a driver thread)
};

/**
 * @brief Host I/O of one piece: reads `size` bytes at `file_offset` into `host` (to_device), or
 * writes them from there; returns the bytes moved (a short read means the end of the file).
 */
using StreamOrderedHostIo =
  std::function<std::size_t(void* host, std::size_t size, std::size_t file_offset)>;

/// @brief What a stream-ordered operation moves, and with how many workers (see below).
struct StreamOrderedRange {
  CUstream stream;
  bool to_device;  ///< a read (file to device) or a write
  CUdeviceptr device;
  std::size_t size;
  std::size_t file_offset;
  std::size_t piece_size;  ///< the host I/O's pieces (KVIKIO_TASK_SIZE)
  std::size_t threads;     ///< at least this many workers; sizes the staging
};

/**
 * @brief Moves `size` bytes of `range` between `device` and a file (or remote object) at
 * `file_offset`, in the order of `stream`, without blocking the caller.
 *
 * Staging is the stream's own ring of pinned slots (two per thread, at least
 * KVIKIO_NUM_BOUNCE_BUFFERS; each of a piece and at least 4 MiB; at most `threads` x
 * KVIKIO_BOUNCE_BUFFER_SIZE in all), kept between calls. Every device copy is enqueued on
 * `stream` itself, at the call, between waits for counters in pinned memory: for a read, a
 * slot's copy waits until the host has read its bytes into it; for a write, the host writes a
 * slot's bytes out once the stream has copied them in, and counts the slot free. The stream thus
 * orders the bytes after its earlier work and before its later work, and waits on the GPU for
 * nothing but the host (never for another stream: a stream blocked on a wait can hold up other
 * streams that share its hardware queue). The host part runs on the stream-ordered workers (at
 * least `threads` of them, not the global thread pool's), in pieces of `piece_size` claimed in
 * order, each only once the GPU has done what it needs, so that no worker ever waits for a
 * stream. A call costs about two driver operations per slot it fills and one more.
 *
 * The stream's last wait of the operation is for its end: by then `on_done(bytes, error)` has
 * run (on a worker): `error` is the first failure (`bytes` is then -1). A failing task
 * still releases every wait, so the stream never hangs; what it copies then is unspecified, but
 * only within the range.
 *
 * The caller has pushed the context of `stream`. @throws what the driver throws while
 * enqueuing (once the operation's tasks have ended, and the stream has run what was enqueued).
 */
void run_stream_ordered(StreamOrderedRange const& range,
                        StreamOrderedHostIo host_io,
                        std::function<void(ssize_t bytes, std::exception_ptr error)> on_done);

/**
 * @brief The `on_done` of an operation behind a StreamFuture or upstream's pointer API: writes
 * the bytes (or -1) to `*bytes_p`, and an error to `*error`, or, without `error` (the pointer
 * API has nowhere to put it), logs it as a failure of `what`.
 */
[[nodiscard]] std::function<void(ssize_t, std::exception_ptr)> report_stream_ordered(
  ssize_t* bytes_p, std::shared_ptr<std::exception_ptr> error, char const* what);

/// @brief Bytes of the staging rings of streams (a ring in a kept starter block counts its own
/// bytes; the block kept between rings is not counted).
[[nodiscard]] std::size_t staging_pinned_bytes();

/// @brief Frees the staging rings that are idle (nothing of theirs in flight); returns how many.
std::size_t free_idle_staging();

/**
 * @brief Pins what a process's first stream-ordered call stages through (the counters' first
 * page and a starter block of one huge page) ahead of that call, on a thread of its own, in the
 * context current on the calling thread; the call then pins nothing on its caller. A stream's
 * first call that takes the block has another pinned the same way, for the next stream. Done once
 * per process; does nothing where the process has not loaded the CUDA driver or this thread has no
 * context current (a later call may then do it). Called when a file is opened.
 */
void warm_up_stream_staging() noexcept;

/// @brief Starter blocks kept for the next stream's first call (0 or 1). For tests.
[[nodiscard]] std::size_t staging_blocks_kept();

/// @brief Waits until the staging pinned ahead (warm_up_stream_staging()) and every stream's
/// full ring that is being pinned are pinned (a full ring takes over at that stream's next call).
/// For tests.
void wait_for_staging_pinning();

/**
 * @brief For tests: force one kind of wait (std::nullopt: choose, the default: stream memory
 * operations, or host functions once the driver refused them).
 */
void force_stream_wait_kind(std::optional<StreamWaitKind> kind) noexcept;

/// @brief The kind the last stream-ordered operation of this process used.
[[nodiscard]] std::optional<StreamWaitKind> last_stream_wait_kind() noexcept;

}  // namespace kvikio::detail
