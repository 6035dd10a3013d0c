/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file shim/cuda.hpp
 * @brief The CUDA driver, loaded at run time.
 *
 * `libcuda.so.1` is opened with `dlopen`, never linked, so one build of KvikIO runs on machines
 * with and without a GPU. Every driver entry point KvikIO uses is resolved once into
 * `cudaAPI::instance()`. Without a driver, host-memory I/O still works and only an operation that
 * needs a GPU throws, saying that no CUDA driver was found.
 */

#include <any>
#include <cstddef>
#include <functional>
#include <string>

#include <cuda.h>
#include <kvikio/shim/utils.hpp>

namespace kvikio {

/**
 * @brief Every CUDA driver entry point KvikIO calls: X(member name, driver function).
 *
 * The driver function is spelled as in `cuda.h`, whose macros select the current ABI version
 * (`cuMemAlloc` is `cuMemAlloc_v2`); the symbol looked up is that versioned name. This list is
 * also what the driver simulator (cpp/tests/cudasim) must implement; its build fails otherwise.
 */
#define KVIKIO_CUDA_DRIVER_ENTRY_POINTS(X)                \
  X(GetErrorName, cuGetErrorName)                         \
  X(GetErrorString, cuGetErrorString)                     \
  X(Init, cuInit)                                         \
  X(DriverGetVersion, cuDriverGetVersion)                 \
  X(DeviceGetCount, cuDeviceGetCount)                     \
  X(DeviceGet, cuDeviceGet)                               \
  X(DeviceGetName, cuDeviceGetName)                       \
  X(DeviceGetAttribute, cuDeviceGetAttribute)             \
  X(DeviceGetUuid, cuDeviceGetUuid)                       \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)     \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease)   \
  X(DevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState) \
  X(CtxCreate, cuCtxCreate)                               \
  X(CtxDestroy, cuCtxDestroy)                             \
  X(CtxPushCurrent, cuCtxPushCurrent)                     \
  X(CtxPopCurrent, cuCtxPopCurrent)                       \
  X(CtxGetCurrent, cuCtxGetCurrent)                       \
  X(CtxSetCurrent, cuCtxSetCurrent)                       \
  X(CtxGetDevice, cuCtxGetDevice)                         \
  X(CtxGetId, cuCtxGetId)                                 \
  X(CtxSynchronize, cuCtxSynchronize)                     \
  X(PointerGetAttribute, cuPointerGetAttribute)           \
  X(PointerGetAttributes, cuPointerGetAttributes)         \
  X(MemGetAddressRange, cuMemGetAddressRange)             \
  X(MemAlloc, cuMemAlloc)                                 \
  X(MemFree, cuMemFree)                                   \
  X(MemHostAlloc, cuMemHostAlloc)                         \
  X(MemFreeHost, cuMemFreeHost)                           \
  X(MemHostRegister, cuMemHostRegister)                   \
  X(MemHostUnregister, cuMemHostUnregister)               \
  X(MemHostGetDevicePointer, cuMemHostGetDevicePointer)   \
  X(MemcpyHtoD, cuMemcpyHtoD)                             \
  X(MemcpyDtoH, cuMemcpyDtoH)                             \
  X(MemcpyDtoD, cuMemcpyDtoD)                             \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync)                   \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync)                   \
  X(MemcpyAsync, cuMemcpyAsync)                           \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync)                   \
  X(MemsetD8, cuMemsetD8)                                 \
  X(MemsetD8Async, cuMemsetD8Async)                       \
  X(StreamCreate, cuStreamCreate)                         \
  X(StreamDestroy, cuStreamDestroy)                       \
  X(StreamSynchronize, cuStreamSynchronize)               \
  X(StreamQuery, cuStreamQuery)                           \
  X(StreamWaitEvent, cuStreamWaitEvent)                   \
  X(StreamWaitValue32, cuStreamWaitValue32)               \
  X(StreamWriteValue32, cuStreamWriteValue32)             \
  X(LaunchHostFunc, cuLaunchHostFunc)                     \
  X(EventCreate, cuEventCreate)                           \
  X(EventDestroy, cuEventDestroy)                         \
  X(EventRecord, cuEventRecord)                           \
  X(EventQuery, cuEventQuery)                             \
  X(EventSynchronize, cuEventSynchronize)                 \
  X(EventElapsedTime, cuEventElapsedTime)                 \
  X(IpcGetMemHandle, cuIpcGetMemHandle)                   \
  X(IpcOpenMemHandle, cuIpcOpenMemHandle)                 \
  X(IpcCloseMemHandle, cuIpcCloseMemHandle)               \
  X(IpcGetEventHandle, cuIpcGetEventHandle)               \
  X(IpcOpenEventHandle, cuIpcOpenEventHandle)

