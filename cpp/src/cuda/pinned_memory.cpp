/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/pinned_memory.hpp"

#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;

std::size_t mapped_size(std::size_t size) { return align_up(size, get_page_size()); }

// Anonymous memory of `length` bytes, aligned to a huge page from a huge page up (the head and
// tail of a larger mapping are given back).
void* map_aligned(std::size_t length)
{
  if (length < huge_page) {
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { throw std::bad_alloc{}; }
    return p;
  }
  std::size_t const wide = length + huge_page;
  void* p = ::mmap(nullptr, wide, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { throw std::bad_alloc{}; }
  auto* const start      = static_cast<std::byte*>(p);
  auto* const aligned    = static_cast<std::byte*>(align_up(p, huge_page));
  std::size_t const head = static_cast<std::size_t>(aligned - start);
  if (head > 0) { ::munmap(start, head); }
  std::size_t const tail = wide - head - length;
  if (tail > 0) { ::munmap(aligned + length, tail); }
  return aligned;
}

// Faults every page in, writable, before the driver pins them: by touching each page, not by
// MADV_POPULATE_WRITE, which holds the process's mmap lock throughout (a ring pinned in the
// background would hold up every mmap of the process, a new thread's stack too, for
// milliseconds), where a fault takes only its own mapping's lock (Linux 6.4 and later).
void populate(void* memory, std::size_t length)
{
  auto* const bytes      = static_cast<volatile std::byte*>(memory);
  std::size_t const page = get_page_size();
  for (std::size_t i = 0; i < length; i += page) {
    bytes[i] = std::byte{0};
  }
}

// Whether `node` is in the kernel's list `online` ("0", "0-1", "0,2-3"), and how many it names.
struct OnlineNodes {
  bool has_node{false};
  int count{0};
};

OnlineNodes parse_online(std::string_view online, int node) noexcept
{
  OnlineNodes result;
  while (!online.empty()) {
    auto const comma     = online.find(',');
    std::string_view run = online.substr(0, comma);
    online = comma == std::string_view::npos ? std::string_view{} : online.substr(comma + 1);
    while (!run.empty() && (run.back() == '\n' || run.back() == ' ')) {
      run.remove_suffix(1);
    }
    if (run.empty()) { continue; }
    auto const dash = run.find('-');
    int first{};
    int last{};
    std::string_view const a = run.substr(0, dash);
    if (std::from_chars(a.data(), a.data() + a.size(), first).ptr != a.data() + a.size()) {
      return {};  // not the kernel's format: bind nothing
    }
    last = first;
    if (dash != std::string_view::npos) {
      std::string_view const b = run.substr(dash + 1);
      if (std::from_chars(b.data(), b.data() + b.size(), last).ptr != b.data() + b.size() ||
          last < first) {
        return {};
      }
    }
    result.count += last - first + 1;
    if (node >= first && node <= last) { result.has_node = true; }
  }
  return result;
}

// The mappings pin_host_memory() made and unpin_host_memory() has not unmapped yet, with the
// process that made them: only those are unmapped where the driver no longer knows the memory.
std::mutex mappings_mutex;
std::map<void*, pid_t>& mappings()
{
  static BuiltOnce<std::map<void*, pid_t>> made;
  return made.get([] { return new std::map<void*, pid_t>(); });
}

std::string read_online_nodes()
{
  std::ifstream file{"/sys/devices/system/node/online"};
  std::string line;
  std::getline(file, line);
  return line;  // empty where there is no such file: one node
}

}  // namespace

CUresult pin_host_memory(std::size_t size, int numa_node, void** memory)
{
  std::size_t const length = mapped_size(size);
  void* p                  = map_aligned(length);
  // Advice the kernel may refuse changes only speed (huge pages) or placement (the node).
  if (length >= huge_page) { (void)::madvise(p, length, MADV_HUGEPAGE); }
  if (::madvise(p, length, MADV_DONTFORK) != 0) {
    KVIKIO_LOG_INFO("pinned staging: MADV_DONTFORK refused (errno ", errno, ")");
  }
  if (numa_node >= 0) {
    constexpr std::size_t bits = 8 * sizeof(unsigned long);
    unsigned long mask[4]{};  // nodes 0..255
    if (static_cast<std::size_t>(numa_node) < 4 * bits) {
      mask[numa_node / bits] = 1UL << (numa_node % bits);
      // maxnode counts one more than the highest node the mask can name.
      if (::syscall(SYS_mbind, p, length, MPOL_PREFERRED, mask, 4 * bits + 1, 0) != 0) {
        KVIKIO_LOG_INFO(
          "pinned staging: binding to NUMA node ", numa_node, " refused (errno ", errno, ")");
      }
    }
  }
  populate(p, length);
  CUresult const r = cudaAPI::instance().MemHostRegister(
    p, length, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
  if (r != CUDA_SUCCESS) {
    ::munmap(p, length);
    return r;
  }
  try {
    std::lock_guard const lock{mappings_mutex};
    mappings().emplace(p, ::getpid());
  } catch (...) {  // not recorded: if its context ends first, the mapping is left mapped
  }
  *memory = p;
  return CUDA_SUCCESS;
}

CUresult unpin_host_memory(void* memory, std::size_t size) noexcept
{
  CUresult const r = cudaAPI::instance().MemHostUnregister(memory);
  // Anything else the driver refuses leaves the range alone: in a child of fork() (whose driver
  // refuses every call) it is not this mapping, which the child did not inherit, but a hole it
  // may have mapped since.
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) { return r; }
  bool ours = false;
  {
    std::lock_guard const lock{mappings_mutex};
    auto const found = mappings().find(memory);
    ours             = found != mappings().end() && found->second == ::getpid();
    if (found != mappings().end() && (ours || r == CUDA_SUCCESS)) { mappings().erase(found); }
  }
  // Registered no more (the registration ended with the context that made it, destroyed or
  // reset), yet a mapping this process made: unmapped as well.
  if (r != CUDA_SUCCESS && !ours) { return r; }
  ::munmap(memory, mapped_size(size));
  return CUDA_SUCCESS;
}

int staging_numa_node(int device_node, std::string_view online) noexcept
{
  if (device_node < 0) { return -1; }
  auto const nodes = parse_online(online, device_node);
  return nodes.count > 1 && nodes.has_node ? device_node : -1;
}

int staging_numa_node_of(CUdevice device)
{
  int node{-1};
  if (cudaAPI::instance().DeviceGetAttribute(&node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, device) !=
      CUDA_SUCCESS) {
    return -1;  // a driver older than CUDA 12.2 does not know the attribute
  }
  return staging_numa_node(node, read_online_nodes());
}

}  // namespace kvikio::detail
