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
#include <system_error>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/shim/cufile.hpp>

namespace kvikio {
namespace detail {
namespace {

// Every KVIKIO_* variable the library reads: the settings below, and those read where they are
// used (the logger's file, libcurl's verbosity, the WebHDFS user name). A name read here and
// missing from this list is a logic error at the first use of the settings.
constexpr std::string_view variables_read[] = {
  "KVIKIO_COMPAT_MODE",
  "KVIKIO_NTHREADS",
  "KVIKIO_NUM_THREADS",
  "KVIKIO_TASK_SIZE",
  "KVIKIO_GDS_THRESHOLD",
  "KVIKIO_BOUNCE_BUFFER_SIZE",
  "KVIKIO_NUM_BOUNCE_BUFFERS",
  "KVIKIO_HTTP_MAX_ATTEMPTS",
  "KVIKIO_HTTP_TIMEOUT",
  "KVIKIO_HTTP_STATUS_CODES",
  "KVIKIO_AUTO_DIRECT_IO_READ",
  "KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD",
  "KVIKIO_AUTO_DIRECT_IO_WRITE",
  "KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE",
  "KVIKIO_LOCAL_IO_BACKEND",
  "KVIKIO_REMOTE_BACKEND",
  "KVIKIO_REMOTE_IO_BACKEND",
  "KVIKIO_REMOTE_MAX_CONNECTIONS",
  "KVIKIO_REMOTE_IO_NUM_REACTORS",
  "KVIKIO_REMOTE_IO_REACTOR_DISPATCH",
  "KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS",
  "KVIKIO_EVENT_POOL_MAX_PER_CONTEXT",
  "KVIKIO_IPC_EXPORT_CACHE_SIZE",
  "KVIKIO_IPC_OPEN_CACHE_SIZE",
  "KVIKIO_LOG_LEVEL",
  "KVIKIO_LOG_FILE",
  "KVIKIO_REMOTE_VERBOSE",
  "KVIKIO_WEBHDFS_USERNAME",
};

std::string_view known(std::string_view name)
{
  if (std::find(std::begin(variables_read), std::end(variables_read), name) ==
      std::end(variables_read)) {
    throw std::logic_error(std::string{name} + " is read but not in variables_read");
  }
  return name;
}

// Reads one variable with `parse`, keeping `value` when it is unset.
template <typename T, typename Parse>
void read_env(T& value, std::string_view name, Parse parse)
{
  if (auto text = getenv_trimmed(known(name))) { value = parse(name, *text); }
}

// Levenshtein distance, for the nearest known name of a misspelled one.
std::size_t edit_distance(std::string_view a, std::string_view b)
{
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0]               = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t const up = row[j];
      row[j]   = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

auto unsigned_in(Bounds b)
{
  return [b](std::string_view name, std::string_view text) {
    return parse_unsigned(name, text, b.min, b.max);
  };
}

}  // namespace

CompatMode parse_compat_mode(std::string_view name, std::string_view value)
{
  try {
    return parse_compat_mode_str(value);
  } catch (std::invalid_argument const& e) {
    throw std::invalid_argument(std::string{name} + "=" + std::string{value} + ": " + e.what());
  }
}

char const* local_io_backend_name(LocalIOBackend backend) noexcept
{
  switch (backend) {
    case LocalIOBackend::POSIX: return "posix";
    case LocalIOBackend::IO_URING: return "io_uring";
    case LocalIOBackend::AUTO: return "auto";
  }
  return "unknown";
}

char const* compat_mode_name(CompatMode mode) noexcept
{
  switch (mode) {
    case CompatMode::OFF: return "OFF";
    case CompatMode::ON: return "ON";
    case CompatMode::AUTO: return "AUTO";
  }
  return "unknown";
}

char const* remote_io_backend_name(RemoteIOBackend backend) noexcept
{
  return backend == RemoteIOBackend::MULTI_POLL ? "MULTI_POLL" : "EASY_THREADPOOL";
}

char const* reactor_dispatch_name(RemoteReactorDispatch dispatch) noexcept
{
  return dispatch == RemoteReactorDispatch::PER_PREAD ? "PER_PREAD" : "PER_CHUNK";
}

LocalIOBackend parse_local_io_backend(std::string_view name, std::string_view value)
{
  if (iequals(value, "posix")) { return LocalIOBackend::POSIX; }
  if (iequals(value, "io_uring")) { return LocalIOBackend::IO_URING; }
  if (iequals(value, "auto")) { return LocalIOBackend::AUTO; }
  throw std::invalid_argument(std::string{name} + "=" + std::string{value} +
                              ": expected auto, posix or io_uring");
}

RemoteBackendType parse_remote_backend(std::string_view name, std::string_view value)
{
  if (iequals(value, "LIBCURL_EASY") || iequals(value, "EASY_THREADPOOL")) {
    return RemoteBackendType::LIBCURL_EASY;
  }
  if (iequals(value, "LIBCURL_MULTI_POLL") || iequals(value, "MULTI_POLL")) {
    return RemoteBackendType::LIBCURL_MULTI_POLL;
  }
  throw std::invalid_argument(std::string{name} + "=" + std::string{value} +
                              ": expected LIBCURL_EASY or LIBCURL_MULTI_POLL (or upstream's "
                              "EASY_THREADPOOL or MULTI_POLL)");
}

RemoteReactorDispatch parse_reactor_dispatch(std::string_view name, std::string_view value)
{
  if (iequals(value, "PER_CHUNK")) { return RemoteReactorDispatch::PER_CHUNK; }
  if (iequals(value, "PER_PREAD")) { return RemoteReactorDispatch::PER_PREAD; }
  throw std::invalid_argument(std::string{name} + "=" + std::string{value} +
                              ": expected PER_CHUNK or PER_PREAD");
}

Settings Settings::from_environment()
{
  Settings s;
  read_env(s.compat_mode, "KVIKIO_COMPAT_MODE", parse_compat_mode);
  if (auto nthreads =
        getenv_aliases<std::uint64_t>({known("KVIKIO_NTHREADS"), known("KVIKIO_NUM_THREADS")},
                                      unsigned_in(bounds::thread_pool_nthreads))) {
    s.thread_pool_nthreads = static_cast<unsigned int>(nthreads->second);
  }
  read_env(s.task_size, "KVIKIO_TASK_SIZE", unsigned_in(bounds::task_size));
  read_env(s.gds_threshold, "KVIKIO_GDS_THRESHOLD", unsigned_in(bounds::gds_threshold));
  read_env(
    s.bounce_buffer_size, "KVIKIO_BOUNCE_BUFFER_SIZE", unsigned_in(bounds::bounce_buffer_size));
  read_env(
    s.num_bounce_buffers, "KVIKIO_NUM_BOUNCE_BUFFERS", unsigned_in(bounds::num_bounce_buffers));
  read_env(s.http_max_attempts, "KVIKIO_HTTP_MAX_ATTEMPTS", unsigned_in(bounds::http_max_attempts));
  read_env(s.http_timeout, "KVIKIO_HTTP_TIMEOUT", unsigned_in(bounds::http_timeout));
  read_env(s.http_status_codes, "KVIKIO_HTTP_STATUS_CODES", parse_http_status_codes);
  read_env(s.auto_direct_io_read, "KVIKIO_AUTO_DIRECT_IO_READ", parse_bool);
  read_env(s.auto_direct_io_read_overread, "KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD", parse_bool);
  read_env(s.auto_direct_io_write, "KVIKIO_AUTO_DIRECT_IO_WRITE", parse_bool);
  read_env(s.thread_pool_per_block_device, "KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE", parse_bool);
  read_env(s.local_io_backend, "KVIKIO_LOCAL_IO_BACKEND", parse_local_io_backend);
  if (auto backend = getenv_aliases<RemoteBackendType>(
        {known("KVIKIO_REMOTE_BACKEND"), known("KVIKIO_REMOTE_IO_BACKEND")},
        parse_remote_backend)) {
    s.remote_backend = backend->second;
  }
  read_env(s.remote_max_connections,
           "KVIKIO_REMOTE_MAX_CONNECTIONS",
           unsigned_in(bounds::remote_max_connections));
  read_env(s.remote_io_num_reactors,
           "KVIKIO_REMOTE_IO_NUM_REACTORS",
           unsigned_in(bounds::remote_io_num_reactors));
  read_env(
    s.remote_io_reactor_dispatch, "KVIKIO_REMOTE_IO_REACTOR_DISPATCH", parse_reactor_dispatch);
  read_env(s.remote_io_max_concurrent_requests,
           "KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS",
           unsigned_in(bounds::remote_io_max_concurrent_requests));
  read_env(s.event_pool_max_per_context,
           "KVIKIO_EVENT_POOL_MAX_PER_CONTEXT",
           unsigned_in(bounds::event_pool_max_per_context));
  read_env(s.ipc_export_cache_size,
           "KVIKIO_IPC_EXPORT_CACHE_SIZE",
           unsigned_in(bounds::ipc_export_cache_size));
  read_env(
    s.ipc_open_cache_size, "KVIKIO_IPC_OPEN_CACHE_SIZE", unsigned_in(bounds::ipc_open_cache_size));
  // The logger keeps its own level; it is validated here so a typo is an error, not a silence.
  if (auto level = getenv_trimmed(known("KVIKIO_LOG_LEVEL"))) {
    parse_log_level("KVIKIO_LOG_LEVEL", *level);
  }
  return s;
}

std::span<std::string_view const> Settings::known_variables() noexcept { return variables_read; }

std::vector<std::pair<std::string, std::string>> Settings::unknown_environment()
{
  std::vector<std::pair<std::string, std::string>> unknown;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view const variable{*entry};
    std::string_view const name = variable.substr(0, variable.find('='));
    if (name.substr(0, 7) != "KVIKIO_" ||
        std::find(std::begin(variables_read), std::end(variables_read), name) !=
          std::end(variables_read)) {
      continue;
    }
    std::string_view nearest;
    std::size_t best = 4;  // within 3 edits, or none
    for (std::string_view const candidate : variables_read) {
      if (std::size_t const d = edit_distance(name, candidate); d < best) {
        best    = d;
        nearest = candidate;
      }
    }
    unknown.emplace_back(std::string{name}, std::string{nearest});
  }
  return unknown;
}

}  // namespace detail

