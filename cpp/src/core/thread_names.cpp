/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What the threads of the library are called, and how many cores they share.
 */
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <kvikio/threadpool_wrapper.hpp>

#include "core/threadpool_internals.hpp"

namespace kvikio {

std::function<void()> make_thread_pool_init_task(std::string prefix)
{
  auto counter = std::make_shared<std::atomic<unsigned int>>(0);
  return [counter, prefix = std::move(prefix)]() noexcept {
    std::array<char, 16> name{};  // Linux: 15 characters and the NUL
    std::snprintf(name.data(), name.size(), "%s-%u", prefix.c_str(), counter->fetch_add(1));
    (void)::pthread_setname_np(::pthread_self(), name.data());
  };
}

std::function<void()> const& detail::lasting_thread_namer(std::string prefix)
{
  return *new std::function<void()>(make_thread_pool_init_task(std::move(prefix)));
}

namespace detail {

namespace {
// Read when the library loads, not in a function-local static: a child of fork() forked while
// another thread initialised that static would wait for its guard forever (pool workers and
// every local read's plan ask for it).
unsigned int const cores_at_load = std::thread::hardware_concurrency();
}  // namespace

unsigned int machine_cores() noexcept
{
  // 0 only if asked from another library's static initialiser, before this one's ran.
  return std::max(1U, cores_at_load != 0 ? cores_at_load : std::thread::hardware_concurrency());
}

}  // namespace detail
}  // namespace kvikio
