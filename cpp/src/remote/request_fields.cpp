/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "remote/request_fields.hpp"

#include <cctype>
#include <stdexcept>
#include <string>

#include <kvikio/detail/url.hpp>

namespace kvikio::detail {
namespace {

bool is_alnum(char c) noexcept { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

int hex_digit(char c) noexcept
{
  if (c >= '0' && c <= '9') { return c - '0'; }
  if (c >= 'a' && c <= 'f') { return c - 'a' + 10; }
  if (c >= 'A' && c <= 'F') { return c - 'A' + 10; }
  return -1;
}

}  // namespace

void check_header_value(std::string_view field, std::string_view value)
{
  auto const at = value.find_first_of(std::string_view{"\r\n\0", 3});
  if (at == std::string_view::npos) { return; }
  throw UnsafeRequestField("KvikIO: " + std::string{field} + " holds a " +
                           (value[at] == '\r'   ? "CR"
                            : value[at] == '\n' ? "LF"
                                                : "NUL") +
                           " character (byte " + std::to_string(at) + " of " +
                           std::to_string(value.size()) +
                           "); a value sent in an HTTP request cannot hold CR, LF or NUL");
}

std::string const& checked_s3_bucket(std::string const& bucket)
{
  bool ok = !bucket.empty() && bucket.size() <= 63 && is_alnum(bucket.front()) &&
            is_alnum(bucket.back()) && bucket.find("..") == std::string::npos;
  for (char const c : bucket) {
    ok = ok && (is_alnum(c) || c == '.' || c == '-' || c == '_');
  }
  if (!ok) {
    throw std::invalid_argument(
      "S3: the bucket name \"" + url_for_message(bucket) +
      "\" is not a bucket name (1 to 63 letters, digits, '.', '-' or '_', beginning and ending "
      "with a letter or digit, without \"..\")");
  }
  return bucket;
}

std::string s3_key_path(std::string_view key)
{
  if (key.empty()) { throw std::invalid_argument("S3: the object key is empty"); }
  check_header_value("the S3 object key", key);
  return percent_encode(key, /*keep_slash=*/true);
}

std::string webhdfs_url(std::string const& host, std::string const& port, std::string const& path)
{
  bool const bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  bool host_ok         = !host.empty() && host.find_first_of("/?#@ ") == std::string::npos &&
                 (bracketed || host.find(':') == std::string::npos);
  for (char const c : host) {
    host_ok =
      host_ok && static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  }
  if (!host_ok) {
    throw std::invalid_argument("WebHdfsEndpoint: the host \"" + url_for_message(host) +
                                "\" is not a host name or address");
  }
  bool port_ok = !port.empty() && port.size() <= 5;
  for (char const c : port) {
    port_ok = port_ok && c >= '0' && c <= '9';
  }
  port_ok = port_ok && std::stoul(port) >= 1 && std::stoul(port) <= 65535;
  if (!port_ok) {
    throw std::invalid_argument("WebHdfsEndpoint: the port \"" + url_for_message(port) +
                                "\" is not a port (1 to 65535)");
  }
  return "http://" + host + ":" + port + "/webhdfs/v1/" +
         percent_encode(path.empty() || path[0] != '/' ? path : path.substr(1));
}

void set_request_url(CurlHandle& curl, std::string const& url)
{
  curl.setopt(CURLOPT_URL, url.c_str());
  curl.setopt(CURLOPT_PATH_AS_IS, 1L);
}

std::optional<std::string> query_parameter(std::string_view query, std::string_view name)
{
  while (!query.empty()) {
    auto const amp              = query.find('&');
    std::string_view const pair = query.substr(0, amp);
    query         = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto const eq = pair.find('=');
    if (pair.substr(0, eq) != name) { continue; }
    std::string_view const encoded =
      eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    std::string value;
    for (std::size_t i = 0; i < encoded.size(); ++i) {
      if (encoded[i] != '%') {
        value += encoded[i] == '+' ? ' ' : encoded[i];
        continue;
      }
      bool const whole = i + 2 < encoded.size();
      int const high   = whole ? hex_digit(encoded[i + 1]) : -1;
      int const low    = whole ? hex_digit(encoded[i + 2]) : -1;
      if (high < 0 || low < 0) {
        throw std::invalid_argument("KvikIO: the URL parameter " + std::string{name} +
                                    " has a malformed percent-escape (expected %XX, two hex "
                                    "digits)");
      }
      value += static_cast<char>(high * 16 + low);
      i += 2;
    }
    check_header_value("the URL parameter " + std::string{name}, value);
    return value;
  }
  return std::nullopt;
}

}  // namespace kvikio::detail
