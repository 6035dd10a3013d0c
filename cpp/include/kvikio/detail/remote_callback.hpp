/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/remote_callback.hpp
 * @brief A libcurl write callback that collects a response as text (tests use it).
 */

#include <cstddef>

namespace kvikio::detail {

/**
 * @brief A `CURLOPT_WRITEFUNCTION` that appends what arrives to the `std::string` given as
 * `CURLOPT_WRITEDATA` (`userdata`).
 * @return The bytes taken (`size * num_bytes`), or 0, which makes libcurl fail the transfer, if
 * the string cannot grow.
 */
std::size_t callback_get_string_response(char* data,
                                         std::size_t size,
                                         std::size_t num_bytes,
                                         void* userdata) noexcept;

}  // namespace kvikio::detail
