/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/settings.hpp
 * @brief Every setting described once: the table from which the library derives the members of
 * `detail::Settings`, the reading of the environment, the plain getters and setters of
 * `defaults`, the effective-settings report and the Python `kvikio.defaults` keys; a unit test
 * holds `docs/settings.md` to it.
 *
 * A row is `X(name, type, default, variables, parse, what)`:
 * - `name`: the member of `Settings` and the `defaults::name()` / `defaults::set_name()` pair;
 * - `type`: its C++ type, the getter's return type and the setter's argument;
 * - `default`: its value when no variable sets it;
 * - `variables`: its environment variables in parentheses, the first its name in reports, the
 *   others aliases (two set to different values are an error);
 * - `parse`: how a variable's text becomes a value (`in(bounds::name)`: an integer in those
 *   bounds, which the setter keeps too; `boolean`; or a parser of its own);
 * - `what`: for integers, the words the setter's error names the value with.
 *
 * KVIKIO_PLAIN_SETTINGS are integers and booleans whose getter and setter are only that (the
 * library defines them from the row); KVIKIO_OTHER_SETTINGS have accessors of their own
 * (`defaults.cpp`). Adding a plain setting: a row here (and its `bounds` for an integer), the
 * getter and setter declared in `defaults.hpp`, and a row on `docs/settings.md`.
 */

#include <cstdint>
#include <string_view>

#include <kvikio/detail/env.hpp>

namespace kvikio::detail {

/// @brief The values an integer setting accepts, from its variable and from its setter alike.
struct Bounds {
  std::uint64_t min;  ///< the least value
  std::uint64_t max;  ///< the greatest value
};

/// @brief The bounds of each integer setting (docs/settings.md states them; test_env holds the
/// page to these).
namespace bounds {
/// @brief No greatest value but the type's.
inline constexpr std::uint64_t unbounded = ~std::uint64_t{0};
/// @brief `KVIKIO_NTHREADS`, defaults::set_thread_pool_nthreads().
inline constexpr Bounds thread_pool_nthreads{1, 4096};
/// @brief `KVIKIO_TASK_SIZE`, defaults::set_task_size().
inline constexpr Bounds task_size{1, unbounded};
/// @brief `KVIKIO_GDS_THRESHOLD`, defaults::set_gds_threshold().
inline constexpr Bounds gds_threshold{0, unbounded};
/// @brief `KVIKIO_BOUNCE_BUFFER_SIZE`, defaults::set_bounce_buffer_size().
inline constexpr Bounds bounce_buffer_size{1, unbounded};
/// @brief `KVIKIO_NUM_BOUNCE_BUFFERS`, defaults::set_num_bounce_buffers().
inline constexpr Bounds num_bounce_buffers{1, 1024};
/// @brief `KVIKIO_HTTP_MAX_ATTEMPTS`, defaults::set_http_max_attempts().
inline constexpr Bounds http_max_attempts{1, unbounded};
/// @brief `KVIKIO_HTTP_TIMEOUT`, defaults::set_http_timeout(): seconds, a `long`.
inline constexpr Bounds http_timeout{1, ~std::uint64_t{0} >> 1};
/// @brief `KVIKIO_REMOTE_MAX_CONNECTIONS`, defaults::set_remote_max_connections().
inline constexpr Bounds remote_max_connections{1, unbounded};
/// @brief `KVIKIO_REMOTE_IO_NUM_REACTORS`, defaults::set_remote_io_num_reactors().
inline constexpr Bounds remote_io_num_reactors{1, 1024};
/// @brief `KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS`, its setter.
inline constexpr Bounds remote_io_max_concurrent_requests{0, unbounded};
/// @brief `KVIKIO_EVENT_POOL_MAX_PER_CONTEXT`, its setter.
inline constexpr Bounds event_pool_max_per_context{0, unbounded};
/// @brief `KVIKIO_IPC_EXPORT_CACHE_SIZE`, its setter.
inline constexpr Bounds ipc_export_cache_size{0, unbounded};
/// @brief `KVIKIO_IPC_OPEN_CACHE_SIZE`, its setter.
inline constexpr Bounds ipc_open_cache_size{0, unbounded};
}  // namespace bounds

/// @brief The table's parser of an integer in `bounds` (which the setter keeps too).
struct InBounds {
  Bounds bounds;  ///< the values accepted
  /// @brief The value of variable `name` set to `text`. @throws std::invalid_argument
  std::uint64_t operator()(std::string_view name, std::string_view text) const
  {
    return parse_unsigned(name, text, bounds.min, bounds.max);
  }
};
/// @brief An integer in `b`, in the table.
constexpr InBounds in(Bounds b) noexcept { return {b}; }
/// @brief A boolean, in the table.
inline constexpr auto boolean = parse_bool;

}  // namespace kvikio::detail

