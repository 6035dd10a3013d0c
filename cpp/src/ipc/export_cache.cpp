/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The producer side: one driver handle per allocation, kept while the allocation lives.
 */
#include <kvikio/ipc.hpp>

#include <cstring>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "ipc/ipc_internals.hpp"

namespace kvikio::ipc {
namespace detail {

std::array<std::uint8_t, 16> device_uuid(int ordinal)
{
  static std::mutex mutex;
  static std::map<int, std::array<std::uint8_t, 16>> known;
  std::lock_guard const lock{mutex};
  if (auto it = known.find(ordinal); it != known.end()) { return it->second; }
  CUdevice device{};
  CUuuid uuid{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().DeviceGet(&device, ordinal));
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().DeviceGetUuid(&uuid, device));
  std::array<std::uint8_t, 16> out{};
  std::memcpy(out.data(), uuid.bytes, out.size());
  known[ordinal] = out;
  return out;
}

CUcontext context_of_device(std::array<std::uint8_t, 16> const& uuid)
{
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().DeviceGetCount(&count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    if (device_uuid(ordinal) == uuid) { return get_primary_cuda_context(ordinal); }
  }
  throw std::invalid_argument("kvikio::ipc::open: the handle's device is not one of the " +
                              std::to_string(count) + " devices this process sees");
}

}  // namespace detail

namespace {

// The allocation holding a pointer, as the driver describes it.
struct Allocation {
  CUdeviceptr base{};
  std::size_t size{};
  unsigned long long buffer_id{};
  int ordinal{};
  CUcontext ctx{};
};

Allocation allocation_of(void const* ptr)
{
  KVIKIO_EXPECT(ptr != nullptr, "kvikio::ipc: a null pointer", std::invalid_argument);
  unsigned int memory_type = 0;
  Allocation a;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      CU_POINTER_ATTRIBUTE_CONTEXT};
  void* values[] = {&memory_type, &a.base, &a.size, &a.buffer_id, &a.ordinal, &a.ctx};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().PointerGetAttributes(
    std::size(attributes), attributes, values, convert_void2deviceptr(ptr)));
  KVIKIO_EXPECT(memory_type == CU_MEMORYTYPE_DEVICE,
                "kvikio::ipc: " + std::to_string(reinterpret_cast<std::uintptr_t>(ptr)) +
                  " is not device memory of this process",
                std::invalid_argument);
  return a;
}

class ExportCache {
 public:
  IpcHandle export_memory(void const* ptr, std::size_t nbytes)
  {
    Allocation const a = allocation_of(ptr);
    auto const address = convert_void2deviceptr(ptr);
    KVIKIO_EXPECT(nbytes <= a.size - (address - a.base),
                  "kvikio::ipc::export_memory: " + std::to_string(nbytes) + " bytes at offset " +
                    std::to_string(address - a.base) + " leave the allocation of " +
                    std::to_string(a.size) + " bytes",
                  std::invalid_argument);
    IpcHandle h;
    h.producer    = ProducerId::self();
    h.device_uuid = detail::device_uuid(a.ordinal);
    h.alloc_base  = a.base;
    h.alloc_size  = a.size;
    h.buffer_id   = a.buffer_id;
    h.offset      = address - a.base;
    h.length      = nbytes;
    h.cuda_handle = cuda_handle(a);
    detail::seal(h);
    return h;
  }

  void forget(void const* ptr)
  {
    Allocation const a = allocation_of(ptr);
    std::lock_guard const lock{mutex_};
    if (auto it = entries_.find(Key{a.ordinal, a.base}); it != entries_.end()) {
      lru_.erase(it->second.lru);
      entries_.erase(it);
      ++stats_.evictions;
    }
  }

  CacheStats stats()
  {
    std::lock_guard const lock{mutex_};
    CacheStats s = stats_;
    s.entries    = entries_.size();
    return s;
  }

  void clear()
  {
    std::lock_guard const lock{mutex_};
    entries_.clear();
    lru_.clear();
    stats_ = CacheStats{};
  }

 private:
  using Key = std::pair<int, CUdeviceptr>;  // device ordinal, allocation base
  struct Entry {
    unsigned long long buffer_id;
    CUipcMemHandle handle;
    std::list<Key>::iterator lru;
  };

  CUipcMemHandle cuda_handle(Allocation const& a)
  {
    Key const key{a.ordinal, a.base};
    {
      std::lock_guard const lock{mutex_};
      if (auto it = entries_.find(key); it != entries_.end()) {
        if (it->second.buffer_id == a.buffer_id) {
          lru_.splice(lru_.begin(), lru_, it->second.lru);
          ++stats_.hits;
          return it->second.handle;
        }
        // Freed and reallocated at the same address: the old handle names the old memory.
        lru_.erase(it->second.lru);
        entries_.erase(it);
        ++stats_.stale;
      }
    }
    CUipcMemHandle handle{};
    {
      PushAndPopContext const context{a.ctx};
      KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().IpcGetMemHandle(&handle, a.base));
    }
    std::lock_guard const lock{mutex_};
    ++stats_.misses;
    std::size_t const bound = defaults::ipc_export_cache_size();
    if (bound == 0 || entries_.count(key) != 0) { return handle; }  // another thread cached it
    lru_.push_front(key);
    entries_.emplace(key, Entry{a.buffer_id, handle, lru_.begin()});
    while (entries_.size() > bound) {  // exported handles hold nothing: evict freely
      entries_.erase(lru_.back());
      lru_.pop_back();
      ++stats_.evictions;
    }
    return handle;
  }

  std::mutex mutex_;
  std::map<Key, Entry> entries_;
  std::list<Key> lru_;  // most recently used first
  CacheStats stats_;
};

ExportCache& export_cache()
{
  static kvikio::detail::BuiltOnce<ExportCache> cache;  // never destroyed: used until exit
  return cache.get([] { return new ExportCache(); });
}

}  // namespace

IpcHandle export_memory(void const* ptr, std::size_t nbytes)
{
  return export_cache().export_memory(ptr, nbytes);
}

void forget(void const* ptr) { export_cache().forget(ptr); }

CacheStats export_cache_stats() { return export_cache().stats(); }

namespace detail {
void clear_export_cache() { export_cache().clear(); }

void check_own_allocation(IpcHandle const& h, std::string const& what)
{
  Allocation now;
  try {
    now = allocation_of(reinterpret_cast<void const*>(h.alloc_base));
  } catch (std::exception const&) {  // no device memory there any more
  }
  if (now.base != h.alloc_base || now.size != h.alloc_size || now.buffer_id != h.buffer_id) {
    throw CUfileException(
      what + ": the allocation this handle names (" + std::to_string(h.alloc_size) + " bytes at " +
      std::to_string(h.alloc_base) + ") was freed; the handle is stale and maps nothing");
  }
}
}  // namespace detail

}  // namespace kvikio::ipc
