/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/url.hpp>

#include <cctype>
#include <charconv>
#include <stdexcept>
#include <string>

namespace kvikio::detail {
namespace {

[[noreturn]] void bad(std::string_view url, std::string const& why)
{
  std::string text = "invalid URL \"";
  text.append(url_for_message(url)).append("\": ").append(why);
  throw std::invalid_argument(text);
}

bool is_unreserved(unsigned char c)
{
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

}  // namespace

Url parse_url(std::string_view url)
{
  Url out;
  auto const sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) { bad(url, "expected scheme://host"); }
  for (char c : url.substr(0, sep)) {
    auto const u = static_cast<unsigned char>(c);
    if (std::isalnum(u) == 0 && c != '+' && c != '-' && c != '.') {
      bad(url, "bad character in the scheme");
    }
    out.scheme += static_cast<char>(std::tolower(u));
  }
  for (char c : url) {
    auto const u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) { bad(url, "control, space or non-ASCII character"); }
  }
  std::string_view rest      = url.substr(sep + 3);
  auto const authority_end   = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  rest = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) {
    bad(url, "user information is not supported");
  }
  auto const colon      = authority.rfind(':');
  std::string_view host = authority;
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    host                  = authority.substr(0, colon);
    std::string_view port = authority.substr(colon + 1);
    unsigned value{};
    auto const [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
        value > 65535) {
      std::string why = "bad port \"";
      why.append(port).append("\"");
      bad(url, why);
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  if (host.empty()) { bad(url, "empty host"); }
  out.host            = std::string{host};
  auto const fragment = rest.find('#');
  if (fragment != std::string_view::npos) { rest = rest.substr(0, fragment); }
  auto const q = rest.find('?');
  out.path     = std::string{rest.substr(0, q)};
  if (q != std::string_view::npos) { out.query = std::string{rest.substr(q + 1)}; }
  return out;
}

bool has_scheme(std::string_view url, std::string_view scheme) noexcept
{
  if (url.size() < scheme.size() + 3 || url.substr(scheme.size(), 3) != "://") { return false; }
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) { return false; }
  }
  return true;
}

std::string url_for_message(std::string_view url)
{
  auto const cut         = url.find_first_of("?#");
  std::string_view shown = url.substr(0, cut);
  std::string out;
  auto const scheme_end = shown.find("://");
  if (scheme_end != std::string_view::npos) {
    auto const authority = scheme_end + 3;
    auto const at        = shown.find('@', authority);
    if (at != std::string_view::npos && at < shown.find('/', authority)) {
      out.append(shown.substr(0, authority)).append("<hidden>");
      shown.remove_prefix(at);
    }
  }
  out.append(shown);
  if (cut != std::string_view::npos) { out.append("?<hidden>"); }
  return out;
}

bool is_valid_url(std::string_view url) noexcept
{
  try {
    (void)parse_url(url);
    return true;
  } catch (...) {
    return false;
  }
}

std::string percent_encode(std::string_view text, bool keep_slash)
{
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    auto const u = static_cast<unsigned char>(c);
    if (is_unreserved(u) || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 0xF];
    }
  }
  return out;
}

std::string build_url(Url const& url)
{
  // Appends rather than operator+ chains: GCC 12 reports a false -Wrestrict on those.
  std::string out = url.scheme;
  out.append("://").append(url.host);
  if (url.port) { out.append(":").append(std::to_string(*url.port)); }
  out.append(url.path);
  if (!url.query.empty()) { out.append("?").append(url.query); }
  return out;
}

}  // namespace kvikio::detail
