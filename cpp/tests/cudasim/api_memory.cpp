/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Memory: device allocations, pinned and registered host memory, pointer attributes,
 * synchronous copies and memsets.
 *
 * Device memory is a shared-memory file (memfd, so that IPC can map it in another process)
 * mapped twice: once where the simulator reads and writes it, and once PROT_NONE at the address
 * handed out. A host thread that dereferences a device pointer crashes, as on a GPU.
 */
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "memory.hpp"
#include "simulator.hpp"

using cudasim::Allocation;
using cudasim::Simulator;

namespace cudasim {

std::size_t page_round_size(std::size_t n)
{
  auto const page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

void unmap_allocation(Allocation const& a)
{
  switch (a.kind) {
    case Allocation::Kind::device:
    case Allocation::Kind::ipc_opened:
      ::munmap(reinterpret_cast<void*>(a.base), a.mapped_size);
      ::munmap(a.bytes, a.mapped_size);
      if (a.memfd >= 0) { ::close(a.memfd); }
      break;
    case Allocation::Kind::pinned: ::munmap(a.bytes, a.mapped_size); break;
    case Allocation::Kind::registered: break;  // the caller's memory
  }
}

CUresult map_shared(
  int fd, std::size_t size, std::uintptr_t& base, std::byte*& bytes, std::size_t& mapped)
{
  mapped      = page_round_size(size);
  void* alias = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (alias == MAP_FAILED) { return CUDA_ERROR_OUT_OF_MEMORY; }
  void* guard =
    ::mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (guard == MAP_FAILED) {
    ::munmap(alias, mapped);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  base  = reinterpret_cast<std::uintptr_t>(guard);
  bytes = static_cast<std::byte*>(alias);
  return CUDA_SUCCESS;
}

namespace {

// The device whose engines run an operation on `stream`, or -1 where the stream is not valid
// (enqueuing reports that). Caller holds mutex.
int executing_device(CUstream stream)
{
  auto& sim = Simulator::get();
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    CUctx_st* const ctx = sim.current_context();
    return ctx == nullptr ? -1 : ctx->device;
  }
  return sim.streams.count(stream) == 0 ? -1 : stream->ctx->device;
}

}  // namespace

CUresult device_operand(
  char const* entry, CUdeviceptr ptr, std::size_t nbytes, std::byte*& bytes, CUstream stream)
{
  auto& sim = Simulator::get();
  auto* a   = sim.find(ptr, nbytes == 0 ? 1 : nbytes);
  if (a == nullptr ||
      (a->kind != Allocation::Kind::device && a->kind != Allocation::Kind::ipc_opened)) {
    auto* any = sim.find(ptr);
    std::string why =
      any == nullptr ? "is not device memory (freed, never allocated, or pageable host memory)"
      : (any->kind == Allocation::Kind::device || any->kind == Allocation::Kind::ipc_opened)
        ? "runs past the end of its allocation"
        : "is host memory used as device memory";
    return sim.misuse(
      entry,
      "device pointer " + std::to_string(ptr) + " + " + std::to_string(nbytes) + " bytes " + why,
      CUDA_ERROR_INVALID_VALUE);
  }
  if (int const device = executing_device(stream); device >= 0 && a->device != device) {
    return sim.misuse(entry,
                      "device pointer " + std::to_string(ptr) + " is memory of device " +
                        std::to_string(a->device) + ", used by an operation on device " +
                        std::to_string(device) + " (no peer access)",
                      CUDA_ERROR_INVALID_VALUE);
  }
  bytes = a->bytes + (ptr - a->base);
  return CUDA_SUCCESS;
}

CUresult host_operand(
  char const* entry, void const* ptr, std::size_t nbytes, std::byte*& bytes, bool& pageable)
{
  auto& sim    = Simulator::get();
  auto const p = reinterpret_cast<std::uintptr_t>(ptr);
  auto* a      = sim.find(p);
  if (a != nullptr &&
      (a->kind == Allocation::Kind::device || a->kind == Allocation::Kind::ipc_opened)) {
    return sim.misuse(
      entry, "host pointer " + std::to_string(p) + " is device memory", CUDA_ERROR_INVALID_VALUE);
  }
  if (ptr == nullptr && nbytes > 0) { return CUDA_ERROR_INVALID_VALUE; }
  if (a != nullptr && nbytes > a->base + a->size - p) {
    return sim.misuse(
      entry, "host range runs past the end of its pinned allocation", CUDA_ERROR_INVALID_VALUE);
  }
  pageable = a == nullptr;
  bytes    = reinterpret_cast<std::byte*>(const_cast<void*>(ptr));
  return CUDA_SUCCESS;
}

CUresult classify(
  char const* entry, std::uintptr_t ptr, std::size_t nbytes, Operand& out, CUstream stream)
{
  auto& sim = Simulator::get();
  auto* a   = sim.find(ptr);
  if (a != nullptr &&
      (a->kind == Allocation::Kind::device || a->kind == Allocation::Kind::ipc_opened)) {
    out.pageable = false;
    return device_operand(entry, ptr, nbytes, out.bytes, stream);
  }
  return host_operand(entry, reinterpret_cast<void const*>(ptr), nbytes, out.bytes, out.pageable);
}

CUresult run_on_stream(char const* entry,
                       CUstream handle,
                       std::function<void()> work,
                       bool synchronous)
{
  auto& sim = Simulator::get();
  std::unique_lock lock{sim.mutex};
  CUresult result{};
  CUstream_st* stream = resolve_stream(handle, entry, result);
  if (stream == nullptr) { return result; }
  auto const seq = enqueue(stream, Operation{std::move(work), {}, 0, false});
  lock.unlock();
  if (synchronous) { wait_for(stream, seq); }
  return CUDA_SUCCESS;
}

CUresult release_allocation(char const* entry,
                            std::uintptr_t base,
                            Allocation::Kind kind,
                            char const* why)
{
  auto& sim = Simulator::get();
  Allocation released{};
  {
    std::lock_guard const lock{sim.mutex};
    auto it = sim.allocations.find(base);
    if (it == sim.allocations.end() || it->second.kind != kind) {
      return sim.misuse(entry, why, CUDA_ERROR_INVALID_VALUE);
    }
    released = it->second;
    sim.allocations.erase(it);  // no new operation can reach it from here on
  }
  // Like the driver, releasing waits for work in flight, which may still use the memory.
  synchronize_streams(nullptr);
  std::lock_guard const lock{sim.mutex};
  unmap_allocation(released);
  return CUDA_SUCCESS;
}

CUresult synchronize_legacy_stream(char const* entry)
{
  auto& sim = Simulator::get();
  std::unique_lock lock{sim.mutex};
  CUresult result{};
  CUstream_st* stream = resolve_stream(nullptr, entry, result);
  if (stream == nullptr) { return result; }
  auto const seq = stream->enqueued;
  lock.unlock();
  wait_for(stream, seq);
  return CUDA_SUCCESS;
}

CUresult staged_copy_to_device(
  char const* entry, CUstream stream, std::byte* dst, std::byte const* src, std::size_t n)
{
  auto staged = std::make_shared<std::vector<std::byte>>(src, src + n);
  return run_on_stream(
    entry, stream, [dst, staged] { dma_copy(dst, staged->data(), staged->size()); }, false);
}

}  // namespace cudasim

using cudasim::device_operand;
using cudasim::host_operand;
using cudasim::run_on_stream;

extern "C" {

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* dptr, size_t bytesize)
{
  CUDASIM_ENTER("cuMemAlloc");
  auto& sim = Simulator::get();
  if (dptr == nullptr || bytesize == 0) { return CUDA_ERROR_INVALID_VALUE; }
  auto* ctx = sim.current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  std::lock_guard const lock{sim.mutex};
  auto const id          = sim.next_buffer_id++;
  std::string const name = "cudasim-" + std::to_string(id);
  int const fd           = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytesize)) != 0) {
    if (fd >= 0) { ::close(fd); }
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Allocation a{Allocation::Kind::device, 0, bytesize, nullptr, 0, fd, ctx, ctx->device, id};
  if (auto r = cudasim::map_shared(fd, bytesize, a.base, a.bytes, a.mapped_size);
      r != CUDA_SUCCESS) {
    ::close(fd);
    return r;
  }
  sim.allocations.emplace(a.base, a);
  *dptr = a.base;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
  CUDASIM_ENTER("cuMemFree");
  if (dptr == 0) { return CUDA_SUCCESS; }
  return cudasim::release_allocation(
    "cuMemFree", dptr, Allocation::Kind::device, "not the start of a live device allocation");
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags)
{
  CUDASIM_ENTER("cuMemHostAlloc");
  auto& sim = Simulator::get();
  if (pp == nullptr || bytesize == 0) { return CUDA_ERROR_INVALID_VALUE; }
  if ((Flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                 CU_MEMHOSTALLOC_WRITECOMBINED)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* ctx = sim.current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  std::size_t const mapped = cudasim::page_round_size(bytesize);
  void* mem = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) { return CUDA_ERROR_OUT_OF_MEMORY; }
  std::lock_guard const lock{sim.mutex};
  auto const base = reinterpret_cast<std::uintptr_t>(mem);
  sim.allocations.emplace(base,
                          Allocation{Allocation::Kind::pinned,
                                     base,
                                     bytesize,
                                     static_cast<std::byte*>(mem),
                                     mapped,
                                     -1,
                                     ctx,
                                     ctx->device,
                                     sim.next_buffer_id++});
  *pp = mem;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void* p)
{
  CUDASIM_ENTER("cuMemFreeHost");
  return cudasim::release_allocation("cuMemFreeHost",
                                     reinterpret_cast<std::uintptr_t>(p),
                                     Allocation::Kind::pinned,
                                     "not the start of memory from cuMemHostAlloc");
}

