/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/utils.hpp>

#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include <cctype>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <kvikio/error.hpp>

namespace kvikio {

std::size_t get_page_size()
{
  static std::size_t const size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
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
namespace {
std::atomic<unsigned int> forks{0};
// Registered as the library loads, before any thread of its own exists.
int const fork_counter_registered =
  ::pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
}  // namespace

unsigned int fork_generation() noexcept { return forks.load(std::memory_order_relaxed); }

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
