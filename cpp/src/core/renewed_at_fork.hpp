/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file core/renewed_at_fork.hpp
 * @brief A process-wide object that a child of fork() replaces with a fresh one.
 */

#include <atomic>
#include <memory>

namespace kvikio::detail {

/**
 * @brief A process-wide object made at its first use, never destroyed (threads of its own may use
 * it until the process ends), and replaced by a fresh one in a child of fork() whose parent had
 * made it: the parent's may hold what the child does not inherit (threads, pinned memory) and a
 * mutex that was locked at the fork. The parent's is left behind in the child, never freed.
 *
 * Constant-initialised: declare it at namespace scope and register the child's handler in the
 * same file: `RenewedAtFork<Pool> pool;` and
 * `int const renewed = ::pthread_atfork(nullptr, nullptr, [] { pool.renew(); });`.
 * `T` is made by `new T()` without a lock, so its constructor starts no thread and takes nothing
 * that two made at once could not both hold (of two threads that make one at once, one's is
 * kept).
 */
template <typename T>
class RenewedAtFork {
 public:
  constexpr RenewedAtFork() noexcept             = default;
  RenewedAtFork(RenewedAtFork const&)            = delete;
  RenewedAtFork& operator=(RenewedAtFork const&) = delete;

  /// @brief The object, made by the first call.
  T& get()
  {
    if (T* const object = current_.load(std::memory_order_acquire)) { return *object; }
    auto made  = std::make_unique<T>();
    T* already = nullptr;
    if (current_.compare_exchange_strong(already, made.get())) { return *made.release(); }
    return *already;
  }

  /// @brief In a child of fork() (its only thread): a fresh object, if the parent had made one.
  void renew()
  {
    if (current_.load() != nullptr) { current_.store(new T()); }
  }

 private:
  std::atomic<T*> current_{nullptr};
};

}  // namespace kvikio::detail
