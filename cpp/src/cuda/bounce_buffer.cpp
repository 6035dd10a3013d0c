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

#include "cuda/pinned_memory.hpp"

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
  // is usable from every context anyway). The memory goes to the node of the context's device.
  std::optional<PushAndPopContext> guard;
  if (current == nullptr) { guard.emplace(get_primary_cuda_context(0)); }
  CUdevice device{};
  KVIKIO_CUDA_DRIVER_TRY(api.CtxGetDevice(&device));
  void* buffer{};
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;  // where the memory cannot even be mapped
  try {
    r = detail::pin_host_memory(size, detail::staging_numa_node_of(device), &buffer);
  } catch (std::bad_alloc const&) {
  }
  if (r != CUDA_SUCCESS) {
    // The CUDA error's fixed wording first, then what was asked for and which settings decide it.
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
    KVIKIO_CUDA_DRIVER_TRY(detail::unpin_host_memory(buffer, size));
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
  // A buffer of a size the setting no longer asks for is freed now, not kept.
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

}  // namespace kvikio
