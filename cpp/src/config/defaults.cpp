/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/defaults.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/threadpool_wrapper.hpp>

namespace kvikio {

namespace {

struct State {
  std::mutex mutex;
  detail::Settings settings;
  ThreadPool pool;

  // The pool starts with one thread and then takes the size the environment asks for: where a
  // limit on threads refuses that size, the library still works (the pool keeps one thread,
  // logged), and a size that fits can be set, instead of every call failing.
  explicit State(detail::Settings s)
    : settings{std::move(s)}, pool{1, make_thread_pool_init_task("kvikio")}
  {
    for (auto const& [name, nearest] : detail::Settings::unknown_environment()) {
      KVIKIO_LOG_WARN(name,
                      " is not a KvikIO setting and is ignored",
                      nearest.empty() ? std::string{} : " (did you mean " + nearest + "?)");
    }
    if (settings.thread_pool_nthreads == 1) { return; }
    try {
      pool.reset(settings.thread_pool_nthreads, make_thread_pool_init_task("kvikio"));
    } catch (std::system_error const& e) {
      KVIKIO_LOG_ERROR("KVIKIO_NTHREADS=",
                       settings.thread_pool_nthreads,
                       " is refused here (",
                       e.what(),
                       "): the thread pool runs 1 thread; defaults::set_thread_pool_nthreads() "
                       "resizes it");
    }
  }
};

State* state_to_destroy{nullptr};

// Built at first use; if the environment is invalid this throws, and so does every later call.
State& state()
{
  static detail::BuiltOnce<State> built;
  return built.get([] {
    state_to_destroy = new State{detail::Settings::from_environment()};
    // Destroyed at exit where a function-local static would be: before the objects built
    // before it and after those built later (a transport that uses the pool ends first).
    std::atexit([] { delete state_to_destroy; });
    return state_to_destroy;
  });
}

// Every read asks for several settings, from many threads at once: a setting that fits an
// atomic is read without the mutex (a shared mutex taken a few times per read is contended by
// every caller and pool thread). Strings and lists are copied under it.
template <typename T>
constexpr bool is_lock_free_setting()
{
  if constexpr (std::is_trivially_copyable_v<T>) {
    return std::atomic_ref<T>::is_always_lock_free &&
           alignof(T) >= std::atomic_ref<T>::required_alignment;
  } else {
    return false;
  }
}
template <typename T>
inline constexpr bool lock_free_setting = is_lock_free_setting<T>();

template <auto Member>
auto get()
{
  auto& s = state();
  using T = std::remove_cvref_t<decltype(s.settings.*Member)>;
  if constexpr (lock_free_setting<T>) {
    return std::atomic_ref<T>{s.settings.*Member}.load(std::memory_order_relaxed);
  } else {
    std::lock_guard const lock{s.mutex};
    return s.settings.*Member;
  }
}

template <auto Member, typename V>
void set(V value)
{
  auto& s = state();
  using T = std::remove_cvref_t<decltype(s.settings.*Member)>;
  std::lock_guard const lock{s.mutex};
  if constexpr (lock_free_setting<T>) {
    std::atomic_ref<T>{s.settings.*Member}.store(static_cast<T>(value), std::memory_order_relaxed);
  } else {
    s.settings.*Member = std::move(value);
  }
}

// Setters accept what the variables accept: detail::bounds, checked before anything changes.
template <typename T>
void expect_in(char const* setter, char const* what, T value, detail::Bounds b)
{
  auto const call = std::string{" (defaults::"} + setter + "(" + std::to_string(value) + "))";
  if (b.min == 1 && value <= 0) {  // wording callers match on (docs/migration.md)
    throw std::invalid_argument(std::string{what} + " must be a positive integer" + call);
  }
  if ((std::is_signed_v<T> && value < 0) || static_cast<std::uint64_t>(value) < b.min ||
      static_cast<std::uint64_t>(value) > b.max) {
    throw std::invalid_argument(std::string{what} + " must be in [" + std::to_string(b.min) + ", " +
                                std::to_string(b.max) + "]" + call);
  }
}

// An enum argument must be one of the named values (a cast integer may be anything).
template <typename E>
void expect_one_of(char const* setter, E value, std::initializer_list<E> valid, char const* names)
{
  for (E v : valid) {
    if (v == value) { return; }
  }
  throw std::invalid_argument(std::string{"defaults::"} + setter + "(" +
                              std::to_string(static_cast<int>(value)) + "): expected " + names);
}

}  // namespace

using detail::Settings;

CompatMode defaults::compat_mode() { return get<&Settings::compat_mode>(); }
void defaults::set_compat_mode(CompatMode compat_mode)
{
  expect_one_of("set_compat_mode",
                compat_mode,
                {CompatMode::OFF, CompatMode::ON, CompatMode::AUTO},
                "CompatMode::OFF, ON or AUTO");
  set<&Settings::compat_mode>(compat_mode);
}

CompatMode defaults::infer_compat_mode_if_auto(CompatMode compat_mode) noexcept
{
  if (compat_mode != CompatMode::AUTO) { return compat_mode; }
  return detail::is_gds_available() ? CompatMode::OFF : CompatMode::ON;
}
bool defaults::is_compat_mode_preferred(CompatMode compat_mode) noexcept
{
  return infer_compat_mode_if_auto(compat_mode) == CompatMode::ON;
}
bool defaults::is_compat_mode_preferred() { return is_compat_mode_preferred(compat_mode()); }

ThreadPool& defaults::thread_pool() { return state().pool; }
// The pool is the one source of truth for its size; Settings only seeds it.
unsigned int defaults::thread_pool_nthreads() { return state().pool.get_thread_count(); }
void defaults::set_thread_pool_nthreads(unsigned int nthreads)
{
  expect_in("set_thread_pool_nthreads",
            "number of threads",
            nthreads,
            detail::bounds::thread_pool_nthreads);
  // Named afresh: the threads of a resized pool are kvikio-0 to kvikio-(n-1).
  state().pool.reset(nthreads, make_thread_pool_init_task("kvikio"));
}
unsigned int defaults::num_threads() { return thread_pool_nthreads(); }
void defaults::set_num_threads(unsigned int nthreads) { set_thread_pool_nthreads(nthreads); }

std::size_t detail::staging_buffer_size()
{
  return std::max(defaults::bounce_buffer_size(), least_staging_size);
}

std::vector<int> const& defaults::http_status_codes()
{
  // Returns a reference (the public signature). Each value the setting has had is kept, never
  // changed or freed (a handful per process), so a reference stays valid and unchanged on every
  // thread.
  static std::mutex mutex;
  static detail::BuiltOnce<std::deque<std::vector<int>>> built;
  auto* const values = &built.get([] { return new std::deque<std::vector<int>>(); });
  auto current       = get<&Settings::http_status_codes>();
  std::lock_guard const lock{mutex};
  if (values->empty() || values->back() != current) { values->push_back(std::move(current)); }
  return values->back();
}
void defaults::set_http_status_codes(std::vector<int> status_codes)
{
  if (status_codes.empty()) {  // as KVIKIO_HTTP_STATUS_CODES: no code at all is no list
    throw std::invalid_argument(
      "defaults::set_http_status_codes: an empty list (expected at least one code in 100..599)");
  }
  for (int code : status_codes) {
    if (code < 100 || code > 599) {
      throw std::invalid_argument("defaults::set_http_status_codes: " + std::to_string(code) +
                                  " is not an HTTP status code (expected 100..599)");
    }
  }
  set<&Settings::http_status_codes>(std::move(status_codes));
}

LocalIOBackend defaults::local_io_backend() { return get<&Settings::local_io_backend>(); }
void defaults::set_local_io_backend(LocalIOBackend backend)
{
  expect_one_of("set_local_io_backend",
                backend,
                {LocalIOBackend::POSIX, LocalIOBackend::IO_URING, LocalIOBackend::AUTO},
                "LocalIOBackend::POSIX, IO_URING or AUTO");
  set<&Settings::local_io_backend>(backend);
}

RemoteIOBackend defaults::remote_io_backend() { return get<&Settings::remote_io_backend>(); }
void defaults::set_remote_io_backend(RemoteIOBackend backend)
{
  expect_one_of("set_remote_io_backend",
                backend,
                {RemoteIOBackend::EASY_THREADPOOL, RemoteIOBackend::MULTI_POLL},
                "RemoteIOBackend::EASY_THREADPOOL or MULTI_POLL");
  set<&Settings::remote_io_backend>(backend);
}
RemoteBackendType defaults::remote_backend() { return remote_io_backend(); }
void defaults::set_remote_backend(RemoteBackendType remote_backend)
{
  set_remote_io_backend(remote_backend);
}

RemoteReactorDispatch defaults::remote_io_reactor_dispatch()
{
  return get<&Settings::remote_io_reactor_dispatch>();
}
void defaults::set_remote_io_reactor_dispatch(RemoteReactorDispatch dispatch)
{
  expect_one_of("set_remote_io_reactor_dispatch",
                dispatch,
                {RemoteReactorDispatch::PER_CHUNK, RemoteReactorDispatch::PER_PREAD},
                "RemoteReactorDispatch::PER_CHUNK or PER_PREAD");
  set<&Settings::remote_io_reactor_dispatch>(dispatch);
}

namespace {

namespace bounds = detail::bounds;
using detail::boolean;
using detail::in;
using detail::InBounds;

// A plain setter keeps what its variable accepts: an integer its bounds, a boolean anything.
template <typename T, typename Parse>
void check_setter(char const* setter, char const* what, T value, Parse const& parse)
{
  if constexpr (std::is_same_v<Parse, InBounds>) { expect_in(setter, what, value, parse.bounds); }
}

}  // namespace

#define KVIKIO_PLAIN_ACCESSORS(name, type, default_value, variables, parse, what) \
  type defaults::name() { return get<&Settings::name>(); }                        \
  void defaults::set_##name(type value)                                           \
  {                                                                               \
    check_setter("set_" #name, what, value, parse);                               \
    set<&Settings::name>(value);                                                  \
  }
KVIKIO_PLAIN_SETTINGS(KVIKIO_PLAIN_ACCESSORS)
#undef KVIKIO_PLAIN_ACCESSORS

}  // namespace kvikio
