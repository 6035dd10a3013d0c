/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file shim/libcurl.hpp
 * @brief libcurl easy handles for remote endpoints: kvikio::CurlHandle, and upstream's
 * `create_curl_handle()`.
 */

#include <kvikio/detail/curl.hpp>

/// @brief A pooled easy handle (`auto curl = create_curl_handle();`), as upstream spells it.
#define create_curl_handle() kvikio::CurlHandle()
