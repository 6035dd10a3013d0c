/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Reading the HTTP response headers the remote transports need (Content-Range, ETag), one line
 * at a time as libcurl's header callback hands them over, or from libcurl once they arrived.
 * In detail/ for the fuzz target.
 */
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kvikio::detail {

/**
 * @brief The value of one header line ("Name: value\r\n") if its name is `name` (given in lower
 * case, without the colon; the line's is compared case-insensitively), without the whitespace
 * around it; std::nullopt for another header.
 */
[[nodiscard]] std::optional<std::string_view> header_value(std::string_view line,
                                                           std::string_view name) noexcept;

/**
 * @brief A length, offset or size a server sent: plain decimal digits only (not "1e3", "0x10",
 * "12abc", "+5", "-1" or ""), within std::size_t. Every number read from a server goes through
 * here. std::nullopt for anything else.
 */
[[nodiscard]] std::optional<std::size_t> decimal_length(std::string_view text) noexcept;

/**
 * @brief The complete length of an object from a Content-Range value ("bytes 0-0/1234": 1234).
 * @throws std::runtime_error naming the value where it ends in no length (an unknown length, a
 * missing slash, a number too large).
 */
[[nodiscard]] std::size_t content_range_length(std::string_view value);

/**
 * @brief The ETag of the latest response `curl_easy_handle` received (a redirect's target's, not
 * the redirect's), "" if it sent none. Usable from the first body byte on. Never throws: "" when
 * the tag cannot be read (out of memory).
 */
[[nodiscard]] std::string response_entity_tag(void* curl_easy_handle) noexcept;

/**
 * @brief Whether two ETag values name the same version of an object: equal once a weak
 * validator's "W/" is set aside (RFC 9110's weak comparison: a server may weaken a tag, for
 * instance when it compresses, without the object changing).
 */
[[nodiscard]] bool same_entity_tag(std::string_view a, std::string_view b) noexcept;

}  // namespace kvikio::detail
