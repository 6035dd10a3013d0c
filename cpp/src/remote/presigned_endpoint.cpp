/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <algorithm>
#include <string>

#include <kvikio/detail/url.hpp>
#include <kvikio/error.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote/http_headers.hpp"
#include "remote/message_redaction.hpp"
#include "remote/request_fields.hpp"
#include "remote/retry_rule.hpp"

namespace kvikio {
namespace {

struct HeaderCapture {
  std::string content_range;
};

std::size_t capture_content_range(char* data,
                                  std::size_t size,
                                  std::size_t nmemb,
                                  void* self) noexcept
{
  auto const value = detail::header_value({data, size * nmemb}, "content-range");
  if (value.has_value()) {
    try {
      static_cast<HeaderCapture*>(self)->content_range = std::string{*value};
    } catch (...) {  // out of memory: the size request fails as unusable
    }
  }
  return size * nmemb;
}

// The body of the answer: one byte when the range is honoured, otherwise an error document
// (S3 says why a presigned URL is refused: expired, wrong signature), kept for the message.
std::size_t keep_body_start(char* data, std::size_t size, std::size_t nmemb, void* body) noexcept
{
  auto* kept                     = static_cast<std::string*>(body);
  std::size_t const n            = size * nmemb;
  constexpr std::size_t max_kept = 2048;
  kept->append(data, std::min(n, max_kept - std::min(max_kept, kept->size())));
  return n;
}

}  // namespace

S3EndpointWithPresignedUrl::S3EndpointWithPresignedUrl(std::string presigned_url)
  : RemoteEndpoint{RemoteEndpointType::S3_PRESIGNED_URL}, url_{std::move(presigned_url)}
{
  KVIKIO_EXPECT(is_url_valid(url_),
                "S3EndpointWithPresignedUrl: not a presigned http(s) URL (no X-Amz-Signature): \"" +
                  detail::url_for_message(url_) + "\"",
                std::invalid_argument);
}

void S3EndpointWithPresignedUrl::setopt(CurlHandle& curl) { detail::set_request_url(curl, url_); }

std::string S3EndpointWithPresignedUrl::str() const
{
  return url_.substr(0, url_.find('?'));  // the query holds the signature: keep it out of messages
}

bool S3EndpointWithPresignedUrl::is_url_valid(std::string const& url) noexcept
{
  try {
    auto const parsed = detail::parse_url(url);
    return (parsed.scheme == "http" || parsed.scheme == "https") &&
           parsed.query.find("X-Amz-Signature=") != std::string::npos;
  } catch (...) {
    return false;
  }
}

std::size_t S3EndpointWithPresignedUrl::get_file_size()
{
  CurlHandle curl;
  setopt(curl);
  curl.setopt(CURLOPT_RANGE, "0-0");
  HeaderCapture headers;
  curl.setopt(CURLOPT_HEADERFUNCTION, &capture_content_range);
  curl.setopt(CURLOPT_HEADERDATA, static_cast<void*>(&headers));
  std::string body;
  curl.setopt(CURLOPT_WRITEFUNCTION, &keep_body_start);
  curl.setopt(CURLOPT_WRITEDATA, static_cast<void*>(&body));
  CURLcode const r = detail::perform_retrying(curl, "size request to " + str(), [&] {
    headers = HeaderCapture{};
    body.clear();
  });
  KVIKIO_EXPECT(r == CURLE_OK,
                "KvikIO: size request to " + str() + " failed: " + curl.error_message(r),
                std::runtime_error);
  long const status = curl.status();
  if (status >= 400) { throw detail::http_status_error(status, "size request to " + str(), body); }
  KVIKIO_EXPECT(status == 206,
                "KvikIO: size request to " + str() + " answered HTTP " + std::to_string(status) +
                  " (expected 206 to a Range request)" +
                  (body.empty() ? "" : ": " + detail::error_body_for_message(body)),
                std::runtime_error);
  set_entity_tag(detail::response_entity_tag(curl.get()));
  // "bytes 0-0/<total>"
  try {
    return detail::content_range_length(headers.content_range);
  } catch (std::runtime_error const& e) {
    throw std::runtime_error("KvikIO: " + str() + " answered " + e.what());
  }
}

}  // namespace kvikio
