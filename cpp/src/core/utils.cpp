/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/utils.hpp>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <kvikio/error.hpp>

namespace kvikio {

namespace {
// Read when the library loads, not in a function-local static: a child of fork() forked while
// another thread initialised that static would wait for its guard forever.
std::size_t const page_size_at_load = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}  // namespace

std::size_t get_page_size()
{
  // 0 only if asked from another library's static initialiser, before this one's ran.
  return page_size_at_load != 0 ? page_size_at_load
                                : static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

off_t convert_size2off(std::size_t x)
{
  KVIKIO_EXPECT(x <= static_cast<std::size_t>(std::numeric_limits<off_t>::max()),
                "size_t argument too large to fit off_t (" + std::to_string(x) + ")");
  return static_cast<off_t>(x);
}

ssize_t convert_size2ssize(std::size_t x)
{
  KVIKIO_EXPECT(x <= static_cast<std::size_t>(std::numeric_limits<ssize_t>::max()),
                "size_t argument too large to fit ssize_t (" + std::to_string(x) + ")");
  return static_cast<ssize_t>(x);
}

}  // namespace kvikio

namespace kvikio::detail {

// Run in a child of fork() (BuiltOnceState's friend).
void forget_builds_in_progress() noexcept;

namespace {
std::atomic<unsigned int> forks{0};

// Every BuiltOnce that started a build, for the child of fork(). A fixed table, filled without a
// lock: a fork can come at any point of a registration and the child still reads it whole (a
// slot not yet stored belongs to an object whose build had not begun).
constexpr std::size_t max_built_once = 128;
std::atomic<BuiltOnceState*> built_once_table[max_built_once]{};
std::atomic<std::size_t> built_once_count{0};

// Registered as the library loads, before any thread of its own exists.
int const fork_handler_registered = ::pthread_atfork(nullptr, nullptr, [] {
  forks.fetch_add(1, std::memory_order_relaxed);
  forget_builds_in_progress();
});
}  // namespace

unsigned int fork_generation() noexcept { return forks.load(std::memory_order_relaxed); }

void forget_builds_in_progress() noexcept
{
  std::size_t const n = std::min(built_once_count.load(), max_built_once);
  for (std::size_t i = 0; i < n; ++i) {
    BuiltOnceState* const object = built_once_table[i].load();
    // Its builder is a thread of the parent, absent here: the child's first use builds anew.
    if (object != nullptr) {
      int expected = BuiltOnceState::building;
      object->state_.compare_exchange_strong(expected, BuiltOnceState::empty);
    }
  }
}

bool BuiltOnceState::claim()
{
  if (!registered_.load(std::memory_order_acquire)) {
    // Two threads may both register it: the child then looks at it twice, which is harmless.
    std::size_t const slot = built_once_count.fetch_add(1);
    if (slot >= max_built_once) {
      throw std::logic_error("KvikIO: more than " + std::to_string(max_built_once) +
                             " objects built once (detail::BuiltOnce): raise max_built_once");
    }
    built_once_table[slot].store(this);
    registered_.store(true, std::memory_order_release);
  }
  while (true) {
    int seen = state_.load(std::memory_order_acquire);
    if (seen == built) { return false; }
    if (seen == empty && state_.compare_exchange_weak(seen, building)) { return true; }
    if (seen == building) { state_.wait(building, std::memory_order_acquire); }
  }
}

void BuiltOnceState::publish(void* value) noexcept
{
  value_.store(value, std::memory_order_release);
  state_.store(built, std::memory_order_release);
  state_.notify_all();
}

void BuiltOnceState::abandon() noexcept
{
  state_.store(empty, std::memory_order_release);
  state_.notify_all();
}

std::string normalize_env_value(std::string_view s)
{
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  std::string out{s};
  for (auto& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::size_t align_up(std::size_t value, std::size_t alignment)
{
  return (value + alignment - 1) & ~(alignment - 1);
}

void* align_up(void* addr, std::size_t alignment)
{
  return reinterpret_cast<void*>(align_up(reinterpret_cast<std::uintptr_t>(addr), alignment));
}

std::size_t align_down(std::size_t value, std::size_t alignment)
{
  return value & ~(alignment - 1);
}

void* align_down(void* addr, std::size_t alignment)
{
  return reinterpret_cast<void*>(align_down(reinterpret_cast<std::uintptr_t>(addr), alignment));
}

bool is_aligned(std::size_t value, std::size_t alignment) { return (value & (alignment - 1)) == 0; }

bool is_aligned(void* addr, std::size_t alignment)
{
  return is_aligned(reinterpret_cast<std::uintptr_t>(addr), alignment);
}

}  // namespace kvikio::detail
