/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file bounce_buffer.hpp
 * @brief Pinned host buffers that stage device-memory I/O, pooled because pinning is slow
 * (slower than the copies it serves): a buffer is allocated once and reused, never per call.
 */

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>

#include <cuda.h>

#include <kvikio/defaults.hpp>
#include <kvikio/event.hpp>
#include <mutex>
#include <stack>
#include <utility>
#include <vector>

namespace kvikio {

/**
 * @brief Page-aligned pageable host memory (`std::aligned_alloc`), suitable for `O_DIRECT`
 * host I/O.
 */
class PageAlignedAllocator {
 public:
  /// @throws std::bad_alloc if the allocation fails.
  static void* allocate(std::size_t size);
  /// @brief Frees.
  static void deallocate(void* buffer, std::size_t size) noexcept;
};

/**
 * @brief Page-aligned pinned host memory (portable: usable from every CUDA context), suitable
 * for `O_DIRECT`: memory of this process, huge pages where the kernel gives them, on the NUMA
 * node of the current context's device where the host has several, registered with
 * `cuMemHostRegister`, and not inherited by a child of `fork()`.
 */
class CudaPinnedAllocator {
 public:
  /// @throws kvikio::CUfileException if there is no CUDA driver or the allocation fails.
  static void* allocate(std::size_t size);
  /// @brief Frees; a failure is logged, not thrown.
  static void deallocate(void* buffer, std::size_t size) noexcept;
};

/**
 * @brief Pinned memory that is also page-aligned: the same as CudaPinnedAllocator, whose memory
 * is page-aligned already.
 */
class CudaPageAlignedPinnedAllocator : public CudaPinnedAllocator {};

/**
 * @brief A LIFO pool of fixed-size buffers from `Allocator`, sized by
 * `defaults::bounce_buffer_size()` at the time of `get()`. When that setting changes, the
 * buffers of the old size are freed as they come back.
 *
 * A pool also lends smaller buffers, a half down to a 256th of its size (whole pages), each size
 * from a part pool of its own (part_pool_for()), so that staging a transfer much smaller than a
 * bounce buffer does not hold a whole one: the multi-poll reactor keeps many small transfers in
 * flight at once, each with its own staging.
 */
template <typename Allocator = CudaPinnedAllocator>
class BounceBufferPool {
 public:
  BounceBufferPool() = default;
  ~BounceBufferPool();
  BounceBufferPool(BounceBufferPool const&)            = delete;
  BounceBufferPool& operator=(BounceBufferPool const&) = delete;

  /// @brief A buffer on loan; returns to the pool when destroyed.
  class Buffer {
   public:
    /**
     * @brief Wraps `size` bytes at `ptr`, which are handed back to `pool` on destruction.
     *
     * Buffers are made by get(); `pool` is not owned and must outlive the buffer.
     */
    Buffer(BounceBufferPool* pool, void* ptr, std::size_t size) noexcept
      : pool_{pool}, ptr_{ptr}, size_{size}
    {
    }
    ~Buffer() noexcept
    {
      if (ptr_ != nullptr) { pool_->put(ptr_, size_); }
    }
    /// @brief Takes over the loan of `o`, which is left empty (its destructor returns nothing).
    Buffer(Buffer&& o) noexcept
      : pool_{o.pool_}, ptr_{std::exchange(o.ptr_, nullptr)}, size_{o.size_}
    {
    }
    /// @brief Returns this buffer's memory to its pool and takes over the loan of `o`.
    Buffer& operator=(Buffer&& o) noexcept
    {
      if (this != &o) {
        if (ptr_ != nullptr) { pool_->put(ptr_, size_); }
        pool_ = o.pool_;
        ptr_  = std::exchange(o.ptr_, nullptr);
        size_ = o.size_;
      }
      return *this;
    }
    Buffer(Buffer const&)            = delete;
    Buffer& operator=(Buffer const&) = delete;

    /// @brief The memory; still owned by this buffer (null once moved from).
    [[nodiscard]] void* get() const noexcept { return ptr_; }
    /// @brief The address `offset` bytes into the memory.
    [[nodiscard]] void* get(std::ptrdiff_t offset) const noexcept
    {
      return static_cast<std::byte*>(ptr_) + offset;
    }
    /// @brief The buffer's size in bytes.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

   private:
    BounceBufferPool* pool_;
    void* ptr_;
    std::size_t size_;
  };

  /// @brief A free buffer, or a new one from `Allocator::allocate` (whose exceptions propagate).
  /// Thread-safe.
  [[nodiscard]] Buffer get();

  /// @brief Buffers waiting in the pool (not those on loan).
  [[nodiscard]] std::size_t num_free_buffers() const;

  /// @brief The size of the buffers get() hands out now (`defaults::bounce_buffer_size()`).
  [[nodiscard]] std::size_t buffer_size() const;

  /**
   * @brief Takes back a buffer of `size` bytes from `Allocator`: kept if it has the current
   * size, freed otherwise. Buffers return here by themselves when destroyed.
   */
  void put(void* ptr, std::size_t size) noexcept;

