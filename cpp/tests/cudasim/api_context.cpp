/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Initialisation, errors, devices and contexts.
 */
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "simulator.hpp"

using cudasim::Simulator;

namespace {

bool valid_device(CUdevice dev) { return dev >= 0 && dev < Simulator::get().knobs().devices; }

// Caller holds the mutex.
bool valid_context(CUctx_st* ctx)
{
  return ctx != nullptr && Simulator::get().contexts.count(ctx) > 0;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuGetErrorName(CUresult error, char const** pStr)
{
  CUDASIM_ENTER_NO_INIT("cuGetErrorName");
  if (pStr == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  *pStr = cudasim::result_name(error);
  return *pStr == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, char const** pStr)
{
  CUDASIM_ENTER_NO_INIT("cuGetErrorString");
  if (pStr == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  // The simulator keeps no prose of its own: the description is the name.
  *pStr = cudasim::result_name(error);
  return *pStr == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
  CUDASIM_ENTER_NO_INIT("cuInit");
  if (Flags != 0) { return CUDA_ERROR_INVALID_VALUE; }
  if (Simulator::get().forked_after_init()) { return CUDA_ERROR_NOT_INITIALIZED; }
  Simulator::get().initialize();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* driverVersion)
{
  CUDASIM_ENTER_NO_INIT("cuDriverGetVersion");
  if (driverVersion == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  *driverVersion = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count)
{
  CUDASIM_ENTER("cuDeviceGetCount");
  if (count == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  *count = Simulator::get().knobs().devices;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal)
{
  CUDASIM_ENTER("cuDeviceGet");
  if (device == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (!valid_device(ordinal)) { return CUDA_ERROR_INVALID_DEVICE; }
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev)
{
  CUDASIM_ENTER("cuDeviceGetName");
  if (name == nullptr || len <= 0) { return CUDA_ERROR_INVALID_VALUE; }
  if (!valid_device(dev)) { return CUDA_ERROR_INVALID_DEVICE; }
  std::snprintf(name, static_cast<std::size_t>(len), "cudasim device %d", dev);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev)
{
  CUDASIM_ENTER("cuDeviceGetAttribute");
  if (pi == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (!valid_device(dev)) { return CUDA_ERROR_INVALID_DEVICE; }
  // Values as an H100 (driver 580) reports them, for the attributes KvikIO reads.
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *pi = dev; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: {  // the simulated topology (CUDASIM_NUMA_NODES)
      auto const& k = Simulator::get().knobs();
      *pi           = dev * k.numa_nodes / k.devices;
      break;
    }
    default:
      return Simulator::get().misuse(
        "cuDeviceGetAttribute",
        "attribute " + std::to_string(static_cast<int>(attrib)) + " is not simulated; add it",
        CUDA_ERROR_INVALID_VALUE);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev)
{
  CUDASIM_ENTER("cuDeviceGetUuid");
  if (uuid == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (!valid_device(dev)) { return CUDA_ERROR_INVALID_DEVICE; }
  std::memset(uuid->bytes, 0, sizeof(uuid->bytes));
  std::memcpy(uuid->bytes, "cudasim-", 8);
  uuid->bytes[15] = static_cast<char>(dev);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev)
{
  CUDASIM_ENTER("cuDevicePrimaryCtxRetain");
  if (pctx == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (!valid_device(dev)) { return CUDA_ERROR_INVALID_DEVICE; }
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  auto& ctx = sim.primary[static_cast<std::size_t>(dev)];
  if (ctx == nullptr) {
    // The primary context keeps its handle for the life of the process, as the driver's does.
    ctx = new CUctx_st{dev, true, 0};
    sim.contexts.insert(ctx);
  }
  ++ctx->primary_refcount;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
  CUDASIM_ENTER("cuDevicePrimaryCtxRelease");
  if (!valid_device(dev)) { return CUDA_ERROR_INVALID_DEVICE; }
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  auto* ctx = sim.primary[static_cast<std::size_t>(dev)];
  if (ctx == nullptr || ctx->primary_refcount == 0) {
    return sim.misuse("cuDevicePrimaryCtxRelease",
                      "the primary context is not retained",
                      CUDA_ERROR_INVALID_CONTEXT);
  }
  --ctx->primary_refcount;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active)
{
  CUDASIM_ENTER("cuDevicePrimaryCtxGetState");
  if (flags == nullptr || active == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (!valid_device(dev)) { return CUDA_ERROR_INVALID_DEVICE; }
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  auto const* ctx = sim.primary[static_cast<std::size_t>(dev)];
  *active         = ctx != nullptr && ctx->primary_refcount > 0 ? 1 : 0;
  *flags          = ctx != nullptr ? ctx->flags : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate(CUcontext* pctx,
                             CUctxCreateParams* params,
                             unsigned int flags,
                             CUdevice dev)
{
  CUDASIM_ENTER("cuCtxCreate");
  if (pctx == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (params != nullptr) {
    return Simulator::get().misuse("cuCtxCreate",
                                   "execution-affinity or CIG parameters are not simulated",
                                   CUDA_ERROR_INVALID_VALUE);
  }
  if (!valid_device(dev)) { return CUDA_ERROR_INVALID_DEVICE; }
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  CUctx_st* ctx = nullptr;
  if (sim.knobs().reuse_context_handles && !sim.destroyed_contexts.empty()) {
    // As a driver may: the new context at a destroyed one's address, with an id of its own.
    ctx = *sim.destroyed_contexts.begin();
    sim.destroyed_contexts.erase(sim.destroyed_contexts.begin());
    ctx->~CUctx_st();
    new (ctx) CUctx_st{dev, false, flags};
  } else {
    ctx = new CUctx_st{dev, false, flags};
  }
  sim.contexts.insert(ctx);
  Simulator::context_stack().push_back(ctx);
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
  CUDASIM_ENTER("cuCtxDestroy");
  auto& sim = Simulator::get();
  {
    std::lock_guard const lock{sim.mutex};
    if (!valid_context(ctx)) {
      return sim.misuse("cuCtxDestroy", "unknown or destroyed context", CUDA_ERROR_INVALID_CONTEXT);
    }
    if (ctx->primary) {
      return sim.misuse("cuCtxDestroy",
                        "a primary context is released, never destroyed",
                        CUDA_ERROR_INVALID_CONTEXT);
    }
  }
  cudasim::synchronize_streams(ctx);
  std::vector<CUstream_st*> streams;
  {
    std::lock_guard const lock{sim.mutex};
    streams.assign(ctx->streams.begin(), ctx->streams.end());
    for (auto* s : streams) {
      sim.streams.erase(s);
      sim.draining_streams.insert(s);
    }
    for (auto it = sim.events.begin(); it != sim.events.end();) {
      it = (*it)->ctx == ctx ? (delete *it, sim.events.erase(it)) : std::next(it);
    }
    // The driver frees what was allocated in the context.
    for (auto it = sim.allocations.begin(); it != sim.allocations.end();) {
      if (it->second.ctx == ctx) {
        cudasim::unmap_allocation(it->second);
        it = sim.allocations.erase(it);
      } else {
        ++it;
      }
    }
    sim.contexts.erase(ctx);
    sim.destroyed_contexts.insert(ctx);
    auto& stack = Simulator::context_stack();
    if (!stack.empty() && stack.back() == ctx) { stack.pop_back(); }
  }
  for (auto* s : streams) {
    cudasim::destroy_stream(s);
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
  CUDASIM_ENTER("cuCtxPushCurrent");
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  if (!valid_context(ctx)) {
    return sim.misuse(
      "cuCtxPushCurrent", "unknown or destroyed context", CUDA_ERROR_INVALID_CONTEXT);
  }
  Simulator::context_stack().push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* pctx)
{
  CUDASIM_ENTER("cuCtxPopCurrent");
  auto& stack = Simulator::context_stack();
  if (stack.empty()) { return CUDA_ERROR_INVALID_CONTEXT; }
  if (pctx != nullptr) { *pctx = stack.back(); }
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx)
{
  CUDASIM_ENTER("cuCtxGetCurrent");
  if (pctx == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  *pctx = Simulator::get().current_context();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
  CUDASIM_ENTER("cuCtxSetCurrent");
  auto& sim   = Simulator::get();
  auto& stack = Simulator::context_stack();
  if (ctx == nullptr) {
    if (!stack.empty()) { stack.pop_back(); }
    return CUDA_SUCCESS;
  }
  std::lock_guard const lock{sim.mutex};
  if (!valid_context(ctx)) {
    return sim.misuse(
      "cuCtxSetCurrent", "unknown or destroyed context", CUDA_ERROR_INVALID_CONTEXT);
  }
  if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long* ctx_id)
{
  CUDASIM_ENTER("cuCtxGetId");
  if (ctx_id == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  if (ctx == nullptr) { ctx = sim.current_context(); }
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  if (!valid_context(ctx)) {
    return sim.misuse("cuCtxGetId", "unknown or destroyed context", CUDA_ERROR_INVALID_CONTEXT);
  }
  *ctx_id = ctx->id;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device)
{
  CUDASIM_ENTER("cuCtxGetDevice");
  if (device == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  auto* ctx = Simulator::get().current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize()
{
  CUDASIM_ENTER("cuCtxSynchronize");
  auto* ctx = Simulator::get().current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  cudasim::synchronize_streams(ctx);
  return CUDA_SUCCESS;
}

}  // extern "C"
