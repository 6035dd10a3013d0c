/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/context.hpp"

#include <map>
#include <mutex>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

CUcontext get_primary_cuda_context(int ordinal)
{
  // Retained once and never released: a process-wide singleton holding a CUDA resource, which
  // must not be torn down at exit after the driver may already be gone.
  static std::mutex mutex;
  static std::map<int, CUcontext> contexts;
  std::lock_guard const lock{mutex};
  auto found = contexts.find(ordinal);
  if (found != contexts.end()) { return found->second; }
  auto& api = cudaAPI::instance();
  CUdevice device{};
  KVIKIO_CUDA_DRIVER_TRY(api.DeviceGet(&device, ordinal));
  CUcontext ctx{};
  KVIKIO_CUDA_DRIVER_TRY(api.DevicePrimaryCtxRetain(&ctx, device));
  contexts.emplace(ordinal, ctx);
  return ctx;
}

std::optional<CUcontext> get_context_associated_pointer(CUdeviceptr dev_ptr)
{
  CUcontext ctx{};
  CUresult const err =
    cudaAPI::instance().PointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, dev_ptr);
  // INVALID_VALUE: memory the driver does not know; a null context: memory not tied to one
  // (for example from cuMemCreate or a memory pool).
  if (err == CUDA_ERROR_INVALID_VALUE || (err == CUDA_SUCCESS && ctx == nullptr)) {
    return std::nullopt;
  }
  KVIKIO_CUDA_DRIVER_TRY(err);
  return ctx;
}

bool current_context_can_access_pointer(CUdeviceptr dev_ptr)
{
  auto& api = cudaAPI::instance();
  CUcontext current{};
  KVIKIO_CUDA_DRIVER_TRY(api.CtxGetCurrent(&current));
  if (current == nullptr) { return false; }
  CUdeviceptr mapped{};
  CUresult const err =
    api.PointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, dev_ptr);
  return err == CUDA_SUCCESS && mapped == dev_ptr;
}

CUcontext get_context_from_pointer(void const* devPtr)
{
  auto const dev_ptr = convert_void2deviceptr(devPtr);
  if (auto ctx = get_context_associated_pointer(dev_ptr)) { return *ctx; }
  if (current_context_can_access_pointer(dev_ptr)) {
    CUcontext current{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&current));
    return current;
  }
  return get_primary_cuda_context(get_device_ordinal_from_pointer(dev_ptr));
}

PushAndPopContext::PushAndPopContext(CUcontext ctx) : ctx_{ctx}
{
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxPushCurrent(ctx_));
}

PushAndPopContext::PushAndPopContext(void const* devPtr)
  : PushAndPopContext(get_context_from_pointer(devPtr))
{
}

PushAndPopContext::~PushAndPopContext() noexcept
{
  CUcontext popped{};
  CUresult const err = cudaAPI::instance().CtxPopCurrent(&popped);
  if (err != CUDA_SUCCESS || popped != ctx_) {
    KVIKIO_LOG_ERROR("PushAndPopContext: popping the context failed (",
                     detail::cuda_error_description(err),
                     ") or popped another context than the one pushed");
  }
}

namespace detail {

bool is_primary_context(CUcontext ctx) noexcept
{
  // The primary context of each device seen active, retained here once and never released: what
  // the library pins in it for every context then lasts as long as the process, even where the
  // program releases its own references (a reset, cudaDeviceReset, still ends it).
  static std::mutex mutex;
  static std::map<CUdevice, CUcontext> retained;
  try {
    {
      // A handle found primary stays so: retained here, it never names another context.
      std::lock_guard const lock{mutex};
      for (auto const& [device, primary] : retained) {
        if (primary == ctx) { return true; }
      }
    }
    auto& api = cudaAPI::instance();
    CUdevice device{};
    {
      PushAndPopContext const pushed{ctx};
      if (api.CtxGetDevice(&device) != CUDA_SUCCESS) { return false; }
    }
    std::lock_guard const lock{mutex};
    if (auto const found = retained.find(device); found != retained.end()) {
      return found->second == ctx;
    }
    unsigned int flags{};
    int active{};
    // An inactive primary context is not `ctx`; retaining it would make it (device memory).
    if (api.DevicePrimaryCtxGetState(device, &flags, &active) != CUDA_SUCCESS || active == 0) {
      return false;
    }
    CUcontext primary{};
    if (api.DevicePrimaryCtxRetain(&primary, device) != CUDA_SUCCESS) { return false; }
    retained.emplace(device, primary);
    return primary == ctx;
  } catch (...) {
    return false;
  }
}

}  // namespace detail
}  // namespace kvikio