  /// @brief Frees every buffer waiting in the pool and in its part pools; returns the bytes
  /// freed.
  std::size_t clear();

  /// @brief Bytes this pool and its part pools hold: buffers waiting and buffers on loan.
  [[nodiscard]] std::size_t pinned_bytes() const;

  /// @brief Bytes of the buffers on loan from this pool and its part pools (0 once every buffer
  /// has come back).
  [[nodiscard]] std::size_t bytes_on_loan() const;

  /**
   * @brief The pool whose buffers are the smallest that hold `bytes`: a part pool lending a
   * 2^n-th of buffer_size() (n from 1 to 8, whole pages), or this pool itself where no part is
   * big enough or smaller than it (and on a part pool, which has no parts). Part pools belong to
   * this pool (clear() and pinned_bytes() include them) and follow its size setting: when it
   * changes, the next call frees the parts' waiting buffers of the old sizes.
   */
  [[nodiscard]] BounceBufferPool& part_pool_for(std::size_t bytes);

  /**
   * @brief How many buffers this pool has freed so far. A buffer's address may be reused by a
   * later allocation once it is freed: whoever keeps state per address (io_uring's registered
   * buffers) drops it when this count changes.
   */
  [[nodiscard]] std::size_t num_freed() const;

  /// @brief The process-wide pool (never destroyed: its buffers may outlive the CUDA driver).
  static BounceBufferPool& instance();

 private:
  static constexpr unsigned max_part_shift = 8;
  explicit BounceBufferPool(unsigned shift) : shift_{shift} {}
  // `whole` >> `shift`, in whole pages (0 if less than a page).
  [[nodiscard]] static std::size_t part_size(std::size_t whole, unsigned shift);
  // defaults::bounce_buffer_size() >> shift_, in whole pages (at least one).
  [[nodiscard]] std::size_t size_now() const;
  // Frees the buffers waiting in this pool (mutex_ held, or the pool being destroyed); returns
  // their bytes.
  std::size_t free_waiting() noexcept;
  // Frees the waiting buffers if they are not of size_now().
  void free_stale() noexcept;
  unsigned shift_{0};
  std::size_t parts_sized_for_{0};  // the size setting the parts last followed
  // parts_[n - 1] lends buffers of a 2^n-th: made on first use, under mutex_, never replaced.
  std::vector<std::unique_ptr<BounceBufferPool>> parts_;
  mutable std::mutex mutex_;
  std::vector<void*> free_;
  std::size_t buffer_size_{0};
  std::size_t pinned_bytes_{0};
  // Written under mutex_, read without it (io_uring asks at every transfer): a buffer is lent
  // under mutex_ after the frees before it, so whoever holds it sees their count.
  std::atomic<std::size_t> num_freed_{0};
};

/**
 * @brief k staging slots carved out of one pool buffer (or k per buffer out of several), each
 * with an event from the EventPool, so that producing bytes into one slot overlaps the copies of
 * the others.
 *
 * The slots share one `KVIKIO_BOUNCE_BUFFER_SIZE` buffer (slot size = buffer size / k, rounded
 * down to whole pages), so a ring costs no more pinned memory than a single buffer.
 * Sources that keep more bytes in flight than one buffer holds (io_uring) take several.
 * A ring belongs to one task on one thread. Invariants: a slot is never refilled while a copy
 * from it is pending (next() waits on its event, which happens only on wrap-around), and a slot
 * filled by a device-to-host copy is never read before that copy completed (wait()).
 * The destructor waits for copies still in flight, so its memory is never reused under a DMA.
 *
 * Reading into device memory:
 * ```
 * for each chunk: void* p = ring.next(); fill p; ring.submit_h2d(dst, n, stream);
 * ring.finish();
 * ```
 * Writing from device memory: `auto slot = ring.submit_d2h(src, n, stream)` for up to
 * num_slots() chunks ahead, then `void* p = ring.wait(slot)` and consume, oldest first.
 */
template <typename Allocator = CudaPinnedAllocator>
class BounceBufferRing {
 public:
  /**
   * @brief `num_slots` slots in each of `num_buffers` buffers of `pool` (the process-wide pool
   * if null; a part pool of it for smaller buffers), each slot at most `max_slot_size` bytes
   * (0: a buffer's share; at least a page), so that the ring may use only the start of each
   * buffer.
   * @throws std::invalid_argument if either count is 0; what the pool and driver throw.
   */
  explicit BounceBufferRing(std::size_t num_slots,
                            std::size_t num_buffers           = 1,
                            std::size_t max_slot_size         = 0,
                            BounceBufferPool<Allocator>* pool = nullptr);
  ~BounceBufferRing() noexcept;
  BounceBufferRing(BounceBufferRing const&) = delete;

  /// @brief The slot_size() of a ring of `num_slots` slots per buffer of `buffer_size` bytes, at
  /// most `max_slot_size` each (0: no bound), without making one.
  [[nodiscard]] static std::size_t slot_size_for(std::size_t buffer_size,
                                                 std::size_t num_slots,
                                                 std::size_t max_slot_size) noexcept;
  BounceBufferRing& operator=(BounceBufferRing const&) = delete;

