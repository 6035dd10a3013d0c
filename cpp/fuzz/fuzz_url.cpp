/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * URLs from users and servers (redirects, WebHDFS answers): parse_url accepts exactly what
 * is_valid_url says, rejects the rest with std::invalid_argument, and a parsed URL built back
 * into text parses to the same parts. percent_encode leaves only unreserved characters (and '/'
 * if kept) and %XX escapes, which decode to the input.
 */
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include <kvikio/detail/url.hpp>

namespace {

bool unreserved(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

int hex(char c)
{
  if (c >= '0' && c <= '9') { return c - '0'; }
  if (c >= 'A' && c <= 'F') { return c - 'A' + 10; }
  return -1;  // percent_encode writes upper-case digits
}

void check_encoding(std::string_view text, bool keep_slash)
{
  std::string const encoded = kvikio::detail::percent_encode(text, keep_slash);
  std::string decoded;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    char const c = encoded[i];
    if (c == '%') {
      if (i + 2 >= encoded.size()) { std::abort(); }  // a truncated escape
      int const hi = hex(encoded[i + 1]);
      int const lo = hex(encoded[i + 2]);
      if (hi < 0 || lo < 0) { std::abort(); }
      decoded += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (unreserved(c) || (keep_slash && c == '/')) {
      decoded += c;
    } else {
      std::abort();  // a character that needed escaping
    }
  }
  if (decoded != text) { std::abort(); }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  std::string_view const text{reinterpret_cast<char const*>(data), size};
  bool const valid = kvikio::detail::is_valid_url(text);
  try {
    auto const url = kvikio::detail::parse_url(text);
    if (!valid) { std::abort(); }  // parse_url and is_valid_url disagree
    auto const again = kvikio::detail::parse_url(kvikio::detail::build_url(url));
    if (again.scheme != url.scheme || again.host != url.host || again.port != url.port ||
        again.path != url.path || again.query != url.query) {
      std::abort();  // building and parsing again changed the URL
    }
  } catch (std::invalid_argument const&) {
    if (valid) { std::abort(); }
  }
  check_encoding(text, true);
  check_encoding(text, false);
  return 0;
}
