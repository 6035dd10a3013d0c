/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/env.hpp
 * @brief Parsing of environment values. Each parser takes the variable's name only to put it in
 * its error message, which reads `<NAME>=<value>: expected <what>`.
 */

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvikio::detail {

/// @brief `s` without leading and trailing white space.
[[nodiscard]] std::string_view trim(std::string_view s) noexcept;

/**
 * @brief The value of an environment variable, with surrounding white space removed.
 *
 * An unset variable and one set to only white space both give `std::nullopt`: `export VAR=`
 * means "use the default".
 */
std::optional<std::string> getenv_trimmed(std::string_view name);

/// @brief Case-insensitive ASCII comparison.
bool iequals(std::string_view a, std::string_view b) noexcept;

/**
 * @brief A decimal integer in [min, max] (no sign, no suffix, no trailing characters).
 * @throws std::invalid_argument naming the variable, the value and the range.
 */
std::uint64_t parse_unsigned(std::string_view name,
                             std::string_view value,
                             std::uint64_t min,
                             std::uint64_t max);

/**
 * @brief `true|on|yes|1` or `false|off|no|0`, any case.
 * @throws std::invalid_argument naming the variable and the value.
 */
bool parse_bool(std::string_view name, std::string_view value);

/**
 * @brief A comma-separated list of HTTP status codes (each in 100..599), e.g. `429,500,503`.
 * @throws std::invalid_argument naming the variable, the value and the bad element.
 */
std::vector<int> parse_http_status_codes(std::string_view name, std::string_view value);

/**
 * @brief Reads the first of several spellings of one setting that is set.
 *
 * @return the name that was set and its value, or `std::nullopt` if none is set.
 * @throws std::invalid_argument if two are set to values that `same` says differ.
 */
template <typename T, typename Parse>
std::optional<std::pair<std::string_view, T>> getenv_aliases(
  std::initializer_list<std::string_view> names, Parse parse)
{
  std::optional<std::pair<std::string_view, T>> found;
  std::string found_text;
  for (auto name : names) {
    auto text = getenv_trimmed(name);
    if (!text) { continue; }
    T value = parse(name, *text);
    if (!found) {
      found.emplace(name, std::move(value));
      found_text = *text;
    } else if (!(found->second == value)) {
      // Upstream's wording (getenv_or's), then what to do.
      throw std::invalid_argument("Environment variable " + std::string{name} + " (" +
                                  std::string{*text} + ") has already been set by its alias " +
                                  std::string{found->first} + " (" + found_text +
                                  ") with a different value. Set only one of them.");
    }
  }
  return found;
}

}  // namespace kvikio::detail
