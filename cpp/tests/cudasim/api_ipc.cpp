/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * IPC between processes of the same user on one machine. A handle names the exporting process
 * and the descriptor of the shared-memory file behind the allocation (or the event's state);
 * the importer opens it through /proc/<pid>/fd/<fd> and maps it.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

#include "memory.hpp"
#include "simulator.hpp"

using cudasim::Allocation;
using cudasim::Simulator;

namespace {

constexpr std::uint32_t handle_magic = 0x4D495343;  // "CSIM"
enum class HandleKind : std::uint32_t { memory = 1, event = 2 };

// Successful calls of the memory-handle entry points, for tests that prove a cache saved them.
std::atomic<unsigned long long> get_mem_calls{0};
std::atomic<unsigned long long> open_mem_calls{0};
std::atomic<unsigned long long> close_mem_calls{0};

struct Handle {
  std::uint32_t magic;
  HandleKind kind;
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t size;
  std::uint64_t buffer_id;
  std::int32_t device;  // memory: the device it belongs to
};
static_assert(sizeof(Handle) <= CU_IPC_HANDLE_SIZE);

template <typename H>
void write_handle(H& out, Handle const& h)
{
  std::memset(out.reserved, 0, sizeof(out.reserved));
  std::memcpy(out.reserved, &h, sizeof(h));
}

template <typename H>
CUresult read_handle(H const& in, HandleKind kind, Handle& h, char const* entry)
{
  std::memcpy(&h, in.reserved, sizeof(h));
  if (h.magic != handle_magic || h.kind != kind) {
    return Simulator::get().misuse(
      entry, "not an IPC handle of this kind", CUDA_ERROR_INVALID_VALUE);
  }
  return CUDA_SUCCESS;
}

// The exporter's descriptor, opened anew in this process; -1 if the exporter or file is gone.
int open_remote(Handle const& h, std::string const& expected_name)
{
  std::string const path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  char target[256]       = {};
  auto const n           = ::readlink(path.c_str(), target, sizeof(target) - 1);
  // The descriptor may have been closed and reused: it must still be the same memfd.
  if (n <= 0 ||
      std::string{target, static_cast<std::size_t>(n)}.find("/memfd:" + expected_name + " ") != 0) {
    return -1;
  }
  return ::open(path.c_str(), O_RDWR | O_CLOEXEC);
}

std::shared_ptr<cudasim::EventState> map_event_state(int fd)
{
  void* mem =
    ::mmap(nullptr, sizeof(cudasim::EventState), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED) { return nullptr; }
  return {static_cast<cudasim::EventState*>(mem),
          [](cudasim::EventState* p) { ::munmap(p, sizeof(cudasim::EventState)); }};
}

}  // namespace

namespace cudasim {

CUresult create_shared_event_state(std::shared_ptr<EventState>& state, int& fd)
{
  fd = ::memfd_create("cudasim-event", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, sizeof(EventState)) != 0) { return CUDA_ERROR_OUT_OF_MEMORY; }
  state = map_event_state(fd);  // zero-filled: counters start at 0
  return state ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

}  // namespace cudasim

extern "C" {

CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr)
{
  CUDASIM_ENTER("cuIpcGetMemHandle");
  auto& sim = Simulator::get();
  if (pHandle == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  std::lock_guard const lock{sim.mutex};
  auto const* a = sim.find(dptr);
  if (a == nullptr || a->kind != Allocation::Kind::device) {
    return sim.misuse(
      "cuIpcGetMemHandle", "not device memory allocated by this process", CUDA_ERROR_INVALID_VALUE);
  }
  write_handle(
    *pHandle,
    Handle{
      handle_magic, HandleKind::memory, ::getpid(), a->memfd, a->size, a->buffer_id, a->device});
  ++get_mem_calls;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags)
{
  CUDASIM_ENTER("cuIpcOpenMemHandle");
  auto& sim = Simulator::get();
  if (pdptr == nullptr || (Flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Handle h{};
  if (auto r = read_handle(handle, HandleKind::memory, h, "cuIpcOpenMemHandle");
      r != CUDA_SUCCESS) {
    return r;
  }
  auto* ctx = sim.current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  if (h.pid == ::getpid()) {
    return sim.misuse("cuIpcOpenMemHandle",
                      "a handle cannot be opened in the process that exported it",
                      CUDA_ERROR_INVALID_CONTEXT);
  }
  if (h.device != ctx->device) {
    return sim.misuse("cuIpcOpenMemHandle",
                      "memory of device " + std::to_string(h.device) + " opened with device " +
                        std::to_string(ctx->device) + "'s context current (no peer access)",
                      CUDA_ERROR_INVALID_VALUE);
  }
  int const fd = open_remote(h, "cudasim-" + std::to_string(h.buffer_id));
  if (fd < 0) {
    return sim.misuse("cuIpcOpenMemHandle",
                      "the exporting process or its allocation is gone",
                      CUDA_ERROR_INVALID_VALUE);
  }
  std::lock_guard const lock{sim.mutex};
  Allocation a{Allocation::Kind::ipc_opened,
               0,
               h.size,
               nullptr,
               0,
               fd,
               ctx,
               ctx->device,
               sim.next_buffer_id++};
  a.ipc_buffer_id = h.buffer_id;
  a.ipc_pid       = h.pid;
  if (auto r = cudasim::map_shared(fd, h.size, a.base, a.bytes, a.mapped_size); r != CUDA_SUCCESS) {
    ::close(fd);
    return r;
  }
  sim.allocations.emplace(a.base, a);
  *pdptr = a.base;
  ++open_mem_calls;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr)
{
  CUDASIM_ENTER("cuIpcCloseMemHandle");
  CUresult const r = cudasim::release_allocation("cuIpcCloseMemHandle",
                                                 dptr,
                                                 Allocation::Kind::ipc_opened,
                                                 "not memory opened with cuIpcOpenMemHandle");
  if (r == CUDA_SUCCESS) { ++close_mem_calls; }
  return r;
}

/// For tests (dlsym): successful calls so far of cuIpcGetMemHandle ("get"), cuIpcOpenMemHandle
/// ("open") or cuIpcCloseMemHandle ("close") in this process.
unsigned long long cudasim_ipc_call_count(char const* which)
{
  std::string const name{which};
  if (name == "get") { return get_mem_calls.load(); }
  if (name == "open") { return open_mem_calls.load(); }
  if (name == "close") { return close_mem_calls.load(); }
  return ~0ULL;
}

CUresult CUDAAPI cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event)
{
  CUDASIM_ENTER("cuIpcGetEventHandle");
  auto& sim = Simulator::get();
  if (pHandle == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  std::lock_guard const lock{sim.mutex};
  if (event == nullptr || sim.events.count(event) == 0) {
    return sim.misuse(
      "cuIpcGetEventHandle", "unknown or destroyed event", CUDA_ERROR_INVALID_HANDLE);
  }
  if (event->memfd < 0) {
    return sim.misuse("cuIpcGetEventHandle",
                      "the event was not created with CU_EVENT_INTERPROCESS",
                      CUDA_ERROR_INVALID_VALUE);
  }
  write_handle(*pHandle,
               Handle{handle_magic, HandleKind::event, ::getpid(), event->memfd, 0, 0, -1});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle)
{
  CUDASIM_ENTER("cuIpcOpenEventHandle");
  auto& sim = Simulator::get();
  if (phEvent == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  Handle h{};
  if (auto r = read_handle(handle, HandleKind::event, h, "cuIpcOpenEventHandle");
      r != CUDA_SUCCESS) {
    return r;
  }
  auto* ctx = sim.current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  int const fd = open_remote(h, "cudasim-event");
  if (fd < 0) {
    return sim.misuse("cuIpcOpenEventHandle",
                      "the exporting process or its event is gone",
                      CUDA_ERROR_INVALID_VALUE);
  }
  auto state = map_event_state(fd);
  if (!state) {
    ::close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard const lock{sim.mutex};
  auto* event =
    new CUevent_st{ctx, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS, std::move(state), fd};
  sim.events.insert(event);
  *phEvent = event;
  return CUDA_SUCCESS;
}

}  // extern "C"