/**
 * @brief Entry points of newer drivers: X(member name, driver function). They are null when the
 * loaded driver lacks them; callers check before use.
 */
#define KVIKIO_CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(X) \
  X(MemcpyBatchAsync, cuMemcpyBatchAsync)           \
  X(StreamBatchMemOp, cuStreamBatchMemOp)

/**
 * @brief Table of CUDA driver functions, resolved once from `libcuda.so.1`.
 *
 * Call through `KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemAlloc(&ptr, n))`.
 */
class cudaAPI {
 public:
#define KVIKIO_DETAIL_DECLARE_ENTRY(member, function) decltype(&::function) member{nullptr};
  KVIKIO_CUDA_DRIVER_ENTRY_POINTS(KVIKIO_DETAIL_DECLARE_ENTRY)
  KVIKIO_CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(KVIKIO_DETAIL_DECLARE_ENTRY)
#undef KVIKIO_DETAIL_DECLARE_ENTRY

  /// @brief The loaded driver's version as `cuDriverGetVersion` gives it (13000 is CUDA 13.0).
  int driver_version{0};

  /**
   * @brief An asynchronous copy between any two addresses (host or device, unified addressing),
   * ordered on `stream`.
   *
   * Uses `cuMemcpyBatchAsync` with `CU_MEMCPY_SRC_ACCESS_ORDER_STREAM` where the driver has it
   * (CUDA 12.8 and later) and `stream` is not the null stream, which that call refuses;
   * `cuMemcpyAsync` otherwise.
   * @return the driver's result.
   * @throws kvikio::CUfileException if no CUDA driver is loaded (see `instance()`).
   */
  static CUresult cuda_memcpy_async(CUdeviceptr dst,
                                    CUdeviceptr src,
                                    std::size_t size,
                                    CUstream stream);

  /**
   * @brief Whether memcpy_batch_async() can run on `stream`: the driver has
   * `cuMemcpyBatchAsync` (CUDA 12.8 and later) and `stream` is not the null stream, which that
   * call refuses.
   * @throws kvikio::CUfileException if no CUDA driver is loaded (see `instance()`).
   */
  [[nodiscard]] static bool can_batch_copies(CUstream stream);

  /**
   * @brief `count` asynchronous copies (`sizes[i]` bytes from `srcs[i]` to `dsts[i]`, any two
   * addresses) in one `cuMemcpyBatchAsync`, ordered on `stream` (each source is read when the
   * stream gets there: `CU_MEMCPY_SRC_ACCESS_ORDER_STREAM`). Only where can_batch_copies(stream).
   * @return the driver's result.
   * @throws kvikio::CUfileException if no CUDA driver is loaded (see `instance()`).
   */
  static CUresult memcpy_batch_async(
    CUdeviceptr* dsts, CUdeviceptr* srcs, std::size_t* sizes, std::size_t count, CUstream stream);

  /**
   * @brief The process-wide table.
   *
   * The first call loads the driver and calls `cuInit(0)`; the outcome is kept for the life of the
   * process.
   * @throws kvikio::CUfileException if no CUDA driver could be loaded, if it lacks an entry point,
   * or if `cuInit` failed (for example with no GPU); the message says which.
   */
  static cudaAPI& instance();

  cudaAPI(cudaAPI const&)            = delete;
  cudaAPI& operator=(cudaAPI const&) = delete;

 private:
  cudaAPI() = default;
  friend struct CudaDriverLoader;
};

/**
 * @brief Whether a CUDA driver was loaded and initialised (`cuInit` succeeded).
 *
 * Never throws; `false` means host-memory I/O works and GPU operations throw.
 */
bool is_cuda_available() noexcept;

namespace detail {
/**
 * @brief Why `is_cuda_available()` is false ("" when it is true).
 */
std::string cuda_unavailable_reason();

/**
 * @brief The calling thread's current context where the process has loaded and initialised the
 * CUDA driver (through this library or any other); null where it has not, or no context is
 * current. Never loads or initialises the driver.
 */
CUcontext current_context_where_cuda_is_in_use() noexcept;

/**
 * @brief For tests: the library name `dlopen` is given instead of `libcuda.so.1`.
 *
 * @throws std::logic_error if the driver was already looked for in this process.
 */
void set_cuda_driver_library_name(std::string name);
}  // namespace detail

}  // namespace kvikio
