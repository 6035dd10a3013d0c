/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/bounce_buffer.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include <optional>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

void* PageAlignedAllocator::allocate(std::size_t size)
{
  std::size_t const page = get_page_size();
  void* buffer           = std::aligned_alloc(page, (size + page - 1) / page * page);
  if (buffer == nullptr) { throw std::bad_alloc{}; }
  return buffer;
}

void PageAlignedAllocator::deallocate(void* buffer, std::size_t /*size*/) noexcept
{
  std::free(buffer);  // NOLINT(cppcoreguidelines-no-malloc): pairs with std::aligned_alloc
}

void* CudaPinnedAllocator::allocate(std::size_t size)
{
  auto& api = cudaAPI::instance();
  CUcontext current{};
  KVIKIO_CUDA_DRIVER_TRY(api.CtxGetCurrent(&current));
  // Pinning needs a context; with none current, device 0's primary one serves (portable memory
  // is usable from every context anyway).
  std::optional<PushAndPopContext> guard;
  if (current == nullptr) { guard.emplace(get_primary_cuda_context(0)); }
  void* buffer{};
  CUresult const r = api.MemHostAlloc(&buffer, size, CU_MEMHOSTALLOC_PORTABLE);
  if (r != CUDA_SUCCESS) {
    // Upstream's wording first, then what was asked for and which settings decide it.
    throw CUfileException(detail::cuda_error_message(r, __FILE__, __LINE__) + " [KvikIO: pinning " +
                          std::to_string(size) +
                          " bytes of host memory for staging failed; each pool thread pins "
                          "up to KVIKIO_BOUNCE_BUFFER_SIZE (now " +
                          std::to_string(defaults::bounce_buffer_size()) +
                          " bytes): a smaller size or fewer threads (KVIKIO_NTHREADS) pin less]");
  }
  return buffer;
}

void CudaPinnedAllocator::deallocate(void* buffer, std::size_t size) noexcept
{
  try {
    auto& api = cudaAPI::instance();
    CUcontext current{};
    KVIKIO_CUDA_DRIVER_TRY(api.CtxGetCurrent(&current));
    std::optional<PushAndPopContext> guard;
    if (current == nullptr) { guard.emplace(get_primary_cuda_context(0)); }
    KVIKIO_CUDA_DRIVER_TRY(api.MemFreeHost(buffer));
  } catch (std::exception const& e) {
    KVIKIO_LOG_ERROR("freeing a pinned bounce buffer of ", size, " bytes failed: ", e.what());
  }
}

