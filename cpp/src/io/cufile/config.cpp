/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/cufile/config.hpp>

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace kvikio {

std::string const& config_path()
{
  // The file cuFile reads: CUFILE_ENV_PATH_JSON's, else its default; "" if neither exists.
  static std::string const path = [] {
    char const* env = std::getenv("CUFILE_ENV_PATH_JSON");
    for (char const* candidate : {env, "/etc/cufile.json"}) {
      if (candidate != nullptr && *candidate != '\0' && ::access(candidate, F_OK) == 0) {
        return std::string{candidate};
      }
    }
    return std::string{};
  }();
  return path;
}

}  // namespace kvikio
