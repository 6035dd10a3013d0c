/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The staging of stream-ordered I/O: a ring of pinned slots per stream, and the counters in
 * pinned memory through which the stream and the pool tasks tell each other how far they are.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include <cuda.h>

namespace kvikio::detail {

/// @brief Whether counter `value` has reached `target`, wrap-safe (as CU_STREAM_WAIT_VALUE_GEQ).
[[nodiscard]] constexpr bool reached(std::uint32_t value, std::uint32_t target) noexcept
{
  return static_cast<std::int32_t>(value - target) >= 0;
}

/**
 * @brief A 32-bit counter in pinned, device-mapped memory that only grows.
 *
 * Counters are never freed and never reset: a stream may still be polling one whose wait the
 * host already sees as satisfied, and as values only grow, a later owner (which starts from the
 * current value) keeps every earlier wait satisfied.
 */
class Counter {
 public:
  /// @brief A counter from the process-wide pool, usable in the context the caller has pushed.
  static Counter take();
  /// @brief Back to the pool, with its value.
  static void give_back(Counter counter) noexcept;

  [[nodiscard]] std::uint32_t load() const noexcept
  {
    return host_->load(std::memory_order_acquire);
  }
  /**
   * @brief Raises the value to `value` (from the host); a lower one is ignored, so that values
   * only ever grow, whatever order the uses of a slot end in (they can end out of order after a
   * failure: the stream's part of every use is then taken as done at once).
   */
  void store(std::uint32_t value) const noexcept
  {
    std::uint32_t current = host_->load(std::memory_order_relaxed);
    while (!reached(current, value) &&
           !host_->compare_exchange_weak(current, value, std::memory_order_release)) {}
  }
  /// @brief Waits on the host until the value has reached `target`: spins briefly, then sleeps.
  void wait_for(std::uint32_t target) const noexcept;
  [[nodiscard]] CUdeviceptr device() const noexcept { return device_; }
  [[nodiscard]] std::atomic<std::uint32_t>* host() const noexcept { return host_; }

 private:
  Counter(std::atomic<std::uint32_t>* host, CUdeviceptr device, unsigned long long owner)
    : host_{host}, device_{device}, owner_{owner}
  {
  }
  friend class CounterPool;
  std::atomic<std::uint32_t>* host_;
  CUdeviceptr device_;
  unsigned long long owner_;  // the context its page was pinned in (cuCtxGetId), 0: a primary one
};

/**
 * @brief One staging slot: pinned memory and the generation of its last planned use. Use `g`
 * of a slot is complete once both counters have reached `g`; use `g + 1` starts only then.
 */
struct StagingSlot {
  void* memory;
  Counter host_done;         ///< the host's part of a use is done: slot filled, or written out
  Counter stream_done;       ///< the stream's part is done: copied out of, or into, the slot
  std::uint32_t generation;  ///< of the last planned use
  bool last_use_was_write{false};
};

/**
 * @brief The staging of one stream: `num_slots` pinned slots used round robin by the
 * operations of that stream, in the order they were enqueued, and the count of those
 * operations that have ended (the stream's last wait of each operation is for that count).
 *
 * An operation is planned and enqueued under mutex(), so that a use of a slot only ever waits
 * for uses enqueued before it: whatever the number of pool threads, nothing waits in a cycle.
 */
class StagingRing {
 public:
  /**
   * @brief A ring of `num_slots` x `slot_size` in one pinned block: a kept starter block where
   * it fits one and one is kept (given back when the ring is freed), else one pinned now. A kept
   * block taken by a full ring is replaced on a thread of its own; a `starter`'s is not (the
   * starter gives it back once its stream's full ring took over).
   * @throws what the driver throws when pinning. The caller has pushed a context.
   */
  StagingRing(std::size_t num_slots, std::size_t slot_size, bool starter = false);
  ~StagingRing() noexcept;
  StagingRing(StagingRing const&)            = delete;
  StagingRing& operator=(StagingRing const&) = delete;