  /// @brief Slots of all buffers together: `num_slots * num_buffers` as constructed, fewer if a
  /// buffer holds fewer than `num_slots` pages.
  [[nodiscard]] std::size_t num_slots() const noexcept { return slots_.size(); }
  /// @brief Bytes per slot: whole pages (or the whole buffer if it is smaller than a page).
  [[nodiscard]] std::size_t slot_size() const noexcept { return slot_size_; }
  /// @brief The pool buffers the slots are carved from (for io_uring's buffer registration).
  [[nodiscard]] std::size_t num_buffers() const noexcept { return buffers_.size(); }
  /**
   * @brief The memory of pool buffer `index` (owned by the ring).
   * @throws std::out_of_range if `index` is not below num_buffers().
   */
  [[nodiscard]] void* buffer(std::size_t index) const { return buffers_.at(index).get(); }
  /// @brief Bytes of buffer(index) that its slots span.
  [[nodiscard]] std::size_t buffer_span() const noexcept { return slot_size_ * slots_per_buffer(); }

  /// @brief Moves to the next slot and returns its memory, waiting only if a copy from or into
  /// it is still in flight.
  void* next();

  /// @brief Copies the first `nbytes` of the current slot to device memory `dst` on `stream`.
  void submit_h2d(CUdeviceptr dst, std::size_t nbytes, CUstream stream);

  /// @brief As next(), but returns the slot's index: for sources with several slots being
  /// filled at once, which copy each with submit_h2d(index, ...) once it is full.
  std::size_t reserve();
  /// @brief The memory of slot `index`.
  [[nodiscard]] void* data(std::size_t index) const { return slots_.at(index).data; }
  /// @brief Copies the first `nbytes` of slot `index` to device memory `dst` on `stream`.
  void submit_h2d(std::size_t index, CUdeviceptr dst, std::size_t nbytes, CUstream stream);

  /// @brief One part of a slot for submit_h2d(index, pieces, stream): `size` bytes at `offset`
  /// into the slot, for device memory `dst`.
  struct Piece {
    CUdeviceptr dst;     ///< Where the bytes go.
    std::size_t offset;  ///< Where they are in the slot.
    std::size_t size;    ///< How many.
  };
  /**
   * @brief Copies `pieces` of slot `index` to device memory on `stream`, in one call into the
   * driver where it has `cuMemcpyBatchAsync` (CUDA 12.8 and later), tracked by the slot's event.
   * @throws std::invalid_argument if `pieces` is empty or one reaches past the slot's end.
   * @throws kvikio::CUfileException if the driver refuses a copy; copies already queued then
   * stay tracked by the slot's event (or are waited for), so the slot is not reused under them.
   * Copying the same pieces again after such an error is harmless (the same bytes land).
   */
  void submit_h2d(std::size_t index, std::span<Piece const> pieces, CUstream stream);

  /// @brief Moves to the next slot (as next()) and copies `nbytes` of device memory `src` into
  /// it on `stream`. Returns the slot's index, for wait().
  std::size_t submit_d2h(CUdeviceptr src, std::size_t nbytes, CUstream stream);

  /// @brief Waits for the copy into slot `index` and returns its memory.
  void* wait(std::size_t index);

  /// @brief Waits for every copy in flight.
  void finish();

  /// @brief Without waiting: whether the slot `ahead` positions after the current one has no
  /// copy in flight, so that reaching it with next() would not wait. For callers that must not
  /// block (the multi-poll reactor pauses a transfer instead).
  [[nodiscard]] bool is_free(std::size_t ahead = 1);
  /// @brief Without waiting: whether every copy has completed.
  [[nodiscard]] bool is_idle();

 private:
  struct Slot {
    std::byte* data;
    std::optional<Event> event;  // taken from the pool at the slot's first copy
    bool in_flight{false};
  };
  [[nodiscard]] std::size_t slots_per_buffer() const noexcept
  {
    return slots_.size() / buffers_.size();
  }
  std::vector<typename BounceBufferPool<Allocator>::Buffer> buffers_;
  std::size_t slot_size_;
  std::vector<Slot> slots_;
  std::size_t current_;
};

extern template class BounceBufferPool<PageAlignedAllocator>;
extern template class BounceBufferPool<CudaPinnedAllocator>;
extern template class BounceBufferPool<CudaPageAlignedPinnedAllocator>;
/// @brief A pool of page-aligned pageable buffers.
using PageAlignedBounceBufferPool = BounceBufferPool<PageAlignedAllocator>;
/// @brief A pool of pinned buffers (the one device I/O stages through).
using CudaPinnedBounceBufferPool = BounceBufferPool<CudaPinnedAllocator>;
/// @brief A pool of page-aligned pinned buffers.
using CudaPageAlignedPinnedBounceBufferPool = BounceBufferPool<CudaPageAlignedPinnedAllocator>;
extern template class BounceBufferRing<CudaPinnedAllocator>;

}  // namespace kvikio
