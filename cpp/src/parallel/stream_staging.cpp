/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "parallel/stream_staging.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
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
#include <kvikio/threadpool_wrapper.hpp>
#include <kvikio/utils.hpp>

#include "core/renewed_at_fork.hpp"
#include "cuda/context.hpp"
#include "cuda/pinned_memory.hpp"
#include "parallel/stream_ordered.hpp"
#include "parallel/stream_workers.hpp"

namespace kvikio::detail {

/**
 * Pages of counters, pinned and device-mapped, never freed (streams may still poll them). A page
 * pinned in a primary context serves every context: its handle and the page's registration last
 * as long as the process. A page pinned in a context the program made (when no other counter is
 * free) serves only that context, which may be destroyed, the registration with it; the context
 * is named by its id, as a new context can have a destroyed one's handle.
 */
class [[gnu::visibility("hidden")]] CounterPool
{  // hidden: private to this copy
 public:
  static CounterPool& instance()
  {
    static detail::BuiltOnce<CounterPool> pool;
    return pool.get([] { return new CounterPool(); });
  }

  Counter take()
  {
    std::lock_guard const lock{mutex_};
    unsigned long long const owner = lasting_.empty() ? current_owner() : 0;
    auto& free                     = free_of(owner);
    if (free.empty()) { grow(free, owner); }
    Counter c = free.back();
    free.pop_back();
    return c;
  }

  /// @brief Pins the first page that serves every context now, if there is none. The caller has
  /// pushed a primary context.
  void reserve()
  {
    std::lock_guard const lock{mutex_};
    if (lasting_.empty()) { grow(lasting_, 0); }
  }

  void give_back(Counter c) noexcept
  {
    std::lock_guard const lock{mutex_};
    try {
      free_of(c.owner_).push_back(c);
    } catch (...) {  // out of memory: the counter is lost, nothing else
    }
  }

 private:
  // 0 for a primary context, else the current context's id.
  static unsigned long long current_owner()
  {
    auto& api = cudaAPI::instance();
    CUcontext ctx{};
    KVIKIO_CUDA_DRIVER_TRY(api.CtxGetCurrent(&ctx));
    if (ctx == nullptr || is_primary_context(ctx)) { return 0; }
    unsigned long long id{};
    KVIKIO_CUDA_DRIVER_TRY(api.CtxGetId(ctx, &id));
    return id;
  }

  std::vector<Counter>& free_of(unsigned long long owner)
  {
    return owner == 0 ? lasting_ : of_context_[owner];
  }