// clang-format off
#define KVIKIO_PLAIN_SETTINGS(X)                                                                  \
  X(task_size, std::size_t, 4UL << 20, ("KVIKIO_TASK_SIZE"), in(bounds::task_size), "task size")  \
  X(gds_threshold, std::size_t, 16UL << 10, ("KVIKIO_GDS_THRESHOLD"), in(bounds::gds_threshold),  \
    "gds_threshold")                                                                              \
  X(bounce_buffer_size, std::size_t, 16UL << 20, ("KVIKIO_BOUNCE_BUFFER_SIZE"),                   \
    in(bounds::bounce_buffer_size), "size of the bounce buffer")                                  \
  X(num_bounce_buffers, std::size_t, 4, ("KVIKIO_NUM_BOUNCE_BUFFERS"),                            \
    in(bounds::num_bounce_buffers), "number of bounce buffers")                                   \
  X(http_max_attempts, std::size_t, 3, ("KVIKIO_HTTP_MAX_ATTEMPTS"),                              \
    in(bounds::http_max_attempts), "attempts")                                                    \
  X(http_timeout, long, 60, ("KVIKIO_HTTP_TIMEOUT"), in(bounds::http_timeout), "timeout_seconds") \
  X(auto_direct_io_read, bool, false, ("KVIKIO_AUTO_DIRECT_IO_READ"), boolean, "")                \
  X(auto_direct_io_read_overread, bool, false, ("KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD"), boolean,  \
    "")                                                                                           \
  X(auto_direct_io_write, bool, true, ("KVIKIO_AUTO_DIRECT_IO_WRITE"), boolean, "")               \
  X(thread_pool_per_block_device, bool, false, ("KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE"), boolean,  \
    "")                                                                                           \
  X(remote_max_connections, std::size_t, 8, ("KVIKIO_REMOTE_MAX_CONNECTIONS"),                    \
    in(bounds::remote_max_connections), "remote_max_connections")                                 \
  X(remote_io_num_reactors, unsigned int, 1, ("KVIKIO_REMOTE_IO_NUM_REACTORS"),                   \
    in(bounds::remote_io_num_reactors), "remote_io_num_reactors")                                 \
  X(remote_io_max_concurrent_requests, std::size_t, 0, ("KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS"),\
    in(bounds::remote_io_max_concurrent_requests), "remote_io_max_concurrent_requests")           \
  X(event_pool_max_per_context, std::size_t, 0, ("KVIKIO_EVENT_POOL_MAX_PER_CONTEXT"),            \
    in(bounds::event_pool_max_per_context), "event_pool_max_per_context")                         \
  X(ipc_export_cache_size, std::size_t, 1024, ("KVIKIO_IPC_EXPORT_CACHE_SIZE"),                   \
    in(bounds::ipc_export_cache_size), "ipc_export_cache_size")                                   \
  X(ipc_open_cache_size, std::size_t, 128, ("KVIKIO_IPC_OPEN_CACHE_SIZE"),                        \
    in(bounds::ipc_open_cache_size), "ipc_open_cache_size")

#define KVIKIO_OTHER_SETTINGS(X)                                                                  \
  X(compat_mode, CompatMode, CompatMode::AUTO, ("KVIKIO_COMPAT_MODE"), parse_compat_mode, "")     \
  X(thread_pool_nthreads, unsigned int, 1, ("KVIKIO_NTHREADS", "KVIKIO_NUM_THREADS"),             \
    in(bounds::thread_pool_nthreads), "number of threads")                                        \
  X(http_status_codes, std::vector<int>, (std::vector<int>{429, 500, 502, 503, 504}),             \
    ("KVIKIO_HTTP_STATUS_CODES"), parse_http_status_codes, "")                                    \
  X(local_io_backend, LocalIOBackend, LocalIOBackend::AUTO, ("KVIKIO_LOCAL_IO_BACKEND"),          \
    parse_local_io_backend, "")                                                                   \
  X(remote_io_backend, RemoteIOBackend, RemoteIOBackend::EASY_THREADPOOL,                         \
    ("KVIKIO_REMOTE_IO_BACKEND", "KVIKIO_REMOTE_BACKEND"), parse_remote_backend, "")              \
  X(remote_io_reactor_dispatch, RemoteReactorDispatch, RemoteReactorDispatch::PER_CHUNK,          \
    ("KVIKIO_REMOTE_IO_REACTOR_DISPATCH"), parse_reactor_dispatch, "")

#define KVIKIO_SETTINGS(X) KVIKIO_OTHER_SETTINGS(X) KVIKIO_PLAIN_SETTINGS(X)
// clang-format on
