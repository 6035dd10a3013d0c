/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file shim/libcurl.hpp
 * @brief libcurl easy handles for remote endpoints: kvikio::LibCurl, kvikio::CurlHandle, and
 * the `create_curl_handle()` macro.
 */

#include <sstream>
#include <string>

#include <kvikio/detail/curl.hpp>
#include <kvikio/error.hpp>

/// @brief A pooled easy handle that knows where it was created (`auto curl =
/// create_curl_handle();`).
#define create_curl_handle() \
  kvikio::CurlHandle(        \
    kvikio::LibCurl::instance().get_handle(), std::string{__FILE__}, std::to_string(__LINE__))
