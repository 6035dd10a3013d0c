/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/settings.hpp>

#include <unistd.h>

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>

namespace kvikio {
namespace detail {
namespace {

// Every KVIKIO_* variable the library reads: the settings' (detail/settings.hpp), then those
// read where they are used (the logger's level and file, libcurl's verbosity, the WebHDFS user
// name).
#define KVIKIO_SETTING_VARIABLES(name, type, default_value, variables, parse, what) \
  KVIKIO_UNPARENTHESIZE variables,
#define KVIKIO_UNPARENTHESIZE(...) __VA_ARGS__
constexpr std::string_view variables_read[] = {
  KVIKIO_SETTINGS(KVIKIO_SETTING_VARIABLES) "KVIKIO_LOG_LEVEL",
  "KVIKIO_LOG_FILE",
  "KVIKIO_REMOTE_VERBOSE",
  "KVIKIO_WEBHDFS_USERNAME",
};
#undef KVIKIO_SETTING_VARIABLES

std::string_view known(std::string_view name)
{
  if (std::find(std::begin(variables_read), std::end(variables_read), name) ==
      std::end(variables_read)) {
    throw std::logic_error(std::string{name} + " is read but not in variables_read");
  }
  return name;
}

// Reads a setting's variables (aliases of each other) with `parse`, keeping `value` when none is
// set.
template <typename T, typename Parse>
void read_setting(T& value, std::initializer_list<std::string_view> names, Parse parse)
{
  for (auto const name : names) {
    (void)known(name);
  }
  if (auto const found =
        getenv_aliases<T>(names, [&](std::string_view name, std::string_view text) {
          return static_cast<T>(parse(name, text));
        })) {
    value = found->second;
  }
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
#define KVIKIO_READ_SETTING(name, type, default_value, variables, parse, what) \
  read_setting(s.name, {KVIKIO_UNPARENTHESIZE variables}, parse);
  KVIKIO_SETTINGS(KVIKIO_READ_SETTING)
#undef KVIKIO_READ_SETTING
  // KVIKIO_LOG_LEVEL is the logger's own: a value it cannot read is a warning there (the level
  // decides only what is logged, so it never stops I/O), not an error here.
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

}  // namespace kvikio
