/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The consumer side: one mapping per (producer, device, allocation), shared by every user and
 * unmapped only when nobody uses it.
 */
#include <kvikio/ipc.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "ipc/ipc_internals.hpp"

namespace kvikio::ipc {
namespace {

struct Key {
  ProducerId producer;
  std::array<std::uint8_t, 16> device;
  std::uint64_t base;
  bool operator<(Key const& o) const noexcept
  {
    if (int const c = std::memcmp(&producer, &o.producer, sizeof(producer)); c != 0) {
      return c < 0;
    }
    if (device != o.device) { return device < o.device; }
    return base < o.base;
  }
};

struct Entry {
  enum class State { opening, ready };
  Key key;
  std::uint64_t buffer_id;
  State state{State::opening};
  CUcontext ctx{};
  CUdeviceptr mapped{};
  std::size_t mapped_size{0};  // as the driver maps it: no handle's range goes past it
  std::size_t users{0};
  bool cached{true};  // false once out of the table (stale, evicted, invalidated): unmap at 0 users
  bool drop_when_open{false};  // invalidated or cleared while being opened
  std::list<Entry*>::iterator lru;
};

void unmap(std::vector<std::shared_ptr<Entry>> const& entries) noexcept
{
  for (auto const& e : entries) {
    try {
      PushAndPopContext const context{e->ctx};
      KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().IpcCloseMemHandle(e->mapped));
    } catch (std::exception const& ex) {
      KVIKIO_LOG_ERROR("kvikio::ipc: unmapping an opened handle failed: ", ex.what());
    }
  }
}

class ImportCache {
 public:
  std::shared_ptr<void> open(IpcHandle const& h, void*& ptr)
  {
    Key const key{h.producer, h.device_uuid, h.alloc_base};
    // Read before anything is mapped: an invalid setting throws here, not with a mapping made.
    bound_.store(defaults::ipc_open_cache_size());
    std::vector<std::shared_ptr<Entry>> to_unmap;
    std::unique_lock lock{mutex_};
    while (true) {
      auto it = entries_.find(key);
      if (it == entries_.end()) { break; }
      auto const e = it->second;
      if (e->buffer_id == h.buffer_id) {
        if (e->state == Entry::State::opening) {  // another thread opens it: wait for it
          opened_.wait(lock);
          continue;
        }
        check_within_mapping(h, e->mapped_size);
        ++e->users;
        lru_.splice(lru_.begin(), lru_, e->lru);
        ++stats_.hits;
        ptr = reinterpret_cast<void*>(e->mapped + h.offset);
        lock.unlock();  // the lease's deleter (run if making it throws) takes the lock
        return lease(e);
      }
      if (e->state == Entry::State::opening) {
        opened_.wait(lock);
        continue;
      }
      // The producer freed and reallocated at this address: never reuse the old mapping.
      ++stats_.stale;
      detach(e, to_unmap);
    }
    auto e       = std::make_shared<Entry>();
    e->key       = key;
    e->buffer_id = h.buffer_id;
    e->users     = 1;
    lru_.push_front(e.get());
    e->lru = lru_.begin();
    entries_.emplace(key, e);
    ++stats_.misses;
    lock.unlock();
    unmap(to_unmap);
    to_unmap.clear();

    CUresult r = CUDA_SUCCESS;
    try {
      e->ctx = detail::context_of_device(h.device_uuid);
      r      = driver_open(e->ctx, h, e->mapped);
      if (r == CUDA_ERROR_ALREADY_MAPPED) {  // a mapping of this producer overlaps: drop idle ones
        invalidate(h.producer, true);
        r = driver_open(e->ctx, h, e->mapped);
      }
      if (r == CUDA_SUCCESS) {
        try {
          e->mapped_size = mapped_size_of(e->ctx, e->mapped);
          check_within_mapping(h, e->mapped_size);
        } catch (...) {
          unmap({e});
          throw;
        }
      }
    } catch (...) {
      abandon(e);
      throw;
    }
    if (r != CUDA_SUCCESS) {
      abandon(e);
      char const* name = nullptr;
      cudaAPI::instance().GetErrorName(r, &name);
      throw CUfileException("kvikio::ipc::open: cuIpcOpenMemHandle failed (" +
                            std::string{name != nullptr ? name : "unknown error"} +
                            "): is the producer still running, with the allocation alive?");
    }
    lock.lock();
    e->state = Entry::State::ready;
    opened_.notify_all();
    if (e->drop_when_open) { detach(e, to_unmap); }  // users > 0: unmapped at release
    shrink(to_unmap);
    lock.unlock();
    unmap(to_unmap);
    ptr = reinterpret_cast<void*>(e->mapped + h.offset);
    return lease(e);
  }

  void invalidate(ProducerId const& producer, bool idle_only)
  {
    std::vector<std::shared_ptr<Entry>> to_unmap;
    {
      std::lock_guard const lock{mutex_};
      for (auto it = entries_.begin(); it != entries_.end();) {
        auto const e = (it++)->second;  // detach() erases it
        if (e->key.producer != producer || (idle_only && e->users > 0)) { continue; }
        if (e->state == Entry::State::opening) {
          e->drop_when_open = !idle_only;  // its opener detaches it once mapped
          continue;
        }
        ++stats_.evictions;
        detach(e, to_unmap);
      }
    }
    unmap(to_unmap);
  }

