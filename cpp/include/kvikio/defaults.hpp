/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file defaults.hpp
 * @brief Process-wide settings, read from the environment once, at first use.
 *
 * Every getter returns the current value; every setter validates its argument and throws
 * `std::invalid_argument` naming the setting and the value. Invalid environment values make the
 * first getter or setter call throw `std::invalid_argument` naming the variable and the value.
 * Getters and setters are safe to call from many threads. docs/settings.md has the full table.
 */

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <sstream>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <kvikio/compat_mode.hpp>
#include <kvikio/detail/env.hpp>
#include <kvikio/detail/settings.hpp>
#include <kvikio/error.hpp>
#include <kvikio/http_status_codes.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/threadpool_wrapper.hpp>

namespace kvikio {

/// @brief Backend for local file I/O (`KVIKIO_LOCAL_IO_BACKEND`).
enum class LocalIOBackend : uint8_t {
  POSIX,     ///< `pread`/`pwrite` on the thread pool
  IO_URING,  ///< io_uring submissions, reads and writes
  AUTO,      ///< io_uring reads where io_uring works here, else POSIX; POSIX writes
};

/**
 * @brief Transport for remote I/O (`KVIKIO_REMOTE_IO_BACKEND`, or `KVIKIO_REMOTE_BACKEND`).
 *
 * `LIBCURL_EASY` and `LIBCURL_MULTI_POLL` are other spellings of the same two values.
 */
enum class RemoteIOBackend : uint8_t {
  EASY_THREADPOOL    = 0,  ///< one blocking libcurl easy transfer per task on the thread pool
  MULTI_POLL         = 1,  ///< reactor threads multiplexing transfers (libcurl's multi interface)
  LIBCURL_EASY       = EASY_THREADPOOL,  ///< the same as EASY_THREADPOOL
  LIBCURL_MULTI_POLL = MULTI_POLL,       ///< the same as MULTI_POLL
};

/// @brief This project's name of RemoteIOBackend.
using RemoteBackendType = RemoteIOBackend;

/**
 * @brief How the chunks of one remote `pread` are dealt to multi-poll reactors
 * (`KVIKIO_REMOTE_IO_REACTOR_DISPATCH`); with one reactor both are the same.
 */
enum class RemoteReactorDispatch : uint8_t {
  PER_CHUNK = 0,  ///< chunks in one queue that each reactor takes from when it has room: the
                  ///< load follows how fast each reactor's connections are
  PER_PREAD = 1,  ///< all chunks of a pread on one reactor (round robin per pread): they share
                  ///< its connections, which saves TLS handshakes
};

namespace detail {

/// @brief The least bounce buffer the library stages through. A smaller bounce_buffer_size() is
/// accepted (and reported back) as set, but staging uses this much: 1-byte buffers would cut a
/// read into a copy per byte. (No more: from 1024 bytes up, the size set is the size used, so
/// that the bytes a pool frees are whole buffers of that size.)
inline constexpr std::size_t least_staging_size = 1 << 10;

/// @brief The bytes of each pinned bounce buffer: defaults::bounce_buffer_size(), at least
/// least_staging_size.
[[nodiscard]] std::size_t staging_buffer_size();

/**
 * @brief Every setting's value, as one plain struct.
 *
 * `from_environment()` is the single place where environment variables are read; tests call it
 * directly to check parsing without touching the process-wide settings.
 */
struct Settings {
#define KVIKIO_SETTINGS_MEMBER(name, type, default_value, variables, parse, what) \
  type name{default_value};
  KVIKIO_SETTINGS(KVIKIO_SETTINGS_MEMBER)
#undef KVIKIO_SETTINGS_MEMBER

  /**
   * @brief The defaults overridden by whatever `KVIKIO_*` variables are set.
   * @throws std::invalid_argument naming the first invalid variable and its value.
   */
  static Settings from_environment();

  /**
   * @brief The `KVIKIO_*` variables set in the environment that the library does not read, each
   * with the known name nearest to it (by edit distance; "" when none is within 3 edits): a
   * misspelled setting is otherwise silently ignored. The first use of the settings logs each
   * at warn level.
   */
  static std::vector<std::pair<std::string, std::string>> unknown_environment();

