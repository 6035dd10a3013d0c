/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/url.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace kvikio::detail {
namespace {

// The fixed wording callers match on (with libcurl's reason), then what failed.
[[noreturn]] void fail(std::string const& what, CURLUcode code)
{
  char const* reason = curl_url_strerror(code);
  throw std::runtime_error(std::string{"KvikIO detects an URL error: "} +
                           (reason != nullptr ? reason : "(no message)") + " [KvikIO: " + what +
                           "]");
}

}  // namespace

CurlUrlHandle::CurlUrlHandle() : handle_{curl_url()}
{
  if (handle_ == nullptr) { throw std::runtime_error("KvikIO: curl_url() could not allocate"); }
}

CurlUrlHandle::~CurlUrlHandle() noexcept { curl_url_cleanup(handle_); }

CurlUrlHandle::CurlUrlHandle(CurlUrlHandle&& other) noexcept
  : handle_{std::exchange(other.handle_, nullptr)}
{
}

CurlUrlHandle& CurlUrlHandle::operator=(CurlUrlHandle&& other) noexcept
{
  if (this != &other) {
    curl_url_cleanup(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

CURLU* CurlUrlHandle::get() const { return handle_; }

UrlParser::UrlComponents UrlParser::parse(std::string const& url,
                                          std::optional<unsigned int> bitmask_url_flags,
                                          std::optional<unsigned int> bitmask_component_flags)
{
  CurlUrlHandle handle;
  if (auto code =
        curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), bitmask_url_flags.value_or(0));
      code != CURLUE_OK) {
    fail("cannot parse URL \"" + url_for_message(url) + "\"", code);
  }
  auto part = [&](CURLUPart which, CURLUcode missing) {
    return extract_component(handle, which, bitmask_component_flags, missing);
  };
  UrlComponents c;
  c.scheme   = part(CURLUPART_SCHEME, CURLUE_NO_SCHEME);
  c.host     = part(CURLUPART_HOST, CURLUE_NO_HOST);
  c.port     = part(CURLUPART_PORT, CURLUE_NO_PORT);
  c.path     = part(CURLUPART_PATH, CURLUE_OK);
  c.query    = part(CURLUPART_QUERY, CURLUE_NO_QUERY);
  c.fragment = part(CURLUPART_FRAGMENT, CURLUE_NO_FRAGMENT);
  return c;
}

std::optional<std::string> UrlParser::extract_component(
  CurlUrlHandle const& handle,
  CURLUPart part,
  std::optional<unsigned int> bitmask_component_flags,
  std::optional<CURLUcode> allowed_err_code)
{
  char* value     = nullptr;
  auto const code = curl_url_get(handle.get(), part, &value, bitmask_component_flags.value_or(0));
  if (code == CURLUE_OK && value != nullptr) {
    std::string result{value};
    curl_free(value);
    return result;
  }
  if (allowed_err_code && code == *allowed_err_code) { return std::nullopt; }
  fail("cannot read URL part " + std::to_string(static_cast<int>(part)), code);
}

std::optional<std::string> UrlParser::extract_component(
  std::string const& url,
  CURLUPart part,
  std::optional<unsigned int> bitmask_url_flags,
  std::optional<unsigned int> bitmask_component_flags,
  std::optional<CURLUcode> allowed_err_code)
{
  CurlUrlHandle handle;
  if (auto code =
        curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), bitmask_url_flags.value_or(0));
      code != CURLUE_OK) {
    fail("cannot parse URL \"" + url_for_message(url) + "\"", code);
  }
  return extract_component(handle, part, bitmask_component_flags, allowed_err_code);
}

UrlBuilder::UrlBuilder() = default;

UrlBuilder::UrlBuilder(std::string const& url, std::optional<unsigned int> bitmask_url_flags)
{
  if (auto code =
        curl_url_set(handle_.get(), CURLUPART_URL, url.c_str(), bitmask_url_flags.value_or(0));
      code != CURLUE_OK) {
    fail("cannot parse URL \"" + url_for_message(url) + "\"", code);
  }
}

UrlBuilder::UrlBuilder(UrlParser::UrlComponents const& components,
                       std::optional<unsigned int> bitmask_url_flags)
{
  auto set = [&](CURLUPart part, std::optional<std::string> const& value) {
    if (value) { set_component(part, value->c_str(), bitmask_url_flags); }
  };
  set(CURLUPART_SCHEME, components.scheme);
  set(CURLUPART_HOST, components.host);
  set(CURLUPART_PORT, components.port);
  set(CURLUPART_PATH, components.path);
  set(CURLUPART_QUERY, components.query);
  set(CURLUPART_FRAGMENT, components.fragment);
}

UrlBuilder& UrlBuilder::set_component(CURLUPart part,
                                      char const* value,
                                      std::optional<unsigned int> flags)
{
  if (auto code = curl_url_set(handle_.get(), part, value, flags.value_or(0)); code != CURLUE_OK) {
    fail("cannot set URL part " + std::to_string(static_cast<int>(part)) + " to \"" +
           (value != nullptr ? value : "(none)") + "\"",
         code);
  }
  return *this;
}

// A null value removes the part (libcurl's convention).
UrlBuilder& UrlBuilder::set_scheme(std::optional<std::string> const& scheme)
{
  return set_component(CURLUPART_SCHEME, scheme ? scheme->c_str() : nullptr);
}
UrlBuilder& UrlBuilder::set_host(std::optional<std::string> const& host)
{
  return set_component(CURLUPART_HOST, host ? host->c_str() : nullptr);
}
UrlBuilder& UrlBuilder::set_port(std::optional<std::string> const& port)
{
  return set_component(CURLUPART_PORT, port ? port->c_str() : nullptr);
}
UrlBuilder& UrlBuilder::set_path(std::optional<std::string> const& path)
{
  return set_component(CURLUPART_PATH, path ? path->c_str() : nullptr);
}
UrlBuilder& UrlBuilder::set_query(std::optional<std::string> const& query)
{
  return set_component(CURLUPART_QUERY, query ? query->c_str() : nullptr);
}
UrlBuilder& UrlBuilder::set_fragment(std::optional<std::string> const& fragment)
{
  return set_component(CURLUPART_FRAGMENT, fragment ? fragment->c_str() : nullptr);
}

std::string UrlBuilder::build(std::optional<unsigned int> bitmask_component_flags) const
{
  return UrlParser::extract_component(handle_, CURLUPART_URL, bitmask_component_flags).value();
}

std::string UrlBuilder::build_manually(UrlParser::UrlComponents const& components)
{
  std::string url = components.scheme.value_or("") + "://" + components.host.value_or("");
  if (components.port) { url += ":" + *components.port; }
  url += components.path.value_or("");
  if (components.query) { url += "?" + *components.query; }
  if (components.fragment) { url += "#" + *components.fragment; }
  return url;
}

std::string UrlEncoder::encode_path(std::string_view path, std::string_view chars_to_encode)
{
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    auto const byte = static_cast<unsigned char>(c);
    // Bytes not in the set pass through, UTF-8 included. A byte of the set beyond ASCII is
    // dropped, not encoded: the encoding table covers ASCII only, and callers' tests hold that
    // (the default set, AWS's, is all ASCII).
    if (chars_to_encode.find(c) != std::string_view::npos) {
      if (byte > 0x7F) { continue; }
      out += '%';
      out += hex[byte >> 4];
      out += hex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace kvikio::detail
