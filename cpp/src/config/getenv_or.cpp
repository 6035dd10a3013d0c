/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * getenv_or: one KVIKIO_* variable (or the first set of several aliases) read and parsed by the
 * same rules as the settings.
 */
#include <kvikio/defaults.hpp>

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
  auto text = detail::getenv_trimmed(env_var_name);
  if (!text) { return default_val; }
  if constexpr (std::is_same_v<T, bool>) {
    return detail::parse_bool(env_var_name, *text);
  } else if constexpr (std::is_same_v<T, CompatMode>) {
    return detail::parse_compat_mode(env_var_name, *text);
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    return detail::parse_http_status_codes(env_var_name, *text);
  } else if constexpr (std::is_same_v<T, RemoteIOBackend>) {
    return detail::parse_remote_backend(env_var_name, *text);
  } else if constexpr (std::is_same_v<T, RemoteReactorDispatch>) {
    return detail::parse_reactor_dispatch(env_var_name, *text);
  } else if constexpr (std::is_same_v<T, LocalIOBackend>) {
    return detail::parse_local_io_backend(env_var_name, *text);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return *text;
  } else if constexpr (std::is_floating_point_v<T>) {
    std::size_t used = 0;
    try {
      T const value = static_cast<T>(std::stod(*text, &used));
      if (used == text->size()) { return value; }
    } catch (std::exception const&) {  // not a number: the error below names it
    }
    throw std::invalid_argument("unknown config value " + std::string{env_var_name} + "=" + *text +
                                ": expected a number");
  } else {
    static_assert(std::is_integral_v<T>);
    if constexpr (std::is_signed_v<T>) {
      // Settings are counts, sizes and durations: negative values are never meaningful.
      return static_cast<T>(detail::parse_unsigned(
        env_var_name, *text, 0, static_cast<std::uint64_t>(std::numeric_limits<T>::max())));
    } else {
      return static_cast<T>(
        detail::parse_unsigned(env_var_name, *text, 0, std::numeric_limits<T>::max()));
    }
  }
}

template <typename T>
std::tuple<std::string_view, T, bool> getenv_or(
  std::initializer_list<std::string_view> env_var_names, T default_val)
{
  auto found = detail::getenv_aliases<T>(
    env_var_names, [](std::string_view name, std::string_view) { return getenv_or<T>(name, T{}); });
  if (!found) { return {std::string_view{}, std::move(default_val), false}; }
  return {found->first, std::move(found->second), true};
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
