/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The threads that do the host part of stream-ordered I/O. They are not the global thread
 * pool's: a stream waiting for a slot's bytes can hold up other streams that share its hardware
 * queue, and with them the copies that pool tasks of device pread wait for. If those tasks held
 * every pool thread while the read that the waiting stream needs sat behind them in the pool's
 * queue, nothing would move. So these workers run only pieces whose GPU part
 * is already done, and never wait for a stream: whatever a stream waits for, they get to.
 */
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

namespace kvikio::detail {

/**
 * @brief Work for the stream-ordered workers: pieces claimed in order, each only once what the
 * GPU must do before it is done, so that running a piece never waits for a stream.
 */
class ReadyPieces {
 public:
  virtual ~ReadyPieces() = default;
  /// @brief The next piece, claimed, if it is ready to run; std::nullopt if it is not (yet).
  [[nodiscard]] virtual std::optional<std::size_t> claim_ready() noexcept = 0;
  /// @brief Whether every piece has been claimed: the work leaves the workers' list.
  [[nodiscard]] virtual bool all_claimed() const noexcept = 0;
  /// @brief Runs a claimed piece (file or network I/O into or out of pinned memory).
  virtual void run(std::size_t piece) noexcept = 0;
};

/**
 * @brief Hands `work` to the stream-ordered workers, first making sure at least `threads` of
 * them exist or are starting (they are started on demand, one by the caller and each by the one
 * before, and live as long as the process). Workers take pieces
 * from the oldest work that has a ready one; while some work waits for the GPU, one worker
 * polls for it (yielding, then sleeping 20 µs at a time) and the others sleep.
 * @throws std::system_error if the first worker cannot be started (a later one that cannot be
 * leaves the work to those there are), std::bad_alloc.
 */
void run_when_ready(std::shared_ptr<ReadyPieces> work, std::size_t threads);

/// @brief How many stream-ordered workers exist.
[[nodiscard]] std::size_t stream_worker_count() noexcept;

/// @brief Whether the calling thread is a stream-ordered worker (which must not wait for the
/// device: the device may be waiting for it).
[[nodiscard]] bool on_stream_worker() noexcept;

}  // namespace kvikio::detail
