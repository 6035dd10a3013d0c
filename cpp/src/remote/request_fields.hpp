/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Every caller's string that becomes part of an HTTP request passes here first: one rule per
 * field, so that no bucket, key, credential or user name can turn into another request (a header
 * line of its own, a path that names another object, a query of its own). docs/design.md,
 * "Trust boundaries", lists the rules.
 */
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <kvikio/detail/curl.hpp>

namespace kvikio::detail {

/// @brief A caller's string that cannot become part of a request: refused, never worked around
/// (RemoteHandle::open's AUTO does not fall back to unsigned S3 for a malformed credential).
class UnsafeRequestField : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/**
 * @brief Refuses a value bound for a request header (a credential, a token) that holds a CR, LF
 * or NUL: such a byte would end the header line and start a header, or a request, of its own.
 * @throws UnsafeRequestField naming `field` and the offending byte's position, never the value
 * (it may be a secret).
 */
void check_header_value(std::string_view field, std::string_view value);

/**
 * @brief An S3 bucket name as a path segment or host label: letters, digits, '.', '-' and '_'
 * (uppercase and '_' for buckets named before S3's current rules), 1 to 63 of them, beginning
 * and ending with a letter or digit, without "..". Anything else ('/', '?', '#', '%', dot
 * segments) would name another bucket or resource.
 * @throws std::invalid_argument naming the bucket and the rule.
 */
[[nodiscard]] std::string const& checked_s3_bucket(std::string const& bucket);

/**
 * @brief An S3 object key as a URL path: every segment percent-encoded, '/' kept, and dot
 * segments kept as written ("a/../b" is a key of its own; set_request_url() stops libcurl from
 * resolving it).
 * @throws std::invalid_argument for an empty key or one holding CR, LF or NUL.
 */
[[nodiscard]] std::string s3_key_path(std::string_view key);

/**
 * @brief The WebHDFS URL of `path` on the name node `host`:`port`: the host a name or address
 * (no '/', '?', '#', '@' or ':' but inside "[...]"), the port 1 to 65535 in decimal digits, the
 * path percent-encoded segment by segment.
 * @throws std::invalid_argument naming what is wrong.
 */
[[nodiscard]] std::string webhdfs_url(std::string const& host,
                                      std::string const& port,
                                      std::string const& path);

/**
 * @brief Points `curl` at `url`, sent exactly as written: libcurl's removal of dot segments is
 * off, so a path names what its caller asked for.
 */
void set_request_url(CurlHandle& curl, std::string const& url);

/**
 * @brief The decoded value of the parameter `name` of a URL query ("a=1&user.name=al%40ice":
 * "al@ice" for "user.name"); std::nullopt if the query has none. The name is matched whole.
 * @throws std::invalid_argument for a value with a malformed percent-escape or one that decodes
 * to a CR, LF or NUL.
 */
[[nodiscard]] std::optional<std::string> query_parameter(std::string_view query,
                                                         std::string_view name);

}  // namespace kvikio::detail