  // A page more of counters for `free`, the list of `owner`, pinned in the current context.
  static void grow(std::vector<Counter> & free, unsigned long long owner)
  {
    constexpr std::size_t page = 4096;
    void* mem                  = nullptr;
    // Registered rather than from cuMemHostAlloc, whose first call in a process costs the
    // driver a millisecond or two more than a first registration: this page is part of a
    // process's first stream-ordered call. Not inherited by a child of fork(): the device
    // polls the parent's pages.
    KVIKIO_CUDA_DRIVER_TRY(pin_host_memory(page, -1, &mem));
    CUdeviceptr dev{};
    if (CUresult const r = cudaAPI::instance().MemHostGetDevicePointer(&dev, mem, 0);
        r != CUDA_SUCCESS) {
      (void)unpin_host_memory(mem, page);
      KVIKIO_CUDA_DRIVER_TRY(r);
    }
    auto* words = static_cast<std::atomic<std::uint32_t>*>(mem);
    for (std::size_t i = 0; i < page / sizeof(std::uint32_t); ++i) {
      new (words + i) std::atomic<std::uint32_t>{0};
      free.push_back(Counter{words + i, dev + i * sizeof(std::uint32_t), owner});
    }
  }
  std::mutex mutex_;
  std::vector<Counter> lasting_;  // on pages pinned in a primary context
  std::map<unsigned long long, std::vector<Counter>> of_context_;
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

// A stream's first calls stage through a starter ring of at most this many bytes (one huge
// page: pinned in a fraction of a millisecond) while its full ring is pinned on a thread of its
// own. A starter's slots are small, so its uses in flight are bounded (the caller's
// `most_starter_uses`): a stream holds about 1000 operations before enqueuing on it blocks.
constexpr std::size_t starter_bytes = std::size_t{2} << 20;

// Pinning threads still running: the process waits for them at exit (a thread inside the driver
// while its static state is torn down could crash the exit).
std::atomic<int> pinning_threads{0};

void wait_for_pinning_threads() noexcept
{
  for (int i = 0; i < 2000 && pinning_threads.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Runs `pin` on a detached thread the process waits for at exit.
/// @throws std::system_error if the thread cannot be started.
template <typename Pin>
void start_pinning_thread(Pin&& pin)
{
  // Registered after the driver's own exit handlers (the driver is initialised by now), so it
  // runs before them.
  static bool const waits_at_exit = std::atexit(wait_for_pinning_threads) == 0;
  // A child of fork() has none of its parent's threads.
  static bool const forgets_at_fork =
    ::pthread_atfork(nullptr, nullptr, [] { pinning_threads.store(0); }) == 0;
  (void)waits_at_exit;
  (void)forgets_at_fork;
  pinning_threads.fetch_add(1);
  try {
    static auto const& name_thread = detail::lasting_thread_namer("kvikio-pin");
    std::thread{[pin = std::forward<Pin>(pin)]() mutable {
      name_thread();
      pin();
      pinning_threads.fetch_sub(1);
    }}.detach();
  } catch (...) {
    pinning_threads.fetch_sub(1);
    throw;
  }
}

/**
 * Starter blocks (`starter_bytes`, pinned) kept between rings: a ring that fits one takes it
 * instead of pinning on its caller, and gives it back when freed. The first is pinned ahead of
 * the process's first stream-ordered call (warm_up_stream_staging()); a starter gives its block
 * back once its stream's full ring took over, for the next stream's first call; a small full
 * ring, which keeps its block, has another pinned at once. At most one is kept: more are freed.
 */
class StarterStock;
// A pinning thread may finish after exit() began.
RenewedAtFork<StarterStock> current_stock;

class StarterStock {
 public:
  static StarterStock& instance() { return current_stock.get(); }

  /// A kept block, or one being pinned (waited for), or null. With `replace`, a block taken is
  /// replaced on a thread of its own, in the caller's context if that is a primary context: a
  /// kept block serves every context, and a context the program made may end while it is kept
  /// (the block's registration would end with it).
  void* take(bool replace)
  {
    void* block = nullptr;
    {
      std::unique_lock lock{mutex_};
      pinned_.wait(lock, [&] { return pinning_ == 0; });
      block = std::exchange(kept_, nullptr);
      if (block == nullptr || !replace) { return block; }  // none pinned, or it failed: no retry
      ++pinning_;
    }
    CUcontext ctx{};
    if (cudaAPI::instance().CtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr &&
        is_primary_context(ctx)) {
      pin_ahead(ctx, false);
    } else {
      finish_pinning(nullptr);
    }
    return block;
  }

  /// Waits for pinning ahead in progress.
  void wait()
  {
    std::unique_lock lock{mutex_};
    pinned_.wait(lock, [&] { return pinning_ == 0; });
  }

  [[nodiscard]] std::size_t kept()
  {
    std::lock_guard const lock{mutex_};
    return kept_ != nullptr ? 1 : 0;
  }

  void give_back(void* block) noexcept
  {
    {
      std::lock_guard const lock{mutex_};
      if (kept_ == nullptr) {
        kept_ = block;
        return;
      }
    }
    free_pinned_off_workers(block, starter_bytes);
  }

  /// Pins the counters' first page and a block in `ctx` on a thread of its own.
  void warm_up(CUcontext ctx) noexcept
  {
    {
      std::lock_guard const lock{mutex_};
      ++pinning_;
    }
    pin_ahead(ctx, true);
  }

 private:
  // Pins a block (and the counters' first page) on a thread of its own; counted in `pinning_`.
  void pin_ahead(CUcontext ctx, bool counters) noexcept
  {
    try {
      start_pinning_thread([this, ctx, counters] {
        try {
          PushAndPopContext const pushed{ctx};
          if (counters) { CounterPool::instance().reserve(); }
          void* block = nullptr;
          try {
            block = CudaPinnedAllocator::allocate(starter_bytes);
          } catch (std::exception const& e) {
            KVIKIO_LOG_INFO("stream-ordered I/O: pinning staging ahead failed: ", e.what());
          }
          finish_pinning(block);  // in the context, which frees a block not needed
          return;
        } catch (std::exception const& e) {  // a first call pins what it needs itself
          KVIKIO_LOG_INFO("stream-ordered I/O: pinning staging ahead failed: ", e.what());
        }
        finish_pinning(nullptr);
      });
    } catch (std::exception const& e) {
      KVIKIO_LOG_INFO("stream-ordered I/O: no thread to pin staging ahead: ", e.what());
      finish_pinning(nullptr);
    }
  }

  void finish_pinning(void* block) noexcept
  {
    {
      std::lock_guard const lock{mutex_};
      --pinning_;
      if (kept_ == nullptr) { std::swap(kept_, block); }
    }
    pinned_.notify_all();
    if (block != nullptr) { free_pinned_off_workers(block, starter_bytes); }
  }

  std::mutex mutex_;
  std::condition_variable pinned_;
  int pinning_{0};  // blocks being pinned ahead
  void* kept_{nullptr};
};

// A child of fork() starts with no stock: its parent's blocks are not mapped there (pinned memory
// is not inherited), and the stock's mutex may have been held at the fork.
[[maybe_unused]] int const stock_forgotten_at_fork =
  ::pthread_atfork(nullptr, nullptr, [] { current_stock.renew(); });

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

StagingRing::StagingRing(std::size_t num_slots, std::size_t slot_size, bool starter)
  : slot_size_{slot_size},
    operations_ended_{Counter::take()},
    ended_in_order_{operations_ended_.load()}
{
  KVIKIO_NVTX_FUNC_RANGE();  // pins the stream's staging
  operations_begun_ = ended_in_order_;
  slots_.reserve(num_slots);
  try {
    // One block for every slot: one mapping and one registration, or a kept starter block.
    if (num_slots * slot_size <= starter_bytes && num_slots * slot_size > starter_bytes / 2) {
      block_      = StarterStock::instance().take(!starter);
      from_stock_ = block_ != nullptr;
    }
    block_size_ = from_stock_ ? starter_bytes : num_slots * slot_size;
    if (block_ == nullptr) { block_ = CudaPinnedAllocator::allocate(block_size_); }
    for (std::size_t i = 0; i < num_slots; ++i) {
      auto host_done   = Counter::take();
      auto stream_done = Counter::take();
      // Both counters start where the later of them is (the earlier one only grows).
      std::uint32_t const base =
        reached(host_done.load(), stream_done.load()) ? host_done.load() : stream_done.load();
      host_done.store(base);
      stream_done.store(base);
      slots_.push_back(
        StagingSlot{static_cast<std::byte*>(block_) + i * slot_size, host_done, stream_done, base});
    }
  } catch (...) {
    release();
    throw;
  }
}

StagingRing::~StagingRing() noexcept { release(); }

void StagingRing::release() noexcept
{
  if (from_stock_) {
    StarterStock::instance().give_back(block_);
  } else if (block_ != nullptr) {
    free_pinned_off_workers(block_, block_size_);
  }
  block_ = nullptr;
  for (auto& slot : slots_) {
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

void StagingRing::end_operation(std::uint32_t number, std::size_t groups) noexcept
{
  groups_in_flight_.fetch_sub(groups, std::memory_order_relaxed);
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

/// A full ring being pinned on a thread of its own.
struct PendingFullRing {
  std::mutex mutex;
  std::condition_variable pinned;
  bool done{false};
  std::shared_ptr<StagingRing> ring;  // once done; null where pinning failed
  std::exception_ptr error;
};

// Once a full ring failed to pin in the background, rings are pinned on the caller, whose call
// then reports the failure, rather than retried in the background and logged at every call.
std::atomic<bool> background_pinning_failed{false};

/// Starts pinning a ring of `num_slots` x `slot_size` in `ctx` on a thread of its own.
/// @throws std::system_error if the thread cannot be started.
std::shared_ptr<PendingFullRing> pin_in_background(CUcontext ctx,
                                                   std::size_t num_slots,
                                                   std::size_t slot_size)
{
  auto pending = std::make_shared<PendingFullRing>();
  start_pinning_thread([ctx, num_slots, slot_size, pending]() mutable {
    {
      // The context stays pushed until the thread lets go of `pending`: if nobody wants the
      // ring any more, it is freed here, in its own context.
      std::optional<PushAndPopContext> pushed;
      std::shared_ptr<StagingRing> ring;
      std::exception_ptr error;
      try {
        pushed.emplace(ctx);
        ring = std::make_shared<StagingRing>(num_slots, slot_size);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard const lock{pending->mutex};
        pending->ring  = std::move(ring);
        pending->error = error;
        pending->done  = true;
      }
      pending->pinned.notify_all();
      pending.reset();
    }
  });
  return pending;
}

struct Entry {
  std::shared_ptr<StagingRing> ring;
  std::uint64_t last_use;
  std::shared_ptr<PendingFullRing> pending{};  // the full ring, while `ring` is the starter
};
// The context's id (cuCtxGetId), not its handle: a context made after another was destroyed may
// get that one's handle, and the ring of the ended context (whose registration ended with it)
// must not serve it.
using Key = std::tuple<unsigned long long, CUstream, std::thread::id>;

std::mutex registry_mutex;
std::map<Key, Entry>& registry()
{
  static detail::BuiltOnce<std::map<Key, Entry>> rings;  // rings may outlive the driver
  return rings.get([] { return new std::map<Key, Entry>(); });
}
// Starters the full ring replaced while operations still used them: kept until idle (their
// streams may still copy out of them), then freed like any idle ring.
std::vector<std::shared_ptr<StagingRing>>& draining()
{
  static detail::BuiltOnce<std::vector<std::shared_ptr<StagingRing>>> rings;
  return rings.get([] { return new std::vector<std::shared_ptr<StagingRing>>(); });
}
std::uint64_t uses = 0;

// Idle rings go to `dying`, destroyed once the registry's lock is released (freeing pinned
// memory waits for the device).

// The draining starters that are idle.
void free_drained_starters_locked(std::vector<Entry>& dying)
{
  auto& starters = draining();
  for (auto it = starters.begin(); it != starters.end();) {
    if ((*it)->retire_if_idle()) {
      dying.push_back(Entry{std::move(*it), 0});
      it = starters.erase(it);
    } else {
      ++it;
    }
  }
}

// Idle rings while more than `keep` exist, least recently used first.
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
  for (auto it : by_age) {  // busy ones, and starters, stay: over the bound until idle
    if (rings.size() <= keep) { return; }
    if (!it->second.pending && it->second.ring->retire_if_idle()) {
      dying.push_back(std::move(it->second));
      rings.erase(it);
    }
  }
}

std::size_t uses_of(std::size_t bytes, StagingRing const& ring)
{
  return (bytes + ring.slot_size() - 1) / ring.slot_size();
}

// Under the registry's lock, for an entry whose ring is a starter: once the full ring is pinned
// it takes over (a busy starter drains, an idle one goes to `dying`); while it is not, returns
// the PendingFullRing to wait for if the starter cannot take a call of `bytes` (too many uses in
// flight), else null (the starter takes the call).
std::shared_ptr<PendingFullRing> take_full_ring_or_wait_locked(Entry& entry,
                                                               std::size_t bytes,
                                                               std::size_t most_starter_uses,
                                                               std::vector<Entry>& dying)
{
  std::unique_lock pending_lock{entry.pending->mutex};
  if (!entry.pending->done) {
    if (entry.ring->groups_in_flight() + uses_of(bytes, *entry.ring) <= most_starter_uses) {
      return nullptr;
    }
    return entry.pending;
  }
  auto full        = std::move(entry.pending->ring);
  auto const error = entry.pending->error;
  pending_lock.unlock();
  entry.pending.reset();
  if (!full) {
    background_pinning_failed.store(true);
    try {
      std::rethrow_exception(error);
    } catch (std::exception const& e) {
      KVIKIO_LOG_ERROR("stream-ordered I/O: pinning a stream's staging failed (",
                       e.what(),
                       "); its calls go on through its small ring, and the next call once it is "
                       "idle pins on the caller");
    } catch (...) {
      KVIKIO_LOG_ERROR("stream-ordered I/O: pinning a stream's staging failed");
    }
    return nullptr;
  }
  if (entry.ring->retire_if_idle()) {
    dying.push_back(Entry{std::exchange(entry.ring, std::move(full)), 0});
    return nullptr;
  }
  try {
    draining().push_back(entry.ring);
    entry.ring = std::move(full);
  } catch (...) {  // out of memory: the starter serves on, the full ring goes
    dying.push_back(Entry{std::move(full), 0});
  }
  return nullptr;
}

}  // namespace

std::shared_ptr<StagingRing> staging_ring_for(CUstream stream,
                                              RingShape const& shape,
                                              std::size_t bytes,
                                              std::size_t most_starter_uses)
{
  auto const [num_slots, slot_size, starter_slots] = shape;
  auto& api                                        = cudaAPI::instance();
  CUcontext ctx{};
  KVIKIO_CUDA_DRIVER_TRY(api.CtxGetCurrent(&ctx));
  unsigned long long ctx_id{};
  KVIKIO_CUDA_DRIVER_TRY(api.CtxGetId(ctx, &ctx_id));
  Key const key{ctx_id,
                stream,
                stream == CU_STREAM_PER_THREAD ? std::this_thread::get_id() : std::thread::id{}};
  free_orphans();
  while (true) {
    std::shared_ptr<PendingFullRing> wait_for;
    bool pin_here = false;
    {
      // A ring dropped here lives on while operations hold it; it is idle, so they are ending.
      std::vector<Entry> dying;  // destroyed after the lock is released
      std::lock_guard const lock{registry_mutex};
      auto& rings = registry();
      auto it     = rings.find(key);
      if (it != rings.end() && it->second.pending) {
        wait_for = take_full_ring_or_wait_locked(it->second, bytes, most_starter_uses, dying);
        if (!wait_for && it->second.pending) {  // the starter takes this call
          it->second.last_use = ++uses;
          return it->second.ring;
        }
      }
      if (!wait_for) {
        free_drained_starters_locked(dying);
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
        // A stream's first ring: one larger than a huge page is pinned on a thread of its own
        // while a starter of one huge page takes the first calls, unless this call alone would
        // fill the starter. The starter has fewer slots than a ring of many: larger ones take
        // a larger call. Only in a primary context: a context the program made may be destroyed
        // as soon as the call's work is done, before a thread of the library has pinned in it.
        std::size_t const page = get_page_size();
        std::size_t const starter_count =
          std::max<std::size_t>(1, std::min(starter_slots, num_slots));
        std::size_t const starter_slot = starter_bytes / starter_count / page * page;
        bool const start_small         = !background_pinning_failed.load() && starter_slot > 0 &&
                                 num_slots * slot_size > starter_bytes &&
                                 (bytes + starter_slot - 1) / starter_slot <= most_starter_uses &&
                                 is_primary_context(ctx);
        if (start_small) {
          Entry entry{std::make_shared<StagingRing>(starter_count, starter_slot, true), ++uses};
          try {
            entry.pending = pin_in_background(ctx, num_slots, slot_size);
          } catch (std::exception const& e) {  // no thread: the starter serves until it is
            KVIKIO_LOG_INFO("stream-ordered I/O: no thread to pin a stream's staging (",
                            e.what(),
                            "); the next call once the ring is idle pins it");
          }
          auto ring = entry.ring;
          rings.emplace(key, std::move(entry));
          return ring;
        }
        pin_here = true;
      }
    }
    if (pin_here) {
      // The full ring, pinned on the caller without the registry's lock: other streams' calls
      // go on meanwhile. Another call of this stream may have made one first: that one serves.
      auto ring = std::make_shared<StagingRing>(num_slots, slot_size);
      std::lock_guard const lock{registry_mutex};
      if (registry().try_emplace(key, Entry{ring, ++uses}).second) { return ring; }
      continue;  // ours is freed at the end of this scope, after the lock is released
    }
    std::unique_lock lock{wait_for->mutex};
    wait_for->pinned.wait(lock, [&] { return wait_for->done; });
  }
}

std::size_t staging_pinned_bytes()
{
  std::lock_guard const lock{registry_mutex};
  std::size_t bytes = 0;
  for (auto const& [key, entry] : registry()) {
    bytes += entry.ring->num_slots() * entry.ring->slot_size();
  }
  for (auto const& ring : draining()) {
    bytes += ring->num_slots() * ring->slot_size();
  }
  return bytes;
}

std::size_t free_idle_staging()
{
  free_orphans();
  std::vector<Entry> dying;  // destroyed after the lock is released
  std::lock_guard const lock{registry_mutex};
  free_drained_starters_locked(dying);
  free_idle_rings_locked(0, dying);
  return dying.size();
}

void warm_up_stream_staging() noexcept
{
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_relaxed)) { return; }
  CUcontext const ctx = current_context_where_cuda_is_in_use();
  // The block is pinned in the opener's context after the opening returns, and kept: only a
  // primary context is sure to outlive that (a context the program made may end at once). Once,
  // by one of the openers.
  if (ctx == nullptr || !is_primary_context(ctx) || done.exchange(true)) { return; }
  StarterStock::instance().warm_up(ctx);
}

std::size_t staging_blocks_kept() { return StarterStock::instance().kept(); }

void wait_for_staging_pinning()
{
  std::vector<std::shared_ptr<PendingFullRing>> pending;
  {
    std::lock_guard const lock{registry_mutex};
    for (auto const& [key, entry] : registry()) {
      if (entry.pending) { pending.push_back(entry.pending); }
    }
  }
  for (auto const& full : pending) {
    std::unique_lock lock{full->mutex};
    full->pinned.wait(lock, [&] { return full->done; });
  }
  StarterStock::instance().wait();
}

}  // namespace kvikio::detail
