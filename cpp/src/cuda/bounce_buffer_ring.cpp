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
void* BounceBufferRing<Allocator>::next()
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
std::size_t BounceBufferRing<Allocator>::reserve()
{
  (void)next();
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
      // The driver issues single copies one at a time, at a fixed cost each whatever the
      // threads; a batch costs a fraction of that per copy.
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
  (void)next();
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