  void clear()
  {
    std::vector<std::shared_ptr<Entry>> to_unmap;
    {
      std::lock_guard const lock{mutex_};
      for (auto it = entries_.begin(); it != entries_.end();) {
        auto const e = (it++)->second;
        if (e->state == Entry::State::ready) {
          detach(e, to_unmap);
        } else {
          e->drop_when_open = true;  // its opener detaches it once mapped
        }
      }
      stats_ = CacheStats{};
    }
    unmap(to_unmap);
  }

  CacheStats stats()
  {
    std::lock_guard const lock{mutex_};
    CacheStats s = stats_;
    s.entries    = entries_.size();
    return s;
  }

 private:
  std::shared_ptr<void> lease(std::shared_ptr<Entry> const& e)
  {
    return std::shared_ptr<void>{e.get(), [this, e](void*) { release(e); }};
  }

  void release(std::shared_ptr<Entry> const& e) noexcept
  {
    try {
      std::vector<std::shared_ptr<Entry>> to_unmap;
      {
        std::lock_guard const lock{mutex_};
        if (--e->users == 0 && !e->cached) { to_unmap.push_back(e); }
        shrink(to_unmap);
      }
      unmap(to_unmap);
    } catch (std::exception const& ex) {  // out of memory: the mapping stays until clear()
      KVIKIO_LOG_ERROR("kvikio::ipc: releasing a mapping failed: ", ex.what());
    }
  }

  // Out of the table; unmapped now if idle, else by its last user. Caller holds the mutex.
  void detach(std::shared_ptr<Entry> const& e, std::vector<std::shared_ptr<Entry>>& to_unmap)
  {
    entries_.erase(e->key);
    lru_.erase(e->lru);
    e->cached = false;
    if (e->users == 0) { to_unmap.push_back(e); }
  }

  // Evicts idle entries, least recently used first, down to the bound. Caller holds the mutex.
  void shrink(std::vector<std::shared_ptr<Entry>>& to_unmap)
  {
    std::size_t const bound = bound_.load();  // as read by the last open()
    std::vector<std::shared_ptr<Entry>> idle;
    for (auto it = lru_.rbegin(); it != lru_.rend() && entries_.size() - idle.size() > bound;
         ++it) {
      if ((*it)->users == 0 && (*it)->state == Entry::State::ready) {
        idle.push_back(entries_.at((*it)->key));
      }
    }
    for (auto const& e : idle) {
      ++stats_.evictions;
      detach(e, to_unmap);
    }
    if (entries_.size() > bound && bound > 0) {
      ++stats_.overflows;
      if (!overflow_logged_.exchange(true)) {
        KVIKIO_LOG_WARN("kvikio::ipc: every open-cache entry is in use; holding ",
                        entries_.size(),
                        " mappings, over KVIKIO_IPC_OPEN_CACHE_SIZE=",
                        bound);
      }
    }
  }

  // A failed open: out of the table, waiters wake and open it themselves.
  void abandon(std::shared_ptr<Entry> const& e) noexcept
  {
    std::lock_guard const lock{mutex_};
    entries_.erase(e->key);
    lru_.erase(e->lru);
    e->cached = false;
    opened_.notify_all();
  }

  static std::size_t mapped_size_of(CUcontext ctx, CUdeviceptr mapped)
  {
    PushAndPopContext const context{ctx};
    CUdeviceptr base{};
    std::size_t size{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemGetAddressRange(&base, &size, mapped));
    return size - (mapped - base);
  }

  // A handle's range is trusted no further than the mapping the driver made: a handle altered
  // and sealed again may claim a larger allocation than the producer's.
  static void check_within_mapping(IpcHandle const& h, std::size_t mapped_size)
  {
    KVIKIO_EXPECT(h.offset <= mapped_size && h.length <= mapped_size - h.offset,
                  "kvikio::ipc::open: the handle's " + std::to_string(h.length) +
                    " bytes at offset " + std::to_string(h.offset) + " leave the " +
                    std::to_string(mapped_size) +
                    " bytes the producer's allocation maps to (a handle altered after it was made)",
                  std::invalid_argument);
  }

  static CUresult driver_open(CUcontext ctx, IpcHandle const& h, CUdeviceptr& mapped)
  {
    PushAndPopContext const context{ctx};
    return cudaAPI::instance().IpcOpenMemHandle(
      &mapped, h.cuda_handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  }

  std::mutex mutex_;
  std::condition_variable opened_;
  std::map<Key, std::shared_ptr<Entry>> entries_;
  std::list<Entry*> lru_;  // most recently used first
  CacheStats stats_;
  std::atomic<bool> overflow_logged_{false};
  std::atomic<std::size_t> bound_{128};  // KVIKIO_IPC_OPEN_CACHE_SIZE, read by each open()
};

ImportCache& import_cache()
{
  // Never destroyed: mappings may outlive main.
  static kvikio::detail::BuiltOnce<ImportCache> cache;
  return cache.get([] { return new ImportCache(); });
}

}  // namespace

MappedRegion open(IpcHandle const& handle)
{
  detail::check_handle(handle, "kvikio::ipc::open");
  if (handle.producer == ProducerId::self()) {  // our own allocation: nothing to map
    detail::check_own_allocation(handle, "kvikio::ipc::open");
    return MappedRegion{
      reinterpret_cast<void*>(handle.alloc_base + handle.offset), handle.length, nullptr};
  }
  void* ptr  = nullptr;
  auto lease = import_cache().open(handle, ptr);
  return MappedRegion{ptr, handle.length, std::move(lease)};
}

CacheStats open_cache_stats() { return import_cache().stats(); }

void invalidate_producer(ProducerId const& producer) { import_cache().invalidate(producer, false); }

void clear()
{
  import_cache().clear();
  detail::clear_export_cache();
}

}  // namespace kvikio::ipc
