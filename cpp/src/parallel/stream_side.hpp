/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The caller's stream's side of stream-ordered I/O: waits for counters and signals of them,
 * enqueued as stream memory operations or, where the driver has none, as host functions.
 */
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>

#include <cuda.h>

#include "parallel/stream_ordered.hpp"
#include "parallel/stream_staging.hpp"
#include "parallel/stream_workers.hpp"

namespace kvikio::detail {

/**
 * @brief Enqueues a stream's waits and signals. Memory operations are held until flush() (before
 * each copy and at the end) and then enqueued as one batch: a slot's signal and the next slot's
 * wait cost one driver call.
 */
class StreamSide {
 public:
  StreamSide(CUstream stream, StreamWaitKind kind) : stream_{stream}, kind_{kind} {}

  /// @brief The stream goes on once `counter` has reached `value`.
  CUresult wait(Counter counter, std::uint32_t value)
  {
    return step(CU_STREAM_MEM_OP_WAIT_VALUE_32, counter, value);
  }

  /// @brief The stream sets `counter` to `value` when it gets there (after its earlier work).
  CUresult signal(Counter counter, std::uint32_t value)
  {
    return step(CU_STREAM_MEM_OP_WRITE_VALUE_32, counter, value);
  }

  /// @brief Enqueues the memory operations held: one batch, or one call where the driver has no
  /// batches or there is only one.
  CUresult flush();

 private:
  // A wait (CU_STREAM_MEM_OP_WAIT_VALUE_32) or a signal (CU_STREAM_MEM_OP_WRITE_VALUE_32): a
  // memory operation held for the next flush, or a host function on the stream.
  CUresult step(CUstreamBatchMemOpType op, Counter counter, std::uint32_t value);
  CUresult hold(CUstreamBatchMemOpParams const& p);

  CUstream stream_;
  StreamWaitKind kind_;
  std::array<CUstreamBatchMemOpParams, 4> ops_{};
  std::size_t held_{0};
};

/**
 * @brief One stream-ordered operation: its host part for the workers (ReadyPieces) and its
 * stream's part, enqueued by the caller.
 */
class StreamOperation : public ReadyPieces {
 public:
  explicit StreamOperation(std::function<void(ssize_t, std::exception_ptr)> on_done)
    : on_done_{std::move(on_done)}
  {
  }
  /// @brief Enqueues the stream's part on `stream`; the first failure is returned.
  [[nodiscard]] virtual CUresult enqueue(CUstream stream, StreamWaitKind kind) const = 0;
  /// @brief The workers never got the operation: what it planned counts as done.
  virtual void never_began() noexcept = 0;

  std::uint32_t number{};           ///< in the order of the stream's ring
  std::atomic<bool> failed{false};  ///< a piece or enqueuing failed: the rest skip their I/O

 protected:
  /**
   * @brief Moves a piece of `n` bytes at `file_offset` with `move()` (which returns the bytes it
   * moved; fewer is an error), unless the operation failed already; counts the bytes, or keeps
   * the operation's first failure and marks it failed.
   */
  template <typename Move>
  void move_piece(std::size_t n, std::size_t file_offset, Move&& move) noexcept
  {
    if (failed.load(std::memory_order_acquire)) { return; }
    try {
      std::size_t const moved = move();
      if (moved != n) { throw_short(moved, n, file_offset); }
      std::lock_guard const lock{mutex_};
      bytes_ += n;
    } catch (...) {
      std::lock_guard const lock{mutex_};
      if (!error_) { error_ = std::current_exception(); }
      failed.store(true, std::memory_order_release);
    }
  }

  /// @brief After the last piece: the result to the caller, then the operation counted as ended
  /// in `ring` (which releases the stream's last wait).
  void report(StagingRing& ring) noexcept;

 private:
  [[noreturn]] static void throw_short(std::size_t moved, std::size_t n, std::size_t offset);

  std::function<void(ssize_t, std::exception_ptr)> on_done_;
  std::mutex mutex_;
  std::size_t bytes_{0};
  std::exception_ptr error_;
};

}  // namespace kvikio::detail
