/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/compat_mode.hpp>

#include <stdexcept>
#include <string>

#include <kvikio/detail/env.hpp>

namespace kvikio::detail {

CompatMode parse_compat_mode_str(std::string_view compat_mode_str)
{
  for (auto on : {"on", "true", "yes", "1"}) {
    if (iequals(compat_mode_str, on)) { return CompatMode::ON; }
  }
  for (auto off : {"off", "false", "no", "0"}) {
    if (iequals(compat_mode_str, off)) { return CompatMode::OFF; }
  }
  if (iequals(compat_mode_str, "auto")) { return CompatMode::AUTO; }
  throw std::invalid_argument("unknown compat mode \"" + std::string{compat_mode_str} +
                              "\": expected on|true|yes|1, off|false|no|0 or auto");
}

}  // namespace kvikio::detail