CUresult CUDAAPI cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags)
{
  CUDASIM_ENTER("cuMemHostRegister");
  auto& sim = Simulator::get();
  if (p == nullptr || bytesize == 0) { return CUDA_ERROR_INVALID_VALUE; }
  (void)Flags;  // portable, device-map, I/O-memory, read-only: no difference here
  auto* ctx = sim.current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  std::lock_guard const lock{sim.mutex};
  auto const base = reinterpret_cast<std::uintptr_t>(p);
  // Any overlap with known memory: the first or last byte inside it, or it inside the range.
  auto it             = sim.allocations.lower_bound(base);
  bool const overlaps = sim.find(base) != nullptr || sim.find(base + bytesize - 1) != nullptr ||
                        (it != sim.allocations.end() && it->first < base + bytesize);
  if (overlaps) { return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; }
  sim.allocations.emplace(base,
                          Allocation{Allocation::Kind::registered,
                                     base,
                                     bytesize,
                                     static_cast<std::byte*>(p),
                                     bytesize,
                                     -1,
                                     ctx,
                                     ctx->device,
                                     sim.next_buffer_id++});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostUnregister(void* p)
{
  CUDASIM_ENTER("cuMemHostUnregister");
  auto& sim = Simulator::get();
  {
    std::lock_guard const lock{sim.mutex};
    auto it = sim.allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == sim.allocations.end() || it->second.kind != Allocation::Kind::registered) {
      return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    }
    sim.allocations.erase(it);
  }
  // Copies still reading the memory must finish before the caller may free it.
  cudasim::synchronize_streams(nullptr);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p, unsigned int Flags)
{
  CUDASIM_ENTER("cuMemHostGetDevicePointer");
  auto& sim = Simulator::get();
  if (pdptr == nullptr || Flags != 0) { return CUDA_ERROR_INVALID_VALUE; }
  std::lock_guard const lock{sim.mutex};
  auto* a = sim.find(reinterpret_cast<std::uintptr_t>(p));
  if (a == nullptr ||
      (a->kind != Allocation::Kind::pinned && a->kind != Allocation::Kind::registered)) {
    return sim.misuse("cuMemHostGetDevicePointer",
                      "not pinned or registered host memory",
                      CUDA_ERROR_INVALID_VALUE);
  }
  *pdptr = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the same address
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
  CUDASIM_ENTER("cuPointerGetAttribute");
  if (data == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  auto const* a = sim.find(ptr);
  if (a == nullptr) { return CUDA_ERROR_INVALID_VALUE; }  // as the driver: unknown memory
  return cudasim::pointer_attribute(*a, ptr, attribute, data);
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                        CUpointer_attribute* attributes,
                                        void** data,
                                        CUdeviceptr ptr)
{
  CUDASIM_ENTER("cuPointerGetAttributes");
  if (attributes == nullptr || data == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  auto const* a = sim.find(ptr);
  for (unsigned int i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
    // Unknown memory is not an error here: every attribute gets its "none" value.
    CUresult const r = a == nullptr ? cudasim::pointer_attribute_none(attributes[i], data[i])
                                    : cudasim::pointer_attribute(*a, ptr, attributes[i], data[i]);
    if (r == CUDA_ERROR_INVALID_VALUE && a != nullptr &&
        attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
      // e.g. HOST_POINTER of device memory: null, as the driver does in the plural query.
      cudasim::pointer_attribute_none(attributes[i], data[i]);
    } else if (r != CUDA_SUCCESS) {
      return r;
    }
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr)
{
  CUDASIM_ENTER("cuMemGetAddressRange");
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  auto const* a = sim.find(dptr);
  if (a == nullptr) { return CUDA_ERROR_NOT_FOUND; }
  if (pbase != nullptr) { *pbase = a->base; }
  if (psize != nullptr) { *psize = a->size; }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, void const* srcHost, size_t ByteCount)
{
  CUDASIM_ENTER("cuMemcpyHtoD");
  std::byte* dst = nullptr;
  std::byte* src = nullptr;
  bool pageable  = false;
  {
    std::lock_guard const lock{Simulator::get().mutex};
    if (auto r = device_operand("cuMemcpyHtoD", dstDevice, ByteCount, dst, nullptr);
        r != CUDA_SUCCESS) {
      return r;
    }
    if (auto r = host_operand("cuMemcpyHtoD", srcHost, ByteCount, src, pageable);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  if (!pageable) {
    return run_on_stream(
      "cuMemcpyHtoD", nullptr, [=] { cudasim::dma_copy(dst, src, ByteCount); }, true);
  }
  // From pageable memory the driver synchronises the stream, stages the bytes and returns before
  // they reach the device: work on other streams may still see the old bytes.
  if (auto r = cudasim::synchronize_legacy_stream("cuMemcpyHtoD"); r != CUDA_SUCCESS) { return r; }
  return cudasim::staged_copy_to_device("cuMemcpyHtoD", nullptr, dst, src, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
  CUDASIM_ENTER("cuMemcpyDtoH");
  std::byte* dst = nullptr;
  std::byte* src = nullptr;
  bool pageable  = false;
  {
    std::lock_guard const lock{Simulator::get().mutex};
    if (auto r = device_operand("cuMemcpyDtoH", srcDevice, ByteCount, src, nullptr);
        r != CUDA_SUCCESS) {
      return r;
    }
    if (auto r = host_operand("cuMemcpyDtoH", dstHost, ByteCount, dst, pageable);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return run_on_stream(
    "cuMemcpyDtoH", nullptr, [=] { cudasim::dma_copy(dst, src, ByteCount); }, true);
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
  CUDASIM_ENTER("cuMemcpyDtoD");
  std::byte* dst = nullptr;
  std::byte* src = nullptr;
  {
    std::lock_guard const lock{Simulator::get().mutex};
    if (auto r = device_operand("cuMemcpyDtoD", dstDevice, ByteCount, dst, nullptr);
        r != CUDA_SUCCESS) {
      return r;
    }
    if (auto r = device_operand("cuMemcpyDtoD", srcDevice, ByteCount, src, nullptr);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return run_on_stream(
    "cuMemcpyDtoD", nullptr, [=] { cudasim::dma_copy(dst, src, ByteCount); }, true);
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
  CUDASIM_ENTER("cuMemsetD8");
  std::byte* dst = nullptr;
  {
    std::lock_guard const lock{Simulator::get().mutex};
    if (auto r = device_operand("cuMemsetD8", dstDevice, N, dst, nullptr); r != CUDA_SUCCESS) {
      return r;
    }
  }
  return run_on_stream(
    "cuMemsetD8", nullptr, [=] { cudasim::dma_set(dst, uc, N); }, true);
}

}  // extern "C"
