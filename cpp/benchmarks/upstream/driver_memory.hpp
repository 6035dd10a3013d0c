/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What the upstream comparison's programs share that calls the CUDA driver API directly (not
 * the runtime, so that they also run on the project's driver simulator): errors, the primary
 * context of device 0, and the memory their reads land in.
 */
#pragma once

#include <cuda.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "../reader_workload.hpp"

namespace kvikio::bench::driver {

/// Throws std::runtime_error naming `what` and the error unless `r` is CUDA_SUCCESS.
inline void check(CUresult r, char const* what)
{
  if (r != CUDA_SUCCESS) {
    char const* name = nullptr;
    (void)cuGetErrorName(r, &name);
    throw std::runtime_error(std::string{what} + ": " + (name != nullptr ? name : "?"));
  }
}

/// Device 0's primary context, made current on the calling thread.
inline CUcontext primary_context()
{
  check(cuInit(0), "cuInit");
  CUdevice dev{};
  CUcontext ctx{};
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return ctx;
}

/// Device memory of the current context, or pinned host memory.
inline WorkloadMemory memory(bool device)
{
  return {[device](std::size_t n) {
            CUdeviceptr d{};
            void* h = nullptr;
            if (device) {
              check(cuMemAlloc(&d, n), "cuMemAlloc");
              return reinterpret_cast<void*>(d);
            }
            check(cuMemHostAlloc(&h, n, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
            return h;
          },
          [device](void* p) {
            (void)(device ? cuMemFree(reinterpret_cast<CUdeviceptr>(p)) : cuMemFreeHost(p));
          },
          [device](void* host, void const* mem, std::size_t n) {
            if (!device) {
              std::memcpy(host, mem, n);
              return;
            }
            check(cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(mem), n), "cuMemcpyDtoH");
          }};
}

}  // namespace kvikio::bench::driver
