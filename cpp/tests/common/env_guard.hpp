/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvikio::test {

/// Sets (or unsets) environment variables for one scope and restores them afterwards.
class EnvGuard {
 public:
  EnvGuard(std::initializer_list<std::pair<std::string, std::optional<std::string>>> vars)
  {
    for (auto const& [name, value] : vars) {
      char const* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>{old} : std::nullopt);
      apply(name, value);
    }
  }
  ~EnvGuard()
  {
    for (auto const& [name, value] : saved_) {
      apply(name, value);
    }
  }
  EnvGuard(EnvGuard const&)            = delete;
  EnvGuard& operator=(EnvGuard const&) = delete;

 private:
  static void apply(std::string const& name, std::optional<std::string> const& value)
  {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace kvikio::test
