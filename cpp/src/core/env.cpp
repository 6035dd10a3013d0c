/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/env.hpp>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace kvikio::detail {

std::string_view trim(std::string_view s) noexcept
{
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

namespace {

// The fixed wording callers match on first, then what was expected.
[[noreturn]] void invalid(std::string_view name, std::string_view value, std::string_view expected)
{
  throw std::invalid_argument("unknown config value " + std::string{name} + "=" +
                              std::string{value} + ": expected " + std::string{expected});
}

}  // namespace

std::optional<std::string> getenv_trimmed(std::string_view name)
{
  char const* raw = std::getenv(std::string{name}.c_str());
  if (raw == nullptr) { return std::nullopt; }
  auto const value = trim(raw);
  if (value.empty()) { return std::nullopt; }
  return std::string{value};
}

bool iequals(std::string_view a, std::string_view b) noexcept
{
  if (a.size() != b.size()) { return false; }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::uint64_t parse_unsigned(std::string_view name,
                             std::string_view value,
                             std::uint64_t min,
                             std::uint64_t max)
{
  auto const text = trim(value);
  std::uint64_t result{};
  // from_chars accepts no sign, no white space and no base prefix: exactly what we want.
  auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), result);
  bool const parsed    = !text.empty() && ec == std::errc{} && end == text.data() + text.size();
  if (parsed && min == 1 && result == 0) {
    throw std::invalid_argument(std::string{name} + " has to be a positive integer (" +
                                std::string{name} + "=" + std::string{value} + ")");
  }
  if (!parsed || result < min || result > max) {
    std::string expected = "an integer in [" + std::to_string(min) + ", ";
    expected +=
      max == std::numeric_limits<std::uint64_t>::max() ? "2^64)" : std::to_string(max) + "]";
    if (!parsed) { invalid(name, value, expected); }
    // A number, but not one the setting takes: said as such, not as an unknown value.
    throw std::invalid_argument(std::string{name} + "=" + std::string{value} +
                                " is out of range: expected " + expected);
  }
  return result;
}

bool parse_bool(std::string_view name, std::string_view value)
{
  auto const text = trim(value);
  for (auto yes : {"true", "on", "yes", "1"}) {
    if (iequals(text, yes)) { return true; }
  }
  for (auto no : {"false", "off", "no", "0"}) {
    if (iequals(text, no)) { return false; }
  }
  invalid(name, value, "a boolean: true|on|yes|1 or false|off|no|0");
}

std::vector<int> parse_http_status_codes(std::string_view name, std::string_view value)
{
  std::vector<int> codes;
  std::string_view rest = value;
  while (true) {
    auto const comma = rest.find(',');
    auto const item  = trim(rest.substr(0, comma));
    int code{};
    auto const [end, ec] = std::from_chars(item.data(), item.data() + item.size(), code);
    if (item.empty() || ec != std::errc{} || end != item.data() + item.size() || code < 100 ||
        code > 599) {
      invalid(name,
              value,
              "a comma-separated list of HTTP status codes in [100, 599]; \"" + std::string{item} +
                "\" is not one");
    }
    codes.push_back(code);
    if (comma == std::string_view::npos) { break; }
    rest.remove_prefix(comma + 1);
  }
  return codes;
}

}  // namespace kvikio::detail