template <typename Allocator>
BounceBufferPool<Allocator>::~BounceBufferPool()
{
  (void)free_waiting();
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::part_size(std::size_t whole, unsigned shift)
{
  std::size_t const page = get_page_size();
  return (whole >> shift) / page * page;
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::size_now() const
{
  std::size_t const whole = detail::staging_buffer_size();
  if (shift_ == 0) { return whole; }
  return std::max(part_size(whole, shift_), get_page_size());
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::free_waiting() noexcept
{
  for (void* p : free_) {
    Allocator::deallocate(p, buffer_size_);
  }
  std::size_t const bytes = free_.size() * buffer_size_;
  pinned_bytes_ -= bytes;
  num_freed_.fetch_add(free_.size(), std::memory_order_release);
  free_.clear();
  return bytes;
}

template <typename Allocator>
typename BounceBufferPool<Allocator>::Buffer BounceBufferPool<Allocator>::get()
{
  std::size_t const size = size_now();
  {
    std::lock_guard const lock{mutex_};
    if (size != buffer_size_) {  // the setting changed: the old buffers do not fit
      (void)free_waiting();
      buffer_size_ = size;
    }
    if (!free_.empty()) {
      void* p = free_.back();
      free_.pop_back();
      return Buffer{this, p, size};
    }
  }
  void* fresh = Allocator::allocate(size);  // outside the lock: pinning is slow
  std::lock_guard const lock{mutex_};
  pinned_bytes_ += size;
  return Buffer{this, fresh, size};
}

template <typename Allocator>
void BounceBufferPool<Allocator>::put(void* ptr, std::size_t size) noexcept
{
  // A buffer of a size the setting no longer asks for is freed now, not kept (as upstream's).
  std::size_t wanted = size;
  try {
    wanted = size_now();
  } catch (...) {  // settings unreadable: keep the buffer only if it fits the pool
  }
  std::lock_guard const lock{mutex_};
  if (size == buffer_size_ && size == wanted) {
    try {
      free_.push_back(ptr);
      return;
    } catch (...) {  // could not keep it: free it below
    }
  }
  Allocator::deallocate(ptr, size);
  pinned_bytes_ -= size;
  num_freed_.fetch_add(1, std::memory_order_release);
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::num_free_buffers() const
{
  std::lock_guard const lock{mutex_};
  return free_.size();
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::clear()
{
  std::lock_guard const lock{mutex_};
  std::size_t freed = free_waiting();
  for (auto const& part : parts_) {
    if (part) { freed += part->clear(); }
  }
  return freed;
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::buffer_size() const
{
  return size_now();
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::bytes_on_loan() const
{
  std::lock_guard const lock{mutex_};
  std::size_t bytes = pinned_bytes_ - free_.size() * buffer_size_;
  for (auto const& part : parts_) {
    if (part) { bytes += part->bytes_on_loan(); }
  }
  return bytes;
}

template <typename Allocator>
BounceBufferPool<Allocator>& BounceBufferPool<Allocator>::part_pool_for(std::size_t bytes)
{
  // The smallest part that holds `bytes` (whole pages: a part of a small setting may be none).
  // Parts are the process pool's: a part pool has none of its own.
  if (shift_ != 0) { return *this; }
  std::size_t const whole = size_now();
  unsigned shift          = 0;
  for (unsigned s = 1; s <= max_part_shift; ++s) {
    std::size_t const part = part_size(whole, s);
    if (part < bytes || part == 0) { break; }
    shift = s;
  }
  if (shift == 0) { return *this; }
  std::lock_guard const lock{mutex_};
  if (parts_.empty()) { parts_.resize(max_part_shift); }
  if (whole != parts_sized_for_) {
    // The setting changed: parts no longer asked for would keep their old buffers pinned.
    for (auto const& part : parts_) {
      if (part) { part->free_stale(); }
    }
    parts_sized_for_ = whole;
  }
  auto& part = parts_[shift - 1];
  if (!part) { part.reset(new BounceBufferPool{shift}); }
  return *part;
}

template <typename Allocator>
void BounceBufferPool<Allocator>::free_stale() noexcept
{
  std::size_t now = 0;
  try {
    now = size_now();
  } catch (...) {  // settings unreadable: nothing is known to be stale
    return;
  }
  std::lock_guard const lock{mutex_};
  if (buffer_size_ != now) { (void)free_waiting(); }
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::num_freed() const
{
  return num_freed_.load(std::memory_order_acquire);
}

template <typename Allocator>
std::size_t BounceBufferPool<Allocator>::pinned_bytes() const
{
  std::lock_guard const lock{mutex_};
  std::size_t bytes = pinned_bytes_;
  for (auto const& part : parts_) {
    if (part) { bytes += part->pinned_bytes(); }
  }
  return bytes;
}

template <typename Allocator>
BounceBufferPool<Allocator>& BounceBufferPool<Allocator>::instance()
{
  static detail::BuiltOnce<BounceBufferPool<Allocator>> pool;
  return pool.get([] { return new BounceBufferPool<Allocator>(); });
}

template class BounceBufferPool<PageAlignedAllocator>;
template class BounceBufferPool<CudaPinnedAllocator>;
template class BounceBufferPool<CudaPageAlignedPinnedAllocator>;

// ---------------------------------------------------------------------------------------------
// BounceBufferRing

template <typename Allocator>
BounceBufferRing<Allocator>::BounceBufferRing(std::size_t num_slots,
                                              std::size_t num_buffers,
                                              std::size_t max_slot_size,
                                              BounceBufferPool<Allocator>* pool)
  : slot_size_{0}, current_{0}
{
  KVIKIO_EXPECT(
    num_slots > 0, "BounceBufferRing: the number of slots must be positive", std::invalid_argument);
  KVIKIO_EXPECT(num_buffers > 0,
                "BounceBufferRing: the number of buffers must be positive",
                std::invalid_argument);
  if (pool == nullptr) { pool = &BounceBufferPool<Allocator>::instance(); }
  buffers_.reserve(num_buffers);
  for (std::size_t b = 0; b < num_buffers; ++b) {
    buffers_.push_back(pool->get());
  }
  std::size_t size = buffers_.front().size();  // the setting may change between two get()s
  for (auto const& buffer : buffers_) {
    size = std::min(size, buffer.size());
  }
  slot_size_              = slot_size_for(size, num_slots, max_slot_size);
  std::size_t const slots = std::min(num_slots, std::max<std::size_t>(size / get_page_size(), 1));
  slots_.reserve(slots * num_buffers);
  for (auto const& buffer : buffers_) {
    auto* base = static_cast<std::byte*>(buffer.get());
    for (std::size_t i = 0; i < slots; ++i) {
      slots_.push_back(Slot{base + i * slot_size_, std::nullopt, false});
    }
  }
  current_ = slots_.size() - 1;  // the first next() lands on slot 0
}

template <typename Allocator>
std::size_t BounceBufferRing<Allocator>::slot_size_for(std::size_t buffer_size,
                                                       std::size_t num_slots,
                                                       std::size_t max_slot_size) noexcept
{
  std::size_t const page = get_page_size();
  // Whole pages per slot keep every slot usable for O_DIRECT; at least one page each.
  std::size_t const slots =
    std::max<std::size_t>(std::min(num_slots, std::max<std::size_t>(buffer_size / page, 1)), 1);
  std::size_t slot = std::max(buffer_size / slots / page * page, std::min(page, buffer_size));
  if (max_slot_size > 0) {
    slot = std::min(slot, std::max(max_slot_size / page * page, std::min(page, buffer_size)));
  }
  return slot;
}

template <typename Allocator>
BounceBufferRing<Allocator>::~BounceBufferRing() noexcept
{
  // The buffer goes back to the pool: no copy may still be reading or writing it.
  for (auto& slot : slots_) {
    if (slot.in_flight) {
      try {
        slot.event->synchronize();
      } catch (std::exception const& e) {
        KVIKIO_LOG_ERROR("BounceBufferRing: waiting for a copy in flight failed: ", e.what());
      }
    }
  }
}

template <typename Allocator>
void* BounceBufferRing<Allocator>::advance()
{
  current_   = (current_ + 1) % slots_.size();
  auto& slot = slots_[current_];
  if (slot.in_flight) {  // wrap-around onto a slot whose copy may not be done
    slot.event->synchronize();
    slot.in_flight = false;
  }
  return slot.data;
}

template <typename Allocator>
void* BounceBufferRing<Allocator>::next()
{
  return advance();
}

template <typename Allocator>
std::size_t BounceBufferRing<Allocator>::reserve()
{
  advance();
  return current_;
}

template <typename Allocator>
void BounceBufferRing<Allocator>::submit_h2d(CUdeviceptr dst, std::size_t nbytes, CUstream stream)
{
  submit_h2d(current_, dst, nbytes, stream);
}

template <typename Allocator>
void BounceBufferRing<Allocator>::submit_h2d(std::size_t index,
                                             CUdeviceptr dst,
                                             std::size_t nbytes,
                                             CUstream stream)
{
  Piece const whole{dst, 0, nbytes};
  submit_h2d(index, std::span<Piece const>{&whole, 1}, stream);
}

template <typename Allocator>
void BounceBufferRing<Allocator>::submit_h2d(std::size_t index,
                                             std::span<Piece const> pieces,
                                             CUstream stream)
{
  auto& slot = slots_.at(index);
  KVIKIO_EXPECT(
    !pieces.empty(), "BounceBufferRing::submit_h2d: no pieces to copy", std::invalid_argument);
  for (auto const& piece : pieces) {
    KVIKIO_EXPECT(piece.offset <= slot_size_ && piece.size <= slot_size_ - piece.offset,
                  "BounceBufferRing::submit_h2d: a piece of " + std::to_string(piece.size) +
                    " bytes at offset " + std::to_string(piece.offset) +
                    " reaches past the slot's end (" + std::to_string(slot_size_) + " bytes)",
                  std::invalid_argument);
  }
  if (!slot.event) { slot.event.emplace(EventPool::instance().get()); }
  auto& api   = cudaAPI::instance();
  bool queued = false;  // whether a copy from the slot may be on its way
  try {
    if (pieces.size() > 1 && cudaAPI::can_batch_copies(stream)) {
      // The driver issues copies one at a time at about 4 us each whatever the threads (255k
      // of 64 KiB a second on an H100); a batch of 8 went 2.4x as fast (docs/benchmarks.md).
      std::vector<CUdeviceptr> dsts, srcs;
      std::vector<std::size_t> sizes;
      dsts.reserve(pieces.size());
      srcs.reserve(pieces.size());
      sizes.reserve(pieces.size());
      for (auto const& piece : pieces) {
        dsts.push_back(piece.dst);
        srcs.push_back(convert_void2deviceptr(slot.data + piece.offset));
        sizes.push_back(piece.size);
      }
      KVIKIO_CUDA_DRIVER_TRY(
        cudaAPI::memcpy_batch_async(dsts.data(), srcs.data(), sizes.data(), pieces.size(), stream));
      queued = true;
    } else {
      for (auto const& piece : pieces) {
        KVIKIO_CUDA_DRIVER_TRY(
          api.MemcpyHtoDAsync(piece.dst, slot.data + piece.offset, piece.size, stream));
        queued = true;
      }
    }
    slot.event->record(stream);
    slot.in_flight = true;
  } catch (...) {
    if (queued && !slot.in_flight) {
      // Copies already queued still read the slot: it is in flight until they ran, or, if even
      // that cannot be recorded, the stream is waited for before the slot is touched again.
      try {
        slot.event->record(stream);
        slot.in_flight = true;
      } catch (...) {
        (void)api.StreamSynchronize(stream);
      }
    }
    throw;
  }
}

template <typename Allocator>
std::size_t BounceBufferRing<Allocator>::submit_d2h(CUdeviceptr src,
                                                    std::size_t nbytes,
                                                    CUstream stream)
{
  KVIKIO_EXPECT(nbytes <= slot_size_,
                "BounceBufferRing::submit_d2h: more bytes than a slot holds",
                std::invalid_argument);
  advance();
  auto& slot = slots_[current_];
  if (!slot.event) { slot.event.emplace(EventPool::instance().get()); }
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemcpyDtoHAsync(slot.data, src, nbytes, stream));
  slot.event->record(stream);
  slot.in_flight = true;
  return current_;
}

template <typename Allocator>
void* BounceBufferRing<Allocator>::wait(std::size_t index)
{
  auto& slot = slots_.at(index);
  if (slot.in_flight) {
    slot.event->synchronize();
    slot.in_flight = false;
  }
  return slot.data;
}

template <typename Allocator>
void BounceBufferRing<Allocator>::finish()
{
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    (void)wait(i);
  }
}

template <typename Allocator>
bool BounceBufferRing<Allocator>::is_free(std::size_t ahead)
{
  auto& slot = slots_[(current_ + ahead) % slots_.size()];
  if (slot.in_flight && slot.event->is_done()) { slot.in_flight = false; }
  return !slot.in_flight;
}

template <typename Allocator>
bool BounceBufferRing<Allocator>::is_idle()
{
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!is_free(i)) { return false; }
  }
  return true;
}

template class BounceBufferRing<CudaPinnedAllocator>;

}  // namespace kvikio