  /// @brief Every `KVIKIO_*` variable the library reads (the settings' and those read where they
  /// are used: `KVIKIO_LOG_FILE`, `KVIKIO_REMOTE_VERBOSE`, `KVIKIO_WEBHDFS_USERNAME`).
  static std::span<std::string_view const> known_variables() noexcept;
};

/// @brief Parses `ON|OFF|AUTO` (also `true|yes|1`, `false|no|0`; any case) of variable `name`.
/// @throws std::invalid_argument naming the variable and its value
CompatMode parse_compat_mode(std::string_view name, std::string_view value);
/// @brief Parses `auto|posix|io_uring` (any case). @throws std::invalid_argument
LocalIOBackend parse_local_io_backend(std::string_view name, std::string_view value);
/// @brief "auto", "posix" or "io_uring", as parse_local_io_backend() reads them.
char const* local_io_backend_name(LocalIOBackend backend) noexcept;
/// @brief Parses `LIBCURL_EASY|LIBCURL_MULTI_POLL` or `EASY_THREADPOOL|MULTI_POLL` (any case).
RemoteBackendType parse_remote_backend(std::string_view name, std::string_view value);
/// @brief Parses `PER_CHUNK|PER_PREAD` (any case). @throws std::invalid_argument
RemoteReactorDispatch parse_reactor_dispatch(std::string_view name, std::string_view value);
/// @brief "OFF", "ON" or "AUTO", as parse_compat_mode() reads them.
char const* compat_mode_name(CompatMode mode) noexcept;
/// @brief "EASY_THREADPOOL" or "MULTI_POLL", as parse_remote_backend() reads them.
char const* remote_io_backend_name(RemoteIOBackend backend) noexcept;
/// @brief "PER_CHUNK" or "PER_PREAD", as parse_reactor_dispatch() reads them.
char const* reactor_dispatch_name(RemoteReactorDispatch dispatch) noexcept;
}  // namespace detail

/**
 * @brief Reads `env_var_name` as a `T` (surrounding white space ignored), or returns
 * `default_val` if it is unset. Set to nothing, it is the empty string for `std::string` and an
 * error for any other type.
 * @throws std::invalid_argument "unknown config value NAME=VALUE ..." if it is set to something
 * that is not a `T`, empty included.
 */
template <typename T>
T getenv_or(std::string_view env_var_name, T default_val);

/**
 * @brief Reads `env_var_names`, aliases of one setting: those that are set must hold the same
 * text, and the last of them is read as getenv_or() reads one name.
 * @return (the variable read or "", its value or `default_val`, whether one was set)
 * @throws std::invalid_argument if `env_var_names` is empty, if two set aliases differ
 * ("Environment variable B (20) has already been set by its alias A (10) with a different
 * value."), or if the value is not a `T`.
 */
template <typename T>
std::tuple<std::string_view, T, bool> getenv_or(
  std::initializer_list<std::string_view> env_var_names, T default_val);

/**
 * @brief The settings of this process. All members are static.
 */
class defaults {
 public:
  /// @brief Requested compat mode (`KVIKIO_COMPAT_MODE`, default AUTO).
  [[nodiscard]] static CompatMode compat_mode();
  /// @brief Sets compat_mode().
  /// @throws std::invalid_argument if `compat_mode` is not OFF, ON or AUTO.
  static void set_compat_mode(CompatMode compat_mode);
  /// @brief `compat_mode` with AUTO resolved: ON unless GPUDirect Storage is available.
  [[nodiscard]] static CompatMode infer_compat_mode_if_auto(CompatMode compat_mode) noexcept;
  /// @brief Whether `compat_mode` (AUTO resolved) means POSIX I/O.
  [[nodiscard]] static bool is_compat_mode_preferred(CompatMode compat_mode) noexcept;
  /// @brief Whether the current compat mode setting (AUTO resolved) means POSIX I/O.
  [[nodiscard]] static bool is_compat_mode_preferred();

  /// @brief The global thread pool, sized by `KVIKIO_NTHREADS`.
  [[nodiscard]] static ThreadPool& thread_pool();
  /// @brief Threads of the global pool (`KVIKIO_NTHREADS` or `KVIKIO_NUM_THREADS`, default 1).
  [[nodiscard]] static unsigned int thread_pool_nthreads();
  /// @brief Resizes the global pool, waiting for the tasks it is running.
  /// @throws std::invalid_argument if `nthreads` is 0.
  static void set_thread_pool_nthreads(unsigned int nthreads);
  /// @brief Alias of thread_pool_nthreads() (the Python name).
  [[nodiscard]] static unsigned int num_threads();
  /// @brief Alias of set_thread_pool_nthreads().
  static void set_num_threads(unsigned int nthreads);

