/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "parallel/stream_staging.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <new>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "parallel/stream_ordered.hpp"
#include "parallel/stream_workers.hpp"

namespace kvikio::detail {

/// Pages of counters, pinned and device-mapped, never freed (streams may still poll them).
class CounterPool {
 public:
  static CounterPool& instance()
  {
    static detail::BuiltOnce<CounterPool> pool;
    return pool.get([] { return new CounterPool(); });
  }

  Counter take()
  {
    std::lock_guard const lock{mutex_};
    if (free_.empty()) { grow(); }
    Counter c = free_.back();
    free_.pop_back();
    return c;
  }

  void give_back(Counter c) noexcept
  {
    std::lock_guard const lock{mutex_};
    try {
      free_.push_back(c);
    } catch (...) {  // out of memory: the counter is lost, nothing else
    }
  }

 private:
  void grow()
  {
    constexpr std::size_t page = 4096;
    void* mem                  = nullptr;
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemHostAlloc(
      &mem, page, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr dev{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemHostGetDevicePointer(&dev, mem, 0));
    auto* words = static_cast<std::atomic<std::uint32_t>*>(mem);
    for (std::size_t i = 0; i < page / sizeof(std::uint32_t); ++i) {
      new (words + i) std::atomic<std::uint32_t>{0};
      free_.push_back(Counter{words + i, dev + i * sizeof(std::uint32_t)});
    }
  }
  std::mutex mutex_;
  std::vector<Counter> free_;
};

Counter Counter::take() { return CounterPool::instance().take(); }

namespace {

// Freeing pinned memory waits for the device's work, which may wait for the host part of
// stream-ordered I/O: a stream-ordered worker that freed it (the last holder of a ring the
// registry dropped) could wait for itself. What a worker lets go of is freed by the next thread
// that asks for a ring or frees idle ones.
std::mutex orphans_mutex;
std::vector<std::pair<void*, std::size_t>> orphans;
std::atomic<bool> orphans_waiting{false};  // every call asks: most find none without the lock

void free_pinned_off_workers(void* memory, std::size_t size) noexcept
{
  if (on_stream_worker()) {
    std::lock_guard const lock{orphans_mutex};
    try {
      orphans.emplace_back(memory, size);
      orphans_waiting.store(true, std::memory_order_release);
    } catch (...) {  // out of memory: leaked rather than freed here
    }
    return;
  }
  CudaPinnedAllocator::deallocate(memory, size);
}

void free_orphans() noexcept
{
  if (!orphans_waiting.exchange(false, std::memory_order_acquire)) { return; }
  std::vector<std::pair<void*, std::size_t>> mine;
  {
    std::lock_guard const lock{orphans_mutex};
    mine.swap(orphans);
  }
  for (auto const& [memory, size] : mine) {
    CudaPinnedAllocator::deallocate(memory, size);
  }
}

}  // namespace

void Counter::give_back(Counter counter) noexcept { CounterPool::instance().give_back(counter); }

void Counter::wait_for(std::uint32_t target) const noexcept
{
  for (int i = 0; !reached(load(), target); ++i) {
    if (i < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

StagingRing::StagingRing(std::size_t num_slots, std::size_t slot_size)
  : slot_size_{slot_size},
    operations_ended_{Counter::take()},
    ended_in_order_{operations_ended_.load()}
{
  KVIKIO_NVTX_FUNC_RANGE();  // pins the stream's staging: on the caller, at a stream's first call
  operations_begun_ = ended_in_order_;
  slots_.reserve(num_slots);
  try {
    for (std::size_t i = 0; i < num_slots; ++i) {
      auto host_done   = Counter::take();
      auto stream_done = Counter::take();
      // Both counters start where the later of them is (the earlier one only grows).
      std::uint32_t const base =
        reached(host_done.load(), stream_done.load()) ? host_done.load() : stream_done.load();
      host_done.store(base);
      stream_done.store(base);
      void* memory = nullptr;
      try {
        memory = CudaPinnedAllocator::allocate(slot_size);
      } catch (...) {
        Counter::give_back(host_done);
        Counter::give_back(stream_done);
        throw;
      }
      slots_.push_back(StagingSlot{memory, host_done, stream_done, base});
    }
  } catch (...) {
    release();
    throw;
  }
}

StagingRing::~StagingRing() noexcept { release(); }

void StagingRing::release() noexcept
{
  for (auto& slot : slots_) {
    free_pinned_off_workers(slot.memory, slot_size_);
    Counter::give_back(slot.host_done);
    Counter::give_back(slot.stream_done);
  }
  slots_.clear();
  Counter::give_back(operations_ended_);
}

StagingSlot& StagingRing::next_slot() noexcept
{
  auto& slot = slots_[cursor_];
  cursor_    = (cursor_ + 1) % slots_.size();
  return slot;
}

void StagingRing::end_operation(std::uint32_t number) noexcept
{
  std::lock_guard const lock{ended_mutex_};
  if (number != ended_in_order_ + 1) {
    try {
      ended_early_.insert(number);
    } catch (...) {  // out of memory: count it now rather than never (the stream may pass early)
      KVIKIO_LOG_ERROR("stream-ordered I/O: out of memory while ending operation ", number);
      ended_in_order_ = number;
      operations_ended_.store(number);
    }
    return;
  }
  ++ended_in_order_;
  // By value, not by set order: numbers wrap around at 2^32.
  for (auto it = ended_early_.find(ended_in_order_ + 1); it != ended_early_.end();
       it      = ended_early_.find(ended_in_order_ + 1)) {
    ended_early_.erase(it);
    ++ended_in_order_;
  }
  operations_ended_.store(ended_in_order_);
}

void StagingRing::stream_caught_up() noexcept
{
  for (auto& slot : slots_) {
    slot.stream_done.store(slot.generation);
  }
}

bool StagingRing::retire_if_idle() noexcept
{
  std::unique_lock const planning{mutex_, std::try_to_lock};
  if (!planning.owns_lock()) { return false; }  // an operation is being planned
  if (!idle_locked()) { return false; }
  retired_ = true;
  return true;
}

bool StagingRing::idle_locked() const noexcept
{
  {
    std::lock_guard const lock{ended_mutex_};
    if (ended_in_order_ != operations_begun_) { return false; }
  }
  return std::all_of(slots_.begin(), slots_.end(), [](StagingSlot const& s) {
    return reached(s.host_done.load(), s.generation) && reached(s.stream_done.load(), s.generation);
  });
}

namespace {

// More rings than this and idle ones of other streams are freed: each holds up to
// up to threads x KVIKIO_BOUNCE_BUFFER_SIZE of pinned memory.
constexpr std::size_t rings_kept = 8;

struct Entry {
  std::shared_ptr<StagingRing> ring;
  std::uint64_t last_use;
};
using Key = std::tuple<CUcontext, CUstream, std::thread::id>;

std::mutex registry_mutex;
std::map<Key, Entry>& registry()
{
  static detail::BuiltOnce<std::map<Key, Entry>> rings;  // rings may outlive the driver
  return rings.get([] { return new std::map<Key, Entry>(); });
}
std::uint64_t uses = 0;

// Frees idle rings while more than `keep` exist; they go to `dying`, destroyed once the
// registry's lock is released (freeing pinned memory waits for the device).
void free_idle_rings_locked(std::size_t keep, std::vector<Entry>& dying)
{
  auto& rings = registry();
  if (rings.size() <= keep) { return; }
  std::vector<std::map<Key, Entry>::iterator> by_age;
  for (auto it = rings.begin(); it != rings.end(); ++it) {
    by_age.push_back(it);
  }
  std::sort(by_age.begin(), by_age.end(), [](auto a, auto b) {
    return a->second.last_use < b->second.last_use;
  });
  for (auto it : by_age) {  // busy ones stay: over the bound until they are idle
    if (rings.size() <= keep) { return; }
    if (it->second.ring->retire_if_idle()) {
      dying.push_back(std::move(it->second));
      rings.erase(it);
    }
  }
}

}  // namespace

std::shared_ptr<StagingRing> staging_ring_for(CUstream stream,
                                              std::size_t num_slots,
                                              std::size_t slot_size)
{
  CUcontext ctx{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&ctx));
  Key const key{
    ctx, stream, stream == CU_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id{}};
  free_orphans();
  // A ring dropped here lives on while operations hold it; it is idle, so they are ending.
  std::vector<Entry> dying;  // destroyed after the lock is released
  std::lock_guard const lock{registry_mutex};
  auto& rings = registry();
  auto it     = rings.find(key);
  if (it != rings.end()) {
    auto& ring         = it->second.ring;
    bool const reshape = ring->num_slots() != num_slots || ring->slot_size() != slot_size;
    if (!reshape || !ring->retire_if_idle()) {
      it->second.last_use = ++uses;
      return ring;
    }
    dying.push_back(std::move(it->second));
    rings.erase(it);
  }
  free_idle_rings_locked(rings_kept - 1, dying);
  auto ring = std::make_shared<StagingRing>(num_slots, slot_size);
  rings.emplace(key, Entry{ring, ++uses});
  return ring;
}

std::size_t staging_pinned_bytes()
{
  std::lock_guard const lock{registry_mutex};
  std::size_t bytes = 0;
  for (auto const& [key, entry] : registry()) {
    bytes += entry.ring->num_slots() * entry.ring->slot_size();
  }
  return bytes;
}

std::size_t free_idle_staging()
{
  free_orphans();
  std::vector<Entry> dying;  // destroyed after the lock is released
  std::lock_guard const lock{registry_mutex};
  free_idle_rings_locked(0, dying);
  return dying.size();
}

}  // namespace kvikio::detail
