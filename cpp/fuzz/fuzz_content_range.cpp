/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Response header lines from a server: header_value() finds a Content-Range only in a line that
 * names it, and gives it without surrounding whitespace, as a part of the line;
 * content_range_length() gives a number or a std::runtime_error, nothing else, and a number only
 * for a value ending in "/<that number>". A well-formed line with the number the first eight
 * bytes make gives exactly that number back.
 */
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "remote/http_headers.hpp"

namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

void check_line(std::string_view line)
{
  constexpr std::string_view name = "content-range";
  auto const value                = kvikio::detail::header_value(line, name);
  if (!value.has_value()) { return; }
  if (line.size() <= name.size() || line[name.size()] != ':') { std::abort(); }
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) { std::abort(); }
  }
  if (!value->empty() && (is_space(value->front()) || is_space(value->back()))) { std::abort(); }
  if (value->data() < line.data() || value->data() + value->size() > line.data() + line.size()) {
    std::abort();
  }
  try {
    std::size_t const length = kvikio::detail::content_range_length(*value);
    auto const slash         = value->rfind('/');
    if (slash == std::string_view::npos) { std::abort(); }
    std::string const digits{value->substr(slash + 1)};
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        std::strtoull(digits.c_str(), nullptr, 10) != length) {
      std::abort();
    }
  } catch (std::runtime_error const&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  std::string_view const text{reinterpret_cast<char const*>(data), size};
  check_line(text);
  check_line("Content-Range: " + std::string{text});
  if (size >= sizeof(std::uint64_t)) {
    std::uint64_t n = 0;
    std::memcpy(&n, data, sizeof(n));
    std::string const line = "CONTENT-range:  bytes 0-0/" + std::to_string(n) + " \r\n";
    auto const value       = kvikio::detail::header_value(line, "content-range");
    if (!value.has_value() || *value != "bytes 0-0/" + std::to_string(n)) { std::abort(); }
    if (kvikio::detail::content_range_length(*value) != n) { std::abort(); }
  }
  return 0;
}
