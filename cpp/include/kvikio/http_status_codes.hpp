/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file http_status_codes.hpp
 * @brief Parsing the HTTP status codes that remote reads retry (`KVIKIO_HTTP_STATUS_CODES`):
 * `kvikio::detail::parse_http_status_codes(name, "429,500,503")`.
 */

#include <kvikio/detail/env.hpp>
