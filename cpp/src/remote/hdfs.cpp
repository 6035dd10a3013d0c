/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/hdfs.hpp>

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include <kvikio/detail/env.hpp>
#include <kvikio/detail/remote_callback.hpp>
#include <kvikio/detail/url.hpp>
#include <kvikio/error.hpp>

#include "remote/http_headers.hpp"
#include "remote/message_redaction.hpp"
#include "remote/request_fields.hpp"
#include "remote/retry_rule.hpp"

namespace kvikio {
namespace detail {

std::size_t callback_get_string_response(char* data,
                                         std::size_t size,
                                         std::size_t num_bytes,
                                         void* userdata) noexcept
{
  try {
    static_cast<std::string*>(userdata)->append(data, size * num_bytes);
  } catch (...) {
    return 0;
  }
  return size * num_bytes;
}

}  // namespace detail
namespace {

std::size_t collect(char* data, std::size_t size, std::size_t nmemb, void* out) noexcept
{
  // A file status is small: refuse a flood.
  if (static_cast<std::string*>(out)->size() > (1 << 20)) { return 0; }
  return detail::callback_get_string_response(data, size, nmemb, out);
}

}  // namespace

namespace detail {
namespace {

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// Index just past the JSON string that starts at `pos` (a '"'), or npos when it does not end.
std::size_t after_string(std::string const& json, std::size_t pos)
{
  for (++pos; pos < json.size(); ++pos) {
    if (json[pos] == '\\') {
      ++pos;
    } else if (json[pos] == '"') {
      return pos + 1;
    }
  }
  return std::string::npos;
}

/// Index of the value of the member `key` of the object whose '{' is at `open`, that object's
/// own member (not one of an object or array nested in it); npos when it has none.
std::size_t member_value(std::string const& json, std::size_t open, std::string_view key)
{
  int depth = 0;
  for (std::size_t pos = open; pos < json.size();) {
    char const c = json[pos];
    if (c == '"') {
      std::size_t const end = after_string(json, pos);
      if (end == std::string::npos) { return std::string::npos; }
      std::size_t colon = end;
      while (colon < json.size() && is_json_space(json[colon])) {
        ++colon;
      }
      if (depth == 1 && colon < json.size() && json[colon] == ':' &&
          std::string_view{json}.substr(pos + 1, end - pos - 2) == key) {
        std::size_t value = colon + 1;
        while (value < json.size() && is_json_space(json[value])) {
          ++value;
        }
        return value;
      }
      pos = end;
      continue;
    }
    if (c == '{' || c == '[') { ++depth; }
    if (c == '}' || c == ']') {
      if (--depth == 0) { return std::string::npos; }
    }
    ++pos;
  }
  return std::string::npos;
}

}  // namespace

std::size_t parse_webhdfs_length(std::string const& json)
{
  // {"FileStatus":{..., "length":1234, ...}}: the "length" of the FileStatus object itself
  // (or, in an answer without a FileStatus, as simple test servers give, the outer object's
  // own "length"), a plain decimal integer ended by ',' or '}' (not 8.3e6, 12abc or -1), read
  // strictly: a size read wrong would truncate or overrun every later read. A "length" of any
  // other nested object is never taken.
  std::size_t value = std::string::npos;
  if (auto const outer = json.find('{'); outer != std::string::npos) {
    std::size_t const status = member_value(json, outer, "FileStatus");
    if (status == std::string::npos) {
      value = member_value(json, outer, "length");
    } else if (status < json.size() && json[status] == '{') {
      value = member_value(json, status, "length");
    }
  }
  std::optional<std::size_t> length;
  if (value < json.size()) {
    std::size_t const end = json.find_first_of(",} \t\r\n", value);
    std::size_t next      = end;
    while (next < json.size() && is_json_space(json[next])) {
      ++next;
    }
    if (next < json.size() && (json[next] == ',' || json[next] == '}')) {
      length = decimal_length(std::string_view{json}.substr(value, end - value));
    }
  }
  if (!length) {
    // The fixed wording callers match on (it names a regular expression, though none is used
    // here), then what was wrong.
    throw std::runtime_error(
      "Regular expression search failed. Cannot extract file length from the JSON response. "
      "[KvikIO: WebHDFS GETFILESTATUS answer without a usable FileStatus \"length\" (a "
      "decimal integer): " +
      server_text_for_message(json) + "]");
  }
  return *length;
}
}  // namespace detail

WebHdfsEndpoint::WebHdfsEndpoint(std::string url, std::optional<std::string> username)
  : RemoteEndpoint{RemoteEndpointType::WEBHDFS}
{
  KVIKIO_EXPECT(is_url_valid(url),
                "WebHdfsEndpoint: not a WebHDFS URL (http(s)://host:port/webhdfs/v1/path): \"" +
                  detail::url_for_message(url) + "\"",
                std::invalid_argument);
  auto parsed = detail::parse_url(url);
  // A user given in the URL's query (decoded: it is encoded once, in with_op()), unless the
  // argument overrides it.
  if (!username) { username = detail::query_parameter(parsed.query, "user.name"); }
  parsed.query = "";
  base_        = detail::build_url(parsed);
  username_    = username ? username : detail::getenv_trimmed("KVIKIO_WEBHDFS_USERNAME");
  if (username_) { detail::check_header_value("the WebHDFS user name", *username_); }
}

WebHdfsEndpoint::WebHdfsEndpoint(std::string host,
                                 std::string port,
                                 std::string path,
                                 std::optional<std::string> username)
  : WebHdfsEndpoint(detail::webhdfs_url(host, port, path), std::move(username))
{
}

bool WebHdfsEndpoint::is_url_valid(std::string const& url) noexcept
{
  try {
    auto const parsed = detail::parse_url(url);
    // A name node's port given, and a file after /webhdfs/v1/.
    return (parsed.scheme == "http" || parsed.scheme == "https") && parsed.port.has_value() &&
           parsed.path.rfind("/webhdfs/v1/", 0) == 0 && parsed.path.size() > 12;
  } catch (...) {
    return false;
  }
}

std::string WebHdfsEndpoint::with_op(std::string const& query) const
{
  std::string url = base_ + "?" + query;
  if (username_) { url += "&user.name=" + detail::percent_encode(*username_, false); }
  return url;
}

void WebHdfsEndpoint::setopt(CurlHandle& curl)
{
  detail::set_request_url(curl, with_op("op=OPEN"));
}

void WebHdfsEndpoint::setup_range_request(CurlHandle& curl,
                                          std::size_t file_offset,
                                          std::size_t size)
{
  std::string const url =
    with_op("op=OPEN&offset=" + std::to_string(file_offset) + "&length=" + std::to_string(size));
  detail::set_request_url(curl, url);
}

std::string WebHdfsEndpoint::str() const { return base_; }

std::size_t WebHdfsEndpoint::get_file_size()
{
  CurlHandle curl;
  std::string const url = with_op("op=GETFILESTATUS");
  detail::set_request_url(curl, url);
  std::string body;
  curl.setopt(CURLOPT_WRITEFUNCTION, &collect);
  curl.setopt(CURLOPT_WRITEDATA, static_cast<void*>(&body));
  CURLcode const r =
    detail::perform_retrying(curl, "GETFILESTATUS of " + base_, [&] { body.clear(); });
  KVIKIO_EXPECT(r == CURLE_OK,
                "KvikIO: GETFILESTATUS of " + base_ + " failed: " + curl.error_message(r),
                std::runtime_error);
  long const status = curl.status();
  if (status >= 400) { throw detail::http_status_error(status, "GETFILESTATUS of " + base_, body); }
  KVIKIO_EXPECT(status == 200,
                "KvikIO: GETFILESTATUS of " + base_ + " answered HTTP " + std::to_string(status) +
                  ": " + detail::error_body_for_message(body),
                std::runtime_error);
  return detail::parse_webhdfs_length(body);
}

}  // namespace kvikio
