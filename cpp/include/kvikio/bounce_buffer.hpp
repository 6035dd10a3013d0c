/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file bounce_buffer.hpp
 * @brief Pinned host buffers that stage device-memory I/O, pooled because pinning is slow
 * (about 1.7 GB/s): a buffer is allocated once and reused, never per call.
 */

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace kvikio {

/**
 * @brief Page-aligned pinned host memory from `cuMemHostAlloc` (portable: usable from every
 * CUDA context), suitable for `O_DIRECT`.
 */
class CudaPinnedAllocator {
 public:
  /// @throws kvikio::CUfileException if there is no CUDA driver or the allocation fails.
  static void* allocate(std::size_t size);
  /// @brief Frees; a failure is logged, not thrown.
  static void deallocate(void* buffer, std::size_t size) noexcept;
};

/**
 * @brief A LIFO pool of fixed-size buffers from `Allocator`, sized by
 * `defaults::bounce_buffer_size()` at the time of `get()`. When that setting changes, the
 * buffers of the old size are freed as they come back.
 */
template <typename Allocator = CudaPinnedAllocator>
class BounceBufferPool {
 public:
  /// @brief A buffer on loan; returns to the pool when destroyed.
  class Buffer {
   public:
    Buffer(BounceBufferPool* pool, void* ptr, std::size_t size) noexcept
      : pool_{pool}, ptr_{ptr}, size_{size}
    {
    }
    ~Buffer() noexcept
    {
      if (ptr_ != nullptr) { pool_->put(ptr_, size_); }
    }
    Buffer(Buffer&& o) noexcept
      : pool_{o.pool_}, ptr_{std::exchange(o.ptr_, nullptr)}, size_{o.size_}
    {
    }
    Buffer& operator=(Buffer&&)      = delete;
    Buffer(Buffer const&)            = delete;
    Buffer& operator=(Buffer const&) = delete;

    [[nodiscard]] void* get() const noexcept { return ptr_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

   private:
    BounceBufferPool* pool_;
    void* ptr_;
    std::size_t size_;
  };

  /// @brief A free buffer, or a new one. @throws what `Allocator::allocate` throws.
  [[nodiscard]] Buffer get();

  /// @brief Buffers waiting in the pool (not those on loan).
  [[nodiscard]] std::size_t num_free_buffers() const;

  /// @brief Frees every buffer waiting in the pool; returns how many.
  std::size_t clear();

  /// @brief The process-wide pool (never destroyed: its buffers may outlive the CUDA driver).
  static BounceBufferPool& instance();

 private:
  void put(void* ptr, std::size_t size) noexcept;

  mutable std::mutex mutex_;
  std::vector<void*> free_;
  std::size_t buffer_size_{0};
};

extern template class BounceBufferPool<CudaPinnedAllocator>;

}  // namespace kvikio