  [[nodiscard]] std::size_t num_slots() const noexcept { return slots_.size(); }
  [[nodiscard]] std::size_t slot_size() const noexcept { return slot_size_; }
  [[nodiscard]] std::mutex& mutex() noexcept { return mutex_; }

  /// @brief The next slot in round-robin order (under mutex()).
  StagingSlot& next_slot() noexcept;
  /// @brief Numbers a new operation of `groups` uses of slots (under mutex()).
  std::uint32_t begin_operation(std::size_t groups) noexcept
  {
    groups_in_flight_.fetch_add(groups, std::memory_order_relaxed);
    return ++operations_begun_;
  }
  /// @brief Operation `number`, of `groups` uses, has ended; the count of ended operations moves
  /// on in order.
  void end_operation(std::uint32_t number, std::size_t groups) noexcept;
  /// @brief Uses of slots by operations whose host part has not ended (a bound on a starter's
  /// share of its stream's pending operations, about three for each use; a read's last copies may
  /// still be pending after its host part ends).
  [[nodiscard]] std::size_t groups_in_flight() const noexcept
  {
    return groups_in_flight_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] Counter const& operations_ended() const noexcept { return operations_ended_; }

  /// @brief After an enqueue failed and the stream was synchronised: the stream's part of every
  /// planned use is taken as done (under mutex()), so that no task waits for it.
  void stream_caught_up() noexcept;

  /**
   * @brief Marks the ring retired and returns true if every planned use is complete and every
   * operation has ended (false while one is being planned). The registry drops a ring only so;
   * a caller that got the ring before finds it retired() once it holds mutex(), and asks again.
   */
  bool retire_if_idle() noexcept;
  /// @brief Under mutex(): whether the registry has dropped this ring.
  [[nodiscard]] bool retired() const noexcept { return retired_; }

 private:
  void release() noexcept;                          // frees the slots, gives the counters back
  [[nodiscard]] bool idle_locked() const noexcept;  // under mutex_

  mutable std::mutex mutex_;
  std::size_t slot_size_;
  void* block_{nullptr};  // every slot's memory, pinned as one
  std::size_t block_size_{0};
  bool from_stock_{false};  // a kept starter block, given back rather than freed
  std::vector<StagingSlot> slots_;
  std::atomic<std::size_t> groups_in_flight_{0};
  std::size_t cursor_{0};
  std::uint32_t operations_begun_;
  bool retired_{false};  // under mutex_

  mutable std::mutex ended_mutex_;
  Counter operations_ended_;
  std::uint32_t ended_in_order_;
  std::set<std::uint32_t> ended_early_;  // ended before an operation begun earlier
};

/// @brief The shape of a stream's ring, and of the starter it begins with.
struct RingShape {
  std::size_t num_slots;
  std::size_t slot_size;
  std::size_t starter_slots;  ///< a starter's slots (at most num_slots), sharing one huge page
};

/**
 * @brief The staging ring of `stream` in the current context (per calling thread for
 * CU_STREAM_PER_THREAD) for a call of `bytes`, created at first use. A first ring larger than a
 * huge page starts as a starter of one huge page in `shape.starter_slots` slots, pinned at once
 * (or kept from earlier), while the full one is pinned on a thread of its own; the starter takes
 * calls while it has at most `most_starter_uses` uses of slots in flight (a call that would pass
 * that waits for the full ring), and the full ring takes over at the first call after it is
 * pinned (a busy starter is kept until idle). A ring whose shape differs from the one asked for
 * is replaced once it is idle (until then it serves as it is). Rings of other streams that are
 * idle are freed, least recently used first, while more than a few exist.
 */
[[nodiscard]] std::shared_ptr<StagingRing> staging_ring_for(CUstream stream,
                                                            RingShape const& shape,
                                                            std::size_t bytes,
                                                            std::size_t most_starter_uses);

}  // namespace kvikio::detail
