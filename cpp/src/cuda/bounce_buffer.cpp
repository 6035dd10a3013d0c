/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/bounce_buffer.hpp>

#include <optional>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

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
  KVIKIO_CUDA_DRIVER_TRY(api.MemHostAlloc(&buffer, size, CU_MEMHOSTALLOC_PORTABLE));
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
typename BounceBufferPool<Allocator>::Buffer BounceBufferPool<Allocator>::get()
{
  std::size_t const size = defaults::bounce_buffer_size();
  {
    std::lock_guard const lock{mutex_};
    if (size != buffer_size_) {  // the setting changed: the old buffers do not fit
      for (void* p : free_) {
        Allocator::deallocate(p, buffer_size_);
      }
      free_.clear();
      buffer_size_ = size;
    }
    if (!free_.empty()) {
      void* p = free_.back();
      free_.pop_back();
      return Buffer{this, p, size};
    }
  }
  return Buffer{this, Allocator::allocate(size), size};  // allocate outside the lock
}

template <typename Allocator>
void BounceBufferPool<Allocator>::put(void* ptr, std::size_t size) noexcept
{
  std::lock_guard const lock{mutex_};
  if (size != buffer_size_) {
    Allocator::deallocate(ptr, size);
    return;
  }
  try {
    free_.push_back(ptr);
  } catch (...) {
    Allocator::deallocate(ptr, size);
  }
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
  for (void* p : free_) {
    Allocator::deallocate(p, buffer_size_);
  }
  auto const n = free_.size();
  free_.clear();
  return n;
}

template <typename Allocator>
BounceBufferPool<Allocator>& BounceBufferPool<Allocator>::instance()
{
  static auto* const pool = new BounceBufferPool<Allocator>();
  return *pool;
}

template class BounceBufferPool<CudaPinnedAllocator>;

}  // namespace kvikio
