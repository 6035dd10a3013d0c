/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/curl.hpp
 * @brief A libcurl easy handle borrowed from a process-wide pool.
 */

#include <string>

#include <curl/curl.h>

namespace kvikio {

/**
 * @brief An easy handle, reset to defaults, returned to the pool when destroyed.
 * Every setopt() and perform() is checked; errors name the option or the URL.
 */
class CurlHandle {
 public:
  CurlHandle();
  ~CurlHandle() noexcept;
  CurlHandle(CurlHandle const&)            = delete;
  CurlHandle& operator=(CurlHandle const&) = delete;

  /// @throws std::runtime_error naming the option if libcurl refuses it.
  template <typename T>
  void setopt(CURLoption option, T value)
  {
    check_setopt(curl_easy_setopt(handle_, option, value), option);
  }

  /// @brief Adds a request header ("Name: value"), kept alive until the handle is returned.
  void append_header(std::string const& header);

  /// @brief Runs the transfer; returns libcurl's result (the message is in error_message()).
  CURLcode perform() noexcept;
  /// @brief The HTTP status of the last transfer (0 if none).
  [[nodiscard]] long status() const noexcept;
  [[nodiscard]] std::string error_message(CURLcode code) const;
  [[nodiscard]] CURL* get() const noexcept { return handle_; }
  /// @brief The libcurl easy handle, by upstream's name.
  [[nodiscard]] CURL* handle() noexcept { return handle_; }

  /**
   * @brief `curl_easy_getinfo(info, output)`.
   * @throws std::runtime_error "curl_easy_getinfo() error (...)" if libcurl fails it.
   */
  template <typename T>
  void getinfo(CURLINFO info, T* output)
  {
    check_getinfo(curl_easy_getinfo(handle_, info, output));
  }

 private:
  void check_setopt(CURLcode code, CURLoption option) const;
  static void check_getinfo(CURLcode code);
  CURL* handle_;
  curl_slist* headers_{nullptr};
  char error_[CURL_ERROR_SIZE]{};
};

}  // namespace kvikio