namespace {

struct State {
  std::mutex mutex;
  detail::Settings settings;
  ThreadPool pool;

  // The pool starts with one thread and then takes the size the environment asks for: where a
  // limit on threads refuses that size, the library still works (the pool keeps one thread,
  // logged), and a size that fits can be set, instead of every call failing.
  explicit State(detail::Settings s) : settings{std::move(s)}, pool{1}
  {
    for (auto const& [name, nearest] : detail::Settings::unknown_environment()) {
      KVIKIO_LOG_WARN(name,
                      " is not a KvikIO setting and is ignored",
                      nearest.empty() ? std::string{} : " (did you mean " + nearest + "?)");
    }
    if (settings.thread_pool_nthreads == 1) { return; }
    try {
      pool.reset(settings.thread_pool_nthreads);
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
  if (b.min == 1 && value <= 0) {  // upstream's wording
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
  state().pool.reset(nthreads);
}
unsigned int defaults::num_threads() { return thread_pool_nthreads(); }
void defaults::set_num_threads(unsigned int nthreads) { set_thread_pool_nthreads(nthreads); }

std::size_t defaults::task_size() { return get<&Settings::task_size>(); }
void defaults::set_task_size(std::size_t nbytes)
{
  expect_in("set_task_size", "task size", nbytes, detail::bounds::task_size);
  set<&Settings::task_size>(nbytes);
}

std::size_t defaults::gds_threshold() { return get<&Settings::gds_threshold>(); }
void defaults::set_gds_threshold(std::size_t nbytes) { set<&Settings::gds_threshold>(nbytes); }

std::size_t defaults::bounce_buffer_size() { return get<&Settings::bounce_buffer_size>(); }

std::size_t detail::staging_buffer_size()
{
  return std::max(defaults::bounce_buffer_size(), least_staging_size);
}
void defaults::set_bounce_buffer_size(std::size_t nbytes)
{
  expect_in("set_bounce_buffer_size",
            "size of the bounce buffer",
            nbytes,
            detail::bounds::bounce_buffer_size);
  set<&Settings::bounce_buffer_size>(nbytes);
}

std::size_t defaults::num_bounce_buffers() { return get<&Settings::num_bounce_buffers>(); }
void defaults::set_num_bounce_buffers(std::size_t num_bounce_buffers)
{
  expect_in("set_num_bounce_buffers",
            "number of bounce buffers",
            num_bounce_buffers,
            detail::bounds::num_bounce_buffers);
  set<&Settings::num_bounce_buffers>(num_bounce_buffers);
}

std::size_t defaults::http_max_attempts() { return get<&Settings::http_max_attempts>(); }
void defaults::set_http_max_attempts(std::size_t attempts)
{
  expect_in("set_http_max_attempts", "attempts", attempts, detail::bounds::http_max_attempts);
  set<&Settings::http_max_attempts>(attempts);
}

long defaults::http_timeout() { return get<&Settings::http_timeout>(); }
void defaults::set_http_timeout(long timeout_seconds)
{
  expect_in("set_http_timeout", "timeout_seconds", timeout_seconds, detail::bounds::http_timeout);
  set<&Settings::http_timeout>(timeout_seconds);
}

std::vector<int> const& defaults::http_status_codes()
{
  // Upstream returns a reference. Each value the setting has had is kept, never changed or
  // freed (a handful per process), so a reference stays valid and unchanged on every thread.
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

bool defaults::auto_direct_io_read() { return get<&Settings::auto_direct_io_read>(); }
void defaults::set_auto_direct_io_read(bool flag) { set<&Settings::auto_direct_io_read>(flag); }

bool defaults::auto_direct_io_read_overread()
{
  return get<&Settings::auto_direct_io_read_overread>();
}
void defaults::set_auto_direct_io_read_overread(bool flag)
{
  set<&Settings::auto_direct_io_read_overread>(flag);
}

bool defaults::auto_direct_io_write() { return get<&Settings::auto_direct_io_write>(); }
void defaults::set_auto_direct_io_write(bool flag) { set<&Settings::auto_direct_io_write>(flag); }

bool defaults::thread_pool_per_block_device()
{
  return get<&Settings::thread_pool_per_block_device>();
}
void defaults::set_thread_pool_per_block_device(bool flag)
{
  set<&Settings::thread_pool_per_block_device>(flag);
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

RemoteIOBackend defaults::remote_io_backend() { return get<&Settings::remote_backend>(); }
void defaults::set_remote_io_backend(RemoteIOBackend backend)
{
  expect_one_of("set_remote_io_backend",
                backend,
                {RemoteIOBackend::EASY_THREADPOOL, RemoteIOBackend::MULTI_POLL},
                "RemoteIOBackend::EASY_THREADPOOL or MULTI_POLL");
  set<&Settings::remote_backend>(backend);
}
RemoteBackendType defaults::remote_backend() { return remote_io_backend(); }
void defaults::set_remote_backend(RemoteBackendType remote_backend)
{
  set_remote_io_backend(remote_backend);
}

std::size_t defaults::remote_max_connections() { return get<&Settings::remote_max_connections>(); }
void defaults::set_remote_max_connections(std::size_t remote_max_connections)
{
  expect_in("set_remote_max_connections",
            "remote_max_connections",
            remote_max_connections,
            detail::bounds::remote_max_connections);
  set<&Settings::remote_max_connections>(remote_max_connections);
}

unsigned int defaults::remote_io_num_reactors() { return get<&Settings::remote_io_num_reactors>(); }
void defaults::set_remote_io_num_reactors(unsigned int num_reactors)
{
  expect_in("set_remote_io_num_reactors",
            "remote_io_num_reactors",
            num_reactors,
            detail::bounds::remote_io_num_reactors);
  set<&Settings::remote_io_num_reactors>(num_reactors);
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

std::size_t defaults::remote_io_max_concurrent_requests()
{
  return get<&Settings::remote_io_max_concurrent_requests>();
}
void defaults::set_remote_io_max_concurrent_requests(std::size_t max_requests)
{
  set<&Settings::remote_io_max_concurrent_requests>(max_requests);
}

std::size_t defaults::event_pool_max_per_context()
{
  return get<&Settings::event_pool_max_per_context>();
}
void defaults::set_event_pool_max_per_context(std::size_t max_events)
{
  set<&Settings::event_pool_max_per_context>(max_events);
}

std::size_t defaults::ipc_export_cache_size() { return get<&Settings::ipc_export_cache_size>(); }
void defaults::set_ipc_export_cache_size(std::size_t entries)
{
  set<&Settings::ipc_export_cache_size>(entries);
}

std::size_t defaults::ipc_open_cache_size() { return get<&Settings::ipc_open_cache_size>(); }
void defaults::set_ipc_open_cache_size(std::size_t entries)
{
  set<&Settings::ipc_open_cache_size>(entries);
}

}  // namespace kvikio
