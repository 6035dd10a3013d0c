/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/url.hpp
 * @brief URL parsing, percent-encoding and building: one component, for every endpoint.
 *
 * The parser is strict and assumes the text may be hostile: it accepts
 * `scheme://host[:port][/path][?query]` with an ASCII host and a decimal port in 1..65535.
 * UrlParser, UrlBuilder and UrlEncoder (over libcurl's URL API) are here too.
 */

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <curl/curl.h>

namespace kvikio::detail {

struct Url {
  std::string scheme;  ///< lower case, e.g. "http"
  std::string host;
  std::optional<std::uint16_t> port;
  std::string path;   ///< starts with '/', or empty
  std::string query;  ///< without the '?', or empty
};

/// @throws std::invalid_argument naming the URL and what is wrong with it.
Url parse_url(std::string_view url);

/// @brief Whether parse_url() accepts `url`. Never throws.
bool is_valid_url(std::string_view url) noexcept;

/// @brief Whether `url` begins with `scheme` and "://", the scheme in any case (RFC 3986: "S3://"
/// is "s3://"); `scheme` in lower case.
bool has_scheme(std::string_view url, std::string_view scheme) noexcept;

/**
 * @brief `url` as an error message or log line may show it: the query and fragment (presigned
 * signatures, tokens) replaced by "?<hidden>", the user information ("user:password@") by
 * "<hidden>@". Every message that names a URL names it so.
 */
std::string url_for_message(std::string_view url);

/// @brief Percent-encodes everything but unreserved characters (and '/' if `keep_slash`).
std::string percent_encode(std::string_view text, bool keep_slash = true);

/// @brief The URL as text.
std::string build_url(Url const& url);

/// @brief A libcurl URL handle (`CURLU`), freed on destruction (move-only).
class CurlUrlHandle {
 public:
  /// @throws std::runtime_error if libcurl cannot allocate one.
  CurlUrlHandle();
  ~CurlUrlHandle() noexcept;
  CurlUrlHandle(CurlUrlHandle const&)            = delete;
  CurlUrlHandle& operator=(CurlUrlHandle const&) = delete;
  /// @brief Takes `other`'s handle.
  CurlUrlHandle(CurlUrlHandle&& other) noexcept;
  /// @brief Frees this handle and takes `other`'s.
  CurlUrlHandle& operator=(CurlUrlHandle&& other) noexcept;
  /// @brief The handle.
  [[nodiscard]] CURLU* get() const;

 private:
  CURLU* handle_{nullptr};
};

/// @brief URL parsing with libcurl's URL API.
class UrlParser {
 public:
  /// @brief The parts of a URL; a part the URL lacks is std::nullopt.
  struct UrlComponents {
    std::optional<std::string> scheme;    ///< e.g. "https"
    std::optional<std::string> host;      ///< e.g. "example.com"
    std::optional<std::string> port;      ///< e.g. "8080"
    std::optional<std::string> path;      ///< e.g. "/a/b" ("/" if the URL has none)
    std::optional<std::string> query;     ///< without the '?'
    std::optional<std::string> fragment;  ///< without the '#'
  };

  /**
   * @brief Splits `url` into its parts.
   * @param url the URL.
   * @param bitmask_url_flags `CURLU_*` flags for parsing.
   * @param bitmask_component_flags `CURLU_*` flags for reading each part.
   * @throws std::runtime_error naming the URL and libcurl's reason if it does not parse.
   */
  static UrlComponents parse(std::string const& url,
                             std::optional<unsigned int> bitmask_url_flags       = std::nullopt,
                             std::optional<unsigned int> bitmask_component_flags = std::nullopt);

  /**
   * @brief One part of a parsed URL.
   * @param handle the parsed URL.
   * @param part which part.
   * @param bitmask_component_flags `CURLU_*` flags for reading it.
   * @param allowed_err_code an error that means "the URL has no such part" (std::nullopt back).
   * @throws std::runtime_error for any other error.
   */
  static std::optional<std::string> extract_component(
    CurlUrlHandle const& handle,
    CURLUPart part,
    std::optional<unsigned int> bitmask_component_flags = std::nullopt,
    std::optional<CURLUcode> allowed_err_code           = std::nullopt);

  /**
   * @brief One part of `url`.
   * @param url the URL.
   * @param part which part.
   * @param bitmask_url_flags `CURLU_*` flags for parsing.
   * @param bitmask_component_flags `CURLU_*` flags for reading it.
   * @param allowed_err_code an error that means "the URL has no such part" (std::nullopt back).
   * @throws std::runtime_error if the URL does not parse, or for another error.
   */
  static std::optional<std::string> extract_component(
    std::string const& url,
    CURLUPart part,
    std::optional<unsigned int> bitmask_url_flags       = std::nullopt,
    std::optional<unsigned int> bitmask_component_flags = std::nullopt,
    std::optional<CURLUcode> allowed_err_code           = std::nullopt);
};

/// @brief Builds or edits a URL part by part with libcurl's URL API (setters chain).
class UrlBuilder {
 public:
  /// @brief An empty URL.
  explicit UrlBuilder();
  /**
   * @brief Starts from `url`.
   * @throws std::runtime_error if it does not parse.
   */
  explicit UrlBuilder(std::string const& url,
                      std::optional<unsigned int> bitmask_url_flags = std::nullopt);
  /**
   * @brief Starts from the parts of `components` that are set.
   * @throws std::runtime_error if a part is invalid.
   */
  explicit UrlBuilder(UrlParser::UrlComponents const& components,
                      std::optional<unsigned int> bitmask_url_flags = std::nullopt);

  /// @brief Sets the scheme (std::nullopt removes it). @throws std::runtime_error
  UrlBuilder& set_scheme(std::optional<std::string> const& scheme);
  /// @brief Sets the host (std::nullopt removes it). @throws std::runtime_error
  UrlBuilder& set_host(std::optional<std::string> const& host);
  /// @brief Sets the port (std::nullopt removes it). @throws std::runtime_error
  UrlBuilder& set_port(std::optional<std::string> const& port);
  /// @brief Sets the path (std::nullopt removes it). @throws std::runtime_error
  UrlBuilder& set_path(std::optional<std::string> const& path);
  /// @brief Sets the query (std::nullopt removes it). @throws std::runtime_error
  UrlBuilder& set_query(std::optional<std::string> const& query);
  /// @brief Sets the fragment (std::nullopt removes it). @throws std::runtime_error
  UrlBuilder& set_fragment(std::optional<std::string> const& fragment);

  /**
   * @brief The URL as text.
   * @param bitmask_component_flags `CURLU_*` flags for writing it.
   * @throws std::runtime_error if the URL is incomplete (no scheme or host).
   */
  [[nodiscard]] std::string build(
    std::optional<unsigned int> bitmask_component_flags = std::nullopt) const;

  /**
   * @brief Joins the parts as written, without libcurl's checks:
   * `scheme://host[:port][path][?query][#fragment]`.
   */
  static std::string build_manually(UrlParser::UrlComponents const& components);

 private:
  UrlBuilder& set_component(CURLUPart part,
                            char const* value,
                            std::optional<unsigned int> flags = std::nullopt);
  CurlUrlHandle handle_;
};

/// @brief Percent-encoding of URL paths.
class UrlEncoder {
 public:
  /// @brief Characters AWS S3 requires encoded in object keys.
  static constexpr char aws_special_chars[] = {
    '!',    '*',    '\'',   '(',    ')',    '&',    '$',    '@',    '=',    ';',    ':',    '+',
    ' ',    ',',    '?',    '\x00', '\x01', '\x02', '\x03', '\x04', '\x05', '\x06', '\x07', '\x08',
    '\x09', '\x0A', '\x0B', '\x0C', '\x0D', '\x0E', '\x0F', '\x10', '\x11', '\x12', '\x13', '\x14',
    '\x15', '\x16', '\x17', '\x18', '\x19', '\x1A', '\x1B', '\x1C', '\x1D', '\x1E', '\x1F', '\x7F'};

  /**
   * @brief `path` with each byte of `chars_to_encode` replaced by `%XX` (upper-case hex); other
   * bytes (UTF-8 included) pass through unchanged. A byte of `chars_to_encode` beyond ASCII
   * (0x80-0xFF) is dropped, not encoded.
   */
  static std::string encode_path(std::string_view path,
                                 std::string_view chars_to_encode = std::string_view{
                                   aws_special_chars, sizeof(aws_special_chars)});
};

}  // namespace kvikio::detail
