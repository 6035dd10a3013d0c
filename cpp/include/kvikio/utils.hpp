/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file utils.hpp
 * @brief Facts about pointers and CUDA contexts (and, from detail/utils.hpp, the page size and
 * size conversions).
 *
 * Without a CUDA driver every pointer is host memory and the context functions throw.
 */

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include <cuda.h>

#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>

namespace kvikio {

/**
 * @brief An integer widened to `std::int64_t`.
 * @throws std::overflow_error if an unsigned value does not fit.
 */
template <typename T, std::enable_if_t<std::is_integral_v<T>>* = nullptr>
[[nodiscard]] std::int64_t convert_to_64bit(T value)
{
  if constexpr (std::numeric_limits<T>::max() > std::numeric_limits<std::int64_t>::max()) {
    KVIKIO_EXPECT(
      value <= static_cast<T>(std::numeric_limits<std::int64_t>::max()),
      "convert_to_64bit(x): x too large to fit std::int64_t (x = " + std::to_string(value) + ")",
      std::overflow_error);
  }
  return static_cast<std::int64_t>(value);
}

/// @brief A `std::uint64_t` as it is.
[[nodiscard]] inline std::uint64_t convert_to_64bit(std::uint64_t value) { return value; }

/// @brief A floating-point value widened to `double`.
template <typename T, std::enable_if_t<std::is_floating_point_v<T>>* = nullptr>
[[nodiscard]] double convert_to_64bit(T value)
{
  return static_cast<double>(value);
}

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

namespace detail {
/**
 * @brief Whether `ptr` is host memory the CUDA driver does not know (pageable: neither pinned,
 * nor registered, nor managed); true for everything when no driver is loaded.
 * @throws kvikio::CUfileException as is_host_memory().
 */
[[nodiscard]] bool is_pageable_host_memory(void const* ptr);
}  // namespace detail

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
  PushAndPopContext(CUcontext ctx);  // NOLINT(google-explicit-constructor): public API
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

/// @brief A future that already holds `t`.
template <typename T>
[[nodiscard]] std::future<std::decay_t<T>> make_ready_future(T&& t)
{
  std::promise<std::decay_t<T>> promise;
  auto future = promise.get_future();
  promise.set_value(std::forward<T>(t));
  return future;
}

/**
 * @brief Whether a future is ready, without blocking.
 * @throws std::invalid_argument if `future` has no shared state (default-constructed or taken).
 */
template <typename T>
[[nodiscard]] bool is_future_done(T const& future)
{
  KVIKIO_EXPECT(future.valid(),
                "The future object does not refer to a valid shared state.",
                std::invalid_argument);
  return future.wait_for(std::chrono::seconds::zero()) != std::future_status::timeout;
}

}  // namespace kvikio