  /// @brief Largest chunk one task of a parallel operation moves (`KVIKIO_TASK_SIZE`, 4 MiB).
  [[nodiscard]] static std::size_t task_size();
  /// @brief Sets task_size() to `nbytes` bytes.
  /// @throws std::invalid_argument if `nbytes` is 0.
  static void set_task_size(std::size_t nbytes);

  /// @brief Below this size pread/pwrite run on the calling thread (`KVIKIO_GDS_THRESHOLD`).
  [[nodiscard]] static std::size_t gds_threshold();
  /// @brief Sets gds_threshold() to `nbytes` bytes.
  static void set_gds_threshold(std::size_t nbytes);

  /// @brief Pinned staging memory per task (`KVIKIO_BOUNCE_BUFFER_SIZE`, 16 MiB).
  [[nodiscard]] static std::size_t bounce_buffer_size();
  /// @brief Sets bounce_buffer_size() to `nbytes` bytes; BounceBufferPool applies it at its next
  /// get().
  /// @throws std::invalid_argument if `nbytes` is 0.
  static void set_bounce_buffer_size(std::size_t nbytes);

  /// @brief Slots of the bounce buffer ring (`KVIKIO_NUM_BOUNCE_BUFFERS`, 4; 1 = no overlap).
  [[nodiscard]] static std::size_t num_bounce_buffers();
  /// @brief Sets num_bounce_buffers().
  /// @throws std::invalid_argument if `num_bounce_buffers` is 0.
  static void set_num_bounce_buffers(std::size_t num_bounce_buffers);

  /// @brief Attempts per HTTP request, first one included (`KVIKIO_HTTP_MAX_ATTEMPTS`, 3).
  [[nodiscard]] static std::size_t http_max_attempts();
  /// @brief Sets http_max_attempts().
  /// @throws std::invalid_argument if `attempts` is 0.
  static void set_http_max_attempts(std::size_t attempts);

  /// @brief Timeout of one HTTP attempt in seconds (`KVIKIO_HTTP_TIMEOUT`, 60).
  [[nodiscard]] static long http_timeout();
  /// @brief Sets http_timeout() to `timeout_seconds` seconds.
  /// @throws std::invalid_argument if `timeout_seconds` is not positive.
  static void set_http_timeout(long timeout_seconds);

  /**
   * @brief HTTP statuses that are retried (`KVIKIO_HTTP_STATUS_CODES`).
   *
   * The reference is to the value at the call, kept for the life of the process: a later
   * set_http_status_codes() does not change it.
   */
  [[nodiscard]] static std::vector<int> const& http_status_codes();
  /// @brief Sets http_status_codes().
  /// @throws std::invalid_argument if a code is outside 100..599.
  static void set_http_status_codes(std::vector<int> status_codes);

  /// @brief Opportunistic O_DIRECT for reads (`KVIKIO_AUTO_DIRECT_IO_READ`, false).
  [[nodiscard]] static bool auto_direct_io_read();
  /// @brief Sets auto_direct_io_read().
  static void set_auto_direct_io_read(bool flag);

  /// @brief Let O_DIRECT reads cover whole pages past the requested range
  /// (`KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD`, false).
  [[nodiscard]] static bool auto_direct_io_read_overread();
  /// @brief Sets auto_direct_io_read_overread().
  static void set_auto_direct_io_read_overread(bool flag);

  /// @brief Opportunistic O_DIRECT for writes (`KVIKIO_AUTO_DIRECT_IO_WRITE`, true).
  [[nodiscard]] static bool auto_direct_io_write();
  /// @brief Sets auto_direct_io_write().
  static void set_auto_direct_io_write(bool flag);

  /// @brief One thread pool per block device (`KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE`, false).
  [[nodiscard]] static bool thread_pool_per_block_device();
  /// @brief Sets thread_pool_per_block_device().
  static void set_thread_pool_per_block_device(bool flag);

