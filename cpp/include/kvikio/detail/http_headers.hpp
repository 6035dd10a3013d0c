/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Reading the HTTP response headers the remote transports need (Content-Range), one line at a
 * time as libcurl's header callback hands them over. In detail/ for the fuzz target.
 */
#pragma once

#include <cstddef>
#include <optional>
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
 * @brief The complete length of an object from a Content-Range value ("bytes 0-0/1234": 1234).
 * @throws std::runtime_error naming the value where it ends in no length (an unknown length, a
 * missing slash, a number too large).
 */
[[nodiscard]] std::size_t content_range_length(std::string_view value);

}  // namespace kvikio::detail
