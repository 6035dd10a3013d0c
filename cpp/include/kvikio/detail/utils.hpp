/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/utils.hpp
 * @brief Small helpers of the ground floor: the page size, size conversions, alignment
 * arithmetic, setting values, and a scope guard. `kvikio/utils.hpp` includes it, so the public
 * names (`kvikio::get_page_size`, ...) come with `kvikio/utils.hpp`.
 */

#include <sys/types.h>

#include <atomic>
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

/**
 * @brief The part of BuiltOnce that does not depend on the type: who builds, who waits, and what
 * a child of `fork()` does with a build its parent had in progress.
 */
class BuiltOnceState {
 protected:
  constexpr BuiltOnceState() noexcept = default;
  /// @brief True: this thread builds now (publish() or abandon() follows); false: built.
  [[nodiscard]] bool claim();
  /// @brief The build ended with `value`; threads waiting for it go on.
  void publish(void* value) noexcept;
  /// @brief The build failed: the next caller builds.
  void abandon() noexcept;
  std::atomic<void*> value_{nullptr};

 private:
  friend void forget_builds_in_progress() noexcept;
  enum : int { empty = 0, building = 1, built = 2 };
  std::atomic<int> state_{empty};
  std::atomic<bool> registered_{false};
};

/**
 * @brief A process-wide object built at its first use and never destroyed, which a child of
 * `fork()` can always use: a child forked while another thread builds it builds its own (the
 * parent's half-built one is left behind). A function-local `static` would leave such a child
 * waiting forever for a thread it does not have.
 *
 * Constant-initialised: declare it `static` at namespace or function scope, as in
 * `static BuiltOnce<Pool> pool; return pool.get([] { return new Pool(); });`.
 * @tparam T the object's type.
 */
template <typename T>
class BuiltOnce : BuiltOnceState {
 public:
  constexpr BuiltOnce() noexcept         = default;
  BuiltOnce(BuiltOnce const&)            = delete;
  BuiltOnce& operator=(BuiltOnce const&) = delete;

  /**
   * @brief The object; the first call builds it with `make` (which returns a `T*` from `new`),
   * and calls made meanwhile wait for that build. If `make` throws, so does this call, and the
   * next call builds.
   */
  template <typename Make>
  T& get(Make&& make)
  {
    if (void* const value = value_.load(std::memory_order_acquire); value != nullptr) {
      return *static_cast<T*>(value);
    }
    if (claim()) {
      T* made = nullptr;
      try {
        made = std::forward<Make>(make)();
      } catch (...) {
        abandon();
        throw;
      }
      publish(made);
      return *made;
    }
    return *static_cast<T*>(value_.load(std::memory_order_acquire));
  }
};

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
