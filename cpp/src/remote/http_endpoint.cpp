/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdexcept>
#include <string>

#include <kvikio/detail/url.hpp>
#include <kvikio/error.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote/http_headers.hpp"
#include "remote/message_redaction.hpp"
#include "remote/request_fields.hpp"
#include "remote/retry_rule.hpp"

namespace kvikio {

void RemoteEndpoint::setup_range_request(CurlHandle& curl,
                                         std::size_t file_offset,
                                         std::size_t size)
{
  std::string const range =
    std::to_string(file_offset) + "-" + std::to_string(file_offset + size - 1);
  curl.setopt(CURLOPT_RANGE, range.c_str());  // libcurl copies the string
}

HttpEndpoint::HttpEndpoint(std::string url)
  : RemoteEndpoint{RemoteEndpointType::HTTP}, url_{std::move(url)}
{
  // What is wrong with it, in the message: the parser's reason, or the scheme.
  std::string reason;
  try {
    auto const parsed = detail::parse_url(url_);
    if (parsed.scheme != "http" && parsed.scheme != "https") {
      reason = "the scheme is \"" + parsed.scheme + "\", expected http or https";
    }
  } catch (std::exception const& e) {
    reason = e.what();
  }
  KVIKIO_EXPECT(
    reason.empty(),
    "HttpEndpoint: not a valid http(s) URL: \"" + detail::url_for_message(url_) + "\": " + reason,
    std::invalid_argument);
}

void HttpEndpoint::setopt(CurlHandle& curl) { detail::set_request_url(curl, url_); }

std::string HttpEndpoint::str() const { return url_; }

bool HttpEndpoint::is_url_valid(std::string const& url) noexcept
{
  try {
    auto const parsed = detail::parse_url(url);
    // A file to read, not only a server.
    return (parsed.scheme == "http" || parsed.scheme == "https") && parsed.path.size() > 1;
  } catch (...) {
    return false;
  }
}

std::size_t HttpEndpoint::get_file_size() { return detail::head_content_length(*this); }

namespace detail {
std::size_t head_content_length(RemoteEndpoint& endpoint)
{
  CurlHandle curl;
  endpoint.setopt(curl);
  curl.setopt(CURLOPT_NOBODY, 1L);
  CURLcode const r = perform_retrying(curl, "size request to " + url_for_message(endpoint.str()));
  KVIKIO_EXPECT(r == CURLE_OK,
                "KvikIO: size request to " + url_for_message(endpoint.str()) +
                  " failed: " + curl.error_message(r),
                std::runtime_error);
  if (long const status = curl.status(); status / 100 != 2) {
    throw http_status_error(status, "size request to " + url_for_message(endpoint.str()));
  }
  // Read from the header itself, not libcurl's reading of it, which takes the leading digits
  // ("12abc" as 12, "1e3" as 1).
  curl_header* header = nullptr;
  KVIKIO_EXPECT(
    curl_easy_header(curl.get(), "Content-Length", 0, CURLH_HEADER, -1, &header) == CURLHE_OK &&
      header != nullptr && header->value != nullptr,
    "cannot get size of " + url_for_message(endpoint.str()) +
      ", content-length not provided by the server",
    std::runtime_error);
  auto const length = decimal_length(header->value);
  KVIKIO_EXPECT(length.has_value(),
                "KvikIO: size request to " + url_for_message(endpoint.str()) +
                  " answered Content-Length \"" + server_text_for_message(header->value) +
                  "\" (expected a decimal number of bytes)",
                std::runtime_error);
  endpoint.entity_tag_ = response_entity_tag(curl.get());
  return *length;
}

bool is_url_valid_for(RemoteEndpointType type, std::string const& url) noexcept
{
  switch (type) {
    case RemoteEndpointType::S3: return S3Endpoint::is_url_valid(url);
    case RemoteEndpointType::S3_PUBLIC: return S3PublicEndpoint::is_url_valid(url);
    case RemoteEndpointType::S3_PRESIGNED_URL: return S3EndpointWithPresignedUrl::is_url_valid(url);
    case RemoteEndpointType::WEBHDFS: return WebHdfsEndpoint::is_url_valid(url);
    case RemoteEndpointType::HTTP: return HttpEndpoint::is_url_valid(url);
    default: return false;
  }
}

}  // namespace detail

RemoteEndpointType infer_remote_endpoint_type(std::string const& url)
{
  for (auto const type : {RemoteEndpointType::S3,
                          RemoteEndpointType::S3_PRESIGNED_URL,
                          RemoteEndpointType::WEBHDFS,
                          RemoteEndpointType::HTTP}) {
    if (detail::is_url_valid_for(type, url)) { return type; }
  }
  // libcurl's error for text that is not a URL ("Bad scheme"), else the one below.
  (void)detail::UrlParser::parse(url, CURLU_NON_SUPPORT_SCHEME);
  KVIKIO_FAIL("Unsupported endpoint URL. \"" + detail::url_for_message(url) +
                "\" is none of s3://, http(s):// (HTTP, S3 presigned, WebHDFS)",
              std::runtime_error);
}

}  // namespace kvikio
