/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file utils.hpp
 * @brief Facts about pointers and CUDA contexts.
 *
 * Without a CUDA driver every pointer is host memory and the context functions throw.
 */

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <tuple>

#include <cuda.h>

namespace kvikio {

/// @brief A pointer as the driver's `CUdeviceptr`.
[[nodiscard]] inline CUdeviceptr convert_void2deviceptr(void const* devPtr) noexcept
{
  return reinterpret_cast<CUdeviceptr>(devPtr);
}

/**
 * @brief Whether `ptr` is host memory (pageable or pinned), as opposed to device memory.
 *
 * Memory the driver does not know is host memory; so is everything when no driver is loaded.
 * @throws kvikio::CUfileException if the driver fails the query for another reason.
 */
[[nodiscard]] bool is_host_memory(void const* ptr);

/**
 * @brief Ordinal of the device that owns `dev_ptr`.
 * @throws kvikio::CUfileException if it is not device memory or there is no driver.
 */
[[nodiscard]] int get_device_ordinal_from_pointer(CUdeviceptr dev_ptr);

/**
 * @brief The primary context of device `ordinal`, retained once per process and never released.
 * @throws kvikio::CUfileException if there is no such device.
 */
[[nodiscard]] CUcontext get_primary_cuda_context(int ordinal);

/// @brief The context `dev_ptr` was allocated in, if the driver records one.
[[nodiscard]] std::optional<CUcontext> get_context_associated_pointer(CUdeviceptr dev_ptr);

/// @brief Whether the current context can dereference `dev_ptr` (false with no current context).
[[nodiscard]] bool current_context_can_access_pointer(CUdeviceptr dev_ptr);

/**
 * @brief The context to use for an operation on `devPtr`.
 *
 * In order: the context the memory was allocated in; the current context if it can access the
 * memory; the primary context of the device that owns it.
 * @throws kvikio::CUfileException with no driver, or if `devPtr` is not device memory.
 */
[[nodiscard]] CUcontext get_context_from_pointer(void const* devPtr);

/**
 * @brief Makes a context current for the lifetime of this object (push in the constructor, pop
 * in the destructor).
 */
class PushAndPopContext {
 public:
  /// @throws kvikio::CUfileException if the push fails.
  explicit PushAndPopContext(CUcontext ctx);
  /// @brief Pushes `get_context_from_pointer(devPtr)`.
  explicit PushAndPopContext(void const* devPtr);
  /// @brief Pops; a failure is logged, not thrown.
  ~PushAndPopContext() noexcept;

  PushAndPopContext(PushAndPopContext const&)            = delete;
  PushAndPopContext& operator=(PushAndPopContext const&) = delete;

 private:
  CUcontext ctx_;
};

/**
 * @brief The allocation that contains `devPtr`: (base address, size in bytes, offset of
 * `devPtr` from the base).
 *
 * @param devPtr an address inside a device allocation.
 * @param ctx the context to query in; if null, `get_context_from_pointer(devPtr)`.
 * @throws kvikio::CUfileException if `devPtr` is not in a device allocation.
 */
[[nodiscard]] std::tuple<void*, std::size_t, std::size_t> get_alloc_info(void const* devPtr,
                                                                         CUcontext* ctx = nullptr);

/// @brief Whether a future is ready, without blocking.
template <typename T>
[[nodiscard]] bool is_future_done(T const& future)
{
  return future.wait_for(std::chrono::seconds::zero()) != std::future_status::timeout;
}

}  // namespace kvikio
