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
 */

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

/// @brief Percent-encodes everything but unreserved characters (and '/' if `keep_slash`).
std::string percent_encode(std::string_view text, bool keep_slash = true);

/// @brief The URL as text.
std::string build_url(Url const& url);

}  // namespace kvikio::detail
