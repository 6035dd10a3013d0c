/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/staging/device_staging.hpp"

#include <deque>
#include <stdexcept>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "cuda/stream_cache.hpp"
#include "io/staging/host_split.hpp"

namespace kvikio::detail {
namespace {

// This thread's stream for the current context (device memory needs one).
CUstream current_context_stream()
{
  CUcontext ctx{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&ctx));
  KVIKIO_EXPECT(
    ctx != nullptr, "device-memory I/O needs a current CUDA context", std::invalid_argument);
  return stream_for_this_thread(ctx);
}

}  // namespace

// The ring spans one task (defaults::task_size()), as one task's buffer would: what all the
// threads stage at once then stays in the CPU caches, from which the copies to the device read.
StagingRingShape staging_ring_shape()
{
  std::size_t const k = defaults::num_bounce_buffers();
  return {k, defaults::task_size() / k};
}

std::size_t overlapped_read_limit()
{
  auto const shape = staging_ring_shape();
  return BounceBufferRing<>::slot_size_for(
    detail::staging_buffer_size(), shape.slots, shape.max_slot);
}

// Reads the cursor's chunks through this thread's ring of pinned slots: with more than one slot,
// reading the next chunk from the file overlaps the copy of the current one.
std::size_t read_to_device(ByteMover& mover,
                           LocalFile const& file,
                           void* base,
                           std::size_t base_offset,
                           std::size_t file_offset,
                           ChunkCursor& cursor,
                           std::optional<StagingRingShape> shape)
{
  KVIKIO_NVTX_FUNC_RANGE();
  if (cursor.size() == 0) { return 0; }
  CUstream const stream = current_context_stream();
  auto* const dev       = static_cast<std::byte*>(base) + base_offset;
  if (auto const moved =
        mover.read_to_device(file, convert_void2deviceptr(dev), file_offset, cursor, stream)) {
    return *moved;
  }
  auto const [k, max_slot] = shape.value_or(staging_ring_shape());
  auto& pool               = BounceBufferPool<>::instance();
  if (cursor.size() <= BounceBufferRing<>::slot_size_for(pool.buffer_size(), k, max_slot)) {
    // One chunk in all (the read a column reader issues most): one buffer, one copy, one wait
    // on the stream, none of the ring's events. The smallest of the pool's buffers that holds
    // it: a 64 KiB read holds 64 KiB of pinned memory, not a bounce buffer, on every thread that
    // reads (the buffer's own size decides: the setting may change meanwhile).
    auto const buffer = pool.part_pool_for(cursor.size()).get();
    if (cursor.size() <= buffer.size()) {
      auto const chunk = cursor.take(cursor.size());
      if (!chunk) { return 0; }
      auto* const slot = static_cast<std::byte*>(buffer.get());
      host_io(mover, true, file, {slot, chunk->length, file_offset + chunk->first});
      auto& api = cudaAPI::instance();
      KVIKIO_CUDA_DRIVER_TRY(api.MemcpyHtoDAsync(
        convert_void2deviceptr(dev + chunk->first), slot, chunk->length, stream));
      KVIKIO_CUDA_DRIVER_TRY(api.StreamSynchronize(stream));
      return chunk->length;
    }
  }
  BounceBufferRing<> ring{k, 1, max_slot};
  std::size_t moved = 0;
  while (auto const chunk = cursor.take(ring.slot_size())) {
    auto* slot = static_cast<std::byte*>(ring.next());
    host_io(mover, true, file, {slot, chunk->length, file_offset + chunk->first});
    ring.submit_h2d(convert_void2deviceptr(dev + chunk->first), chunk->length, stream);
    moved += chunk->length;
  }
  ring.finish();
  return moved;
}

std::size_t write_from_device(ByteMover& mover,
                              LocalFile const& file,
                              void const* base,
                              std::size_t base_offset,
                              std::size_t size,
                              std::size_t file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  if (size == 0) { return 0; }
  CUstream const stream = current_context_stream();
  auto* const dev       = static_cast<std::byte const*>(base) + base_offset;
  BounceBufferRing<> ring{defaults::num_bounce_buffers()};
  std::size_t const chunk = ring.slot_size();
  struct Pending {
    std::size_t slot, offset, n;
  };
  std::deque<Pending> pending;
  auto write_oldest = [&] {
    auto const p = pending.front();
    pending.pop_front();
    auto* const slot = static_cast<std::byte*>(ring.wait(p.slot));
    host_io(mover, false, file, {slot, p.n, file_offset + p.offset});
  };
  for (std::size_t done = 0; done < size;) {
    std::size_t const n = std::min(chunk, size - done);
    if (pending.size() == ring.num_slots()) { write_oldest(); }
    pending.push_back({ring.submit_d2h(convert_void2deviceptr(dev + done), n, stream), done, n});
    done += n;
  }
  while (!pending.empty()) {
    write_oldest();
  }
  return size;
}

}  // namespace kvikio::detail
