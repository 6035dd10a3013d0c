/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * getenv_or: one KVIKIO_* variable (or the first set of several aliases) read and parsed by the
 * same rules as the settings.
 */
#include <kvikio/defaults.hpp>

#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <kvikio/detail/env.hpp>

namespace kvikio {

template <typename T>
T getenv_or(std::string_view env_var_name, T default_val)
{
  // Set is set, empty included (an empty string is a value; for any other type it is an error
  // that names it).
  char const* raw = std::getenv(std::string{env_var_name}.c_str());
  if (raw == nullptr) { return default_val; }
  std::string const text{detail::trim(raw)};
  if constexpr (!std::is_same_v<T, std::string>) {
    if (text.empty()) {
      throw std::invalid_argument("unknown config value " + std::string{env_var_name} + "=" + raw +
                                  " (KvikIO: the variable is set but empty)");
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    return detail::parse_bool(env_var_name, text);
  } else if constexpr (std::is_same_v<T, CompatMode>) {
    return detail::parse_compat_mode(env_var_name, text);
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    return detail::parse_http_status_codes(env_var_name, text);
  } else if constexpr (std::is_same_v<T, RemoteIOBackend>) {
    return detail::parse_remote_backend(env_var_name, text);
  } else if constexpr (std::is_same_v<T, RemoteReactorDispatch>) {
    return detail::parse_reactor_dispatch(env_var_name, text);
  } else if constexpr (std::is_same_v<T, LocalIOBackend>) {
    return detail::parse_local_io_backend(env_var_name, text);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return text;
  } else if constexpr (std::is_floating_point_v<T>) {
    std::size_t used = 0;
    try {
      T const value = static_cast<T>(std::stod(text, &used));
      if (used == text.size()) { return value; }
    } catch (std::exception const&) {  // not a number: the error below names it
    }
    throw std::invalid_argument("unknown config value " + std::string{env_var_name} + "=" + text +
                                ": expected a number");
  } else {
    static_assert(std::is_integral_v<T>);
    if constexpr (std::is_signed_v<T>) {
      // Settings are counts, sizes and durations: negative values are never meaningful.
      return static_cast<T>(detail::parse_unsigned(
        env_var_name, text, 0, static_cast<std::uint64_t>(std::numeric_limits<T>::max())));
    } else {
      return static_cast<T>(
        detail::parse_unsigned(env_var_name, text, 0, std::numeric_limits<T>::max()));
    }
  }
}

// The aliases' contract: the last of the names that is set wins, and names that are set must
// hold the same text.
template <typename T>
std::tuple<std::string_view, T, bool> getenv_or(
  std::initializer_list<std::string_view> env_var_names, T default_val)
{
  if (env_var_names.size() == 0) {
    throw std::invalid_argument(
      "`env_var_names` must contain at least one environment variable name.");
  }
  std::string_view found_name;
  std::string found_text;
  for (auto const name : env_var_names) {
    char const* raw = std::getenv(std::string{name}.c_str());
    if (raw == nullptr) { continue; }
    if (!found_name.empty() && found_text != raw) {
      throw std::invalid_argument("Environment variable " + std::string{name} + " (" + raw +
                                  ") has already been set by its alias " + std::string{found_name} +
                                  " (" + found_text + ") with a different value.");
    }
    found_name = name;
    found_text = raw;
  }
  if (found_name.empty()) { return {found_name, std::move(default_val), false}; }
  return {found_name, getenv_or<T>(found_name, std::move(default_val)), true};
}

#define KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(T)                 \
  template T getenv_or<T>(std::string_view, T);                \
  template std::tuple<std::string_view, T, bool> getenv_or<T>( \
    std::initializer_list<std::string_view>, T);
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(bool)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(int)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(unsigned int)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(long)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(unsigned long)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(CompatMode)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(std::vector<int>)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(RemoteIOBackend)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(RemoteReactorDispatch)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(LocalIOBackend)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(std::string)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(float)
KVIKIO_DETAIL_INSTANTIATE_GETENV_OR(double)
#undef KVIKIO_DETAIL_INSTANTIATE_GETENV_OR

}  // namespace kvikio
