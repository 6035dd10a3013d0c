/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/utils.hpp
 * @brief Small helpers of the ground floor: the page size, size conversions, alignment
 * arithmetic, setting values, and a scope guard. `kvikio/utils.hpp` includes it, so the public
 * names (`kvikio::get_page_size`, ...) are where upstream has them.
 */

#include <sys/types.h>

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <kvikio/detail/logger.hpp>

namespace kvikio {

/// @brief The size of a memory page (`sysconf(_SC_PAGESIZE)`), read once.
[[nodiscard]] std::size_t get_page_size();

/**
 * @brief `x` as an `off_t`.
 * @throws kvikio::CUfileException if `x` does not fit.
 */
[[nodiscard]] off_t convert_size2off(std::size_t x);

/**
 * @brief `x` as an `ssize_t`.
 * @throws kvikio::CUfileException if `x` does not fit.
 */
[[nodiscard]] ssize_t convert_size2ssize(std::size_t x);

}  // namespace kvikio

namespace kvikio::detail {

/**
 * @brief How many times this process's ancestry forked since the library was loaded: 0 in the
 * process that loaded it, one more in each child of `fork()`. State that a child must not share
 * with its parent (an io_uring ring, threads) remembers the value it was made under.
 */
[[nodiscard]] unsigned int fork_generation() noexcept;

/// @brief `s` without leading and trailing white space, in lower case: how settings compare.
[[nodiscard]] std::string normalize_env_value(std::string_view s);

/// @brief The smallest multiple of `alignment` (a power of two) that is >= `value`.
[[nodiscard]] std::size_t align_up(std::size_t value, std::size_t alignment);
/// @brief align_up() of an address.
[[nodiscard]] void* align_up(void* addr, std::size_t alignment);
/// @brief The largest multiple of `alignment` (a power of two) that is <= `value`.
[[nodiscard]] std::size_t align_down(std::size_t value, std::size_t alignment);
/// @brief align_down() of an address.
[[nodiscard]] void* align_down(void* addr, std::size_t alignment);
/// @brief Whether `value` is a multiple of `alignment` (a power of two).
[[nodiscard]] bool is_aligned(std::size_t value, std::size_t alignment);
/// @brief is_aligned() of an address.
[[nodiscard]] bool is_aligned(void* addr, std::size_t alignment);

/**
 * @brief Runs a callable when the scope ends, however it ends; what it throws is logged, not
 * thrown.
 * @tparam F a callable taking no arguments.
 */
template <typename F>
class ScopeExit {
  static_assert(std::is_invocable_v<F>, "ScopeExit callable must be invocable with no arguments");

 public:
  /// @brief Takes the callable to run at the end of the scope.
  [[nodiscard]] explicit ScopeExit(F&& cleanup) : cleanup_(std::move(cleanup)) {}
  /// @brief Runs the callable.
  ~ScopeExit() noexcept
  {
    try {
      cleanup_();
    } catch (std::exception const& e) {
      KVIKIO_LOG_ERROR("ScopeExit cleanup failed: ", e.what());
    } catch (...) {
      KVIKIO_LOG_ERROR("ScopeExit cleanup failed with an unknown exception");
    }
  }
  ScopeExit(ScopeExit const&)            = delete;
  ScopeExit& operator=(ScopeExit const&) = delete;
  ScopeExit(ScopeExit&&)                 = delete;
  ScopeExit& operator=(ScopeExit&&)      = delete;

 private:
  F cleanup_;
};

}  // namespace kvikio::detail