  /**
   * @brief Local I/O backend (`KVIKIO_LOCAL_IO_BACKEND`, auto).
   *
   * AUTO reads through io_uring where the kernel allows it (one info line says so when it does
   * not: ENOSYS, or EPERM from seccomp or `kernel.io_uring_disabled`), the thread pools have at
   * most half as many threads as the machine has cores (io_uring's kernel workers need the
   * others) and the call's pool is not backlogged (many callers already keep its threads busy);
   * otherwise, and for writes, through POSIX, which is as fast or faster there.
   */
  [[nodiscard]] static LocalIOBackend local_io_backend();
  /// @brief Sets local_io_backend().
  /// @throws std::invalid_argument if `backend` is not one of the named values.
  static void set_local_io_backend(LocalIOBackend backend);

  /// @brief Remote transport (`KVIKIO_REMOTE_IO_BACKEND` or `KVIKIO_REMOTE_BACKEND`,
  /// EASY_THREADPOOL).
  [[nodiscard]] static RemoteIOBackend remote_io_backend();
  /// @brief Sets remote_io_backend().
  /// @throws std::invalid_argument if `backend` is not one of the named values.
  static void set_remote_io_backend(RemoteIOBackend backend);
  /// @brief remote_io_backend() under this project's name.
  [[nodiscard]] static RemoteBackendType remote_backend();
  /// @brief set_remote_io_backend() under this project's name.
  static void set_remote_backend(RemoteBackendType remote_backend);

  /// @brief Transfers in flight per reactor (`KVIKIO_REMOTE_MAX_CONNECTIONS`, 8).
  [[nodiscard]] static std::size_t remote_max_connections();
  /// @brief Sets remote_max_connections().
  /// @throws std::invalid_argument if `remote_max_connections` is 0.
  static void set_remote_max_connections(std::size_t remote_max_connections);

  /// @brief Reactor threads of the multi-poll transport (`KVIKIO_REMOTE_IO_NUM_REACTORS`, 1).
  [[nodiscard]] static unsigned int remote_io_num_reactors();
  /// @brief Sets remote_io_num_reactors().
  /// @throws std::invalid_argument if `num_reactors` is 0.
  static void set_remote_io_num_reactors(unsigned int num_reactors);

  /// @brief How one pread's chunks are dealt to the reactors
  /// (`KVIKIO_REMOTE_IO_REACTOR_DISPATCH`, PER_CHUNK).
  [[nodiscard]] static RemoteReactorDispatch remote_io_reactor_dispatch();
  /// @brief Sets remote_io_reactor_dispatch().
  /// @throws std::invalid_argument if `dispatch` is not one of the named values.
  static void set_remote_io_reactor_dispatch(RemoteReactorDispatch dispatch);

  /**
   * @brief Transfers in flight across all reactors (`KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS`);
   * 0, the default, sets no total: each reactor then keeps remote_max_connections() in flight.
   * A total is shared equally by the reactors, at least one each.
   */
  [[nodiscard]] static std::size_t remote_io_max_concurrent_requests();
  /// @brief Sets remote_io_max_concurrent_requests() (0: no total).
  static void set_remote_io_max_concurrent_requests(std::size_t max_requests);

  /// @brief Free events kept per CUDA context; 0 = unbounded
  /// (`KVIKIO_EVENT_POOL_MAX_PER_CONTEXT`, 0).
  [[nodiscard]] static std::size_t event_pool_max_per_context();
  /// @brief Sets event_pool_max_per_context() (0: unbounded).
  static void set_event_pool_max_per_context(std::size_t max_events);

  /// @brief Exported IPC handles cached; 0 = no caching (`KVIKIO_IPC_EXPORT_CACHE_SIZE`, 1024).
  [[nodiscard]] static std::size_t ipc_export_cache_size();
  /// @brief Sets ipc_export_cache_size() (0: no caching).
  static void set_ipc_export_cache_size(std::size_t entries);

  /// @brief Opened IPC handles cached; 0 = no caching (`KVIKIO_IPC_OPEN_CACHE_SIZE`, 128).
  [[nodiscard]] static std::size_t ipc_open_cache_size();
  /// @brief Sets ipc_open_cache_size() (0: no caching).
  static void set_ipc_open_cache_size(std::size_t entries);
};

}  // namespace kvikio
