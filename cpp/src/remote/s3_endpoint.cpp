/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <cctype>
#include <stdexcept>
#include <string>
#include <string_view>

#include <kvikio/detail/env.hpp>
#include <kvikio/detail/url.hpp>
#include <kvikio/error.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote/request_fields.hpp"

namespace kvikio {
namespace {

// A credential goes into a header (the access key into Authorization, the token as it is): one
// with CR, LF or NUL is refused before any request is built.
std::string from_arg_or_env(std::optional<std::string> value,
                            char const* variable,
                            char const* what)
{
  if (!value) { value = detail::getenv_trimmed(variable); }
  if (!value) {
    throw std::invalid_argument(std::string{"S3: must provide `"} + what + "` if " + variable +
                                " isn't set.");
  }
  detail::check_header_value(std::string{"S3: `"} + what + "` (or " + variable + ")", *value);
  return *value;
}

std::optional<std::string> session_token(std::optional<std::string> token)
{
  if (!token) { token = detail::getenv_trimmed("AWS_SESSION_TOKEN"); }
  if (token) {
    detail::check_header_value("S3: `aws_session_token` (or AWS_SESSION_TOKEN)", *token);
  }
  return token;
}

/// `region` itself, when it can only be a region name: letters, digits, '-' and '_' (AWS's are
/// lowercase with '-'; S3-compatible servers name theirs freely). It is pasted into the host
/// name and the signature scope, where a '.', '/', ':' or '@' would send the signed request
/// elsewhere or sign it for another scope.
std::string checked_region(std::string region)
{
  bool ok = !region.empty() && region.size() <= 64;
  for (char const c : region) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_');
  }
  KVIKIO_EXPECT(ok,
                "S3: the region \"" + region +
                  "\" is not a region name (letters, digits, '-' and '_', such as us-east-1)",
                std::invalid_argument);
  return region;
}

// SHA-256 of the empty body: what every GET signs as its payload. Sent explicitly because S3
// servers require the header and libcurl 7.88 does not add it.
constexpr char const* empty_payload_sha256 =
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace

S3Endpoint::S3Endpoint(std::string url,
                       std::optional<std::string> aws_region,
                       std::optional<std::string> aws_access_key,
                       std::optional<std::string> aws_secret_access_key,
                       std::optional<std::string> aws_session_token)
  : RemoteEndpoint{RemoteEndpointType::S3},
    url_{std::move(url)},
    region_{
      checked_region(from_arg_or_env(std::move(aws_region), "AWS_DEFAULT_REGION", "aws_region"))},
    access_key_{from_arg_or_env(std::move(aws_access_key), "AWS_ACCESS_KEY_ID", "aws_access_key")},
    secret_{from_arg_or_env(
      std::move(aws_secret_access_key), "AWS_SECRET_ACCESS_KEY", "aws_secret_access_key")},
    session_token_{session_token(std::move(aws_session_token))}
{
  KVIKIO_EXPECT(HttpEndpoint::is_url_valid(url_),
                "S3Endpoint: not a valid http(s) URL: \"" + detail::url_for_message(url_) + "\"",
                std::invalid_argument);
}

S3Endpoint::S3Endpoint(std::pair<std::string, std::string> bucket_and_object_names,
                       std::optional<std::string> aws_region,
                       std::optional<std::string> aws_access_key,
                       std::optional<std::string> aws_secret_access_key,
                       std::optional<std::string> aws_endpoint_url,
                       std::optional<std::string> aws_session_token)
  : S3Endpoint(url_from_bucket_and_object(bucket_and_object_names.first,
                                          bucket_and_object_names.second,
                                          aws_region,
                                          aws_endpoint_url),
               aws_region,
               std::move(aws_access_key),
               std::move(aws_secret_access_key),
               std::move(aws_session_token))
{
}

std::string S3Endpoint::url_from_bucket_and_object(std::string bucket_name,
                                                   std::string object_name,
                                                   std::optional<std::string> aws_region,
                                                   std::optional<std::string> aws_endpoint_url)
{
  KVIKIO_EXPECT(!bucket_name.empty() && !object_name.empty(),
                "S3Endpoint: empty bucket or object name",
                std::invalid_argument);
  auto endpoint = aws_endpoint_url ? aws_endpoint_url : detail::getenv_trimmed("AWS_ENDPOINT_URL");
  // The bucket becomes a path segment or a host label, and the key a path: checked and encoded
  // by the request's rules before either is pasted in.
  std::string const& bucket = detail::checked_s3_bucket(bucket_name);
  std::string const object  = detail::s3_key_path(object_name);
  if (endpoint) {
    // The bucket and object are appended to its path: a query or fragment would turn them
    // into part of it, and the request would name another resource.
    KVIKIO_EXPECT(endpoint->find_first_of("?#") == std::string::npos,
                  "S3: the endpoint URL \"" + detail::url_for_message(*endpoint) +
                    "\" (AWS_ENDPOINT_URL or aws_endpoint_url) has a query or fragment; it must "
                    "be scheme://host[:port][/path]",
                  std::invalid_argument);
    std::string base = *endpoint;
    while (!base.empty() && base.back() == '/') {
      base.pop_back();
    }
    return base + "/" + bucket + "/" + object;
  }
  std::string const region =
    checked_region(from_arg_or_env(std::move(aws_region), "AWS_DEFAULT_REGION", "aws_region"));
  return "https://" + bucket + ".s3." + region + ".amazonaws.com/" + object;
}

std::pair<std::string, std::string> S3Endpoint::parse_s3_url(std::string const& s3_url)
{
  auto const slash = s3_url.find('/', 5);
  KVIKIO_EXPECT(detail::has_scheme(s3_url, "s3") && slash != std::string::npos && slash > 5 &&
                  slash + 1 < s3_url.size(),
                "Input string does not match the expected S3 URL format. \"" + s3_url +
                  "\" is not s3://<bucket>/<object>",
                std::invalid_argument);
  return {s3_url.substr(5, slash - 5), s3_url.substr(slash + 1)};
}

bool S3Endpoint::is_url_valid(std::string const& url) noexcept
{
  try {
    if (detail::has_scheme(url, "s3")) {
      (void)parse_s3_url(url);
      return true;
    }
    return detail::is_aws_s3_http_url(url) && !S3EndpointWithPresignedUrl::is_url_valid(url);
  } catch (...) {
    return false;
  }
}

void S3Endpoint::setopt(CurlHandle& curl)
{
  detail::set_request_url(curl, url_);
  std::string const sigv4 = "aws:amz:" + region_ + ":s3";
  curl.setopt(CURLOPT_AWS_SIGV4, sigv4.c_str());
  // Apart, not as "key:secret": a ':' in the access key would move the split.
  curl.setopt(CURLOPT_USERNAME, access_key_.c_str());
  curl.setopt(CURLOPT_PASSWORD, secret_.c_str());
  curl.append_header(std::string{"x-amz-content-sha256: "} + empty_payload_sha256);
  if (session_token_) { curl.append_header("x-amz-security-token: " + *session_token_); }
  // A signed request is not followed to a redirect's target: libcurl would send the session
  // token (a header of ours) there, whatever its origin, and a signature is for one host.
  curl.setopt(CURLOPT_FOLLOWLOCATION, 0L);
}

std::string S3Endpoint::str() const { return url_; }

std::size_t S3Endpoint::get_file_size() { return detail::head_content_length(*this); }

S3PublicEndpoint::S3PublicEndpoint(std::string url)
  : RemoteEndpoint{RemoteEndpointType::S3_PUBLIC}, url_{std::move(url)}
{
  KVIKIO_EXPECT(
    HttpEndpoint::is_url_valid(url_),
    "S3PublicEndpoint: not a valid http(s) URL: \"" + detail::url_for_message(url_) + "\"",
    std::invalid_argument);
}

void S3PublicEndpoint::setopt(CurlHandle& curl) { detail::set_request_url(curl, url_); }

std::string S3PublicEndpoint::str() const { return url_; }

std::size_t S3PublicEndpoint::get_file_size() { return detail::head_content_length(*this); }

bool S3PublicEndpoint::is_url_valid(std::string const& url) noexcept
{
  return S3Endpoint::is_url_valid(url);
}

namespace detail {

bool is_aws_s3_http_url(std::string const& url) noexcept
{
  try {
    auto const parsed = parse_url(url);
    if (parsed.scheme != "http" && parsed.scheme != "https") { return false; }
    std::string host = parsed.host;
    for (auto& c : host) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    std::string_view const suffix = ".amazonaws.com";
    if (host.size() <= suffix.size() ||
        host.compare(host.size() - suffix.size(), suffix.size(), suffix) != 0) {
      return false;
    }
    // What precedes ".amazonaws.com": "s3", "s3.<region>" or "s3-<region>" (path style:
    // /<bucket>/<key>), or "<bucket>." and one of those (virtual-host style: /<key>).
    std::string_view const service{host.data(), host.size() - suffix.size()};
    auto const is_s3_service = [](std::string_view name) {
      if (name == "s3") { return true; }
      if (name.size() < 4 || name.substr(0, 2) != "s3" || (name[2] != '.' && name[2] != '-')) {
        return false;
      }
      return name.find('.', 3) == std::string_view::npos;  // one region label
    };
    std::string_view const path = parsed.path;
    if (is_s3_service(service)) {  // path style
      auto const slash = path.find('/', 1);
      return path.size() > 1 && slash != std::string_view::npos && slash > 1 &&
             slash + 1 < path.size();
    }
    auto const dot = service.find(".s3");
    return dot != std::string_view::npos && dot > 0 && is_s3_service(service.substr(dot + 1)) &&
           path.size() > 1;
  } catch (...) {
    return false;
  }
}

}  // namespace detail

}  // namespace kvikio
