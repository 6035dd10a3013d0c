/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/curl.hpp
 * @brief libcurl easy handles: the process-wide pool (`kvikio::LibCurl`) and a handle borrowed
 * from it (`kvikio::CurlHandle`).
 */

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <curl/curl.h>

namespace kvikio {

/**
 * @brief The process-wide pool of libcurl easy handles.
 *
 * A handle keeps its connections while pooled, so reusing it avoids a TCP (and TLS) handshake per
 * request. Creating the pool calls `curl_global_init`. The pool lives until the process exits.
 */
class LibCurl {
 public:
  /// @brief An easy handle that `curl_easy_cleanup` frees unless it is retained in the pool.
  using UniqueHandlePtr = std::unique_ptr<CURL, std::function<decltype(curl_easy_cleanup)>>;

  /// @throws std::runtime_error if `curl_global_init` fails (on first use).
  static LibCurl& instance();

  /// @brief A pooled handle, or an empty pointer if none is free.
  UniqueHandlePtr get_free_handle();

  /**
   * @brief A pooled handle, or a new one if none is free.
   * @throws std::runtime_error if `curl_easy_init` fails.
   */
  UniqueHandlePtr get_handle();

  /// @brief Resets `handle`'s options to their defaults and keeps it (and its connections).
  void retain_handle(UniqueHandlePtr handle);

  /**
   * @brief Frees the handles kept for reuse, closing their idle connections (a descriptor
   * each), and returns how many there were. Handles in use are not touched. A request that
   * cannot open a socket for want of descriptors (EMFILE, ENFILE) calls this and tries again.
   */
  std::size_t release_idle_handles();

  LibCurl(LibCurl const&)            = delete;
  LibCurl& operator=(LibCurl const&) = delete;

 private:
  LibCurl();
  ~LibCurl() noexcept = default;
  // pthread_atfork's handlers, registered when the library loads.
  static int const fork_handlers_registered;
  std::mutex mutex_;
  std::vector<UniqueHandlePtr> free_;
};

/**
 * @brief An easy handle borrowed from `LibCurl`, set up for KvikIO (error buffer, no signals,
 * redirects followed, `KVIKIO_HTTP_TIMEOUT`, CA bundle from the environment) and returned to the
 * pool when destroyed. Every setopt(), getinfo() and perform() is checked.
 */
class CurlHandle {
 public:
  /// @brief Borrows a handle from `LibCurl::instance()`.
  CurlHandle();
  /**
   * @brief Takes `handle` (the constructor `create_curl_handle()` calls).
   *
   * @param handle An easy handle, usually `LibCurl::instance().get_handle()`.
   * @param source_file, source_line Where it was created, named in perform()'s errors.
   */
  CurlHandle(LibCurl::UniqueHandlePtr handle, std::string source_file, std::string source_line);
  ~CurlHandle() noexcept;
  CurlHandle(CurlHandle const&)            = delete;
  CurlHandle& operator=(CurlHandle const&) = delete;
  CurlHandle(CurlHandle&&)                 = delete;
  CurlHandle& operator=(CurlHandle&&)      = delete;

  /// @throws std::runtime_error "curl_easy_setopt() error (...)" naming the option.
  template <typename T>
  void setopt(CURLoption option, T value)
  {
    check_setopt(curl_easy_setopt(handle_.get(), option, value), option);
  }

  /// @brief Adds a request header ("Name: value"), kept alive until the handle is returned.
  void append_header(std::string const& header);

  /**
   * @brief Runs the transfer, retrying a transient failure (a timeout, or an HTTP status of
   * `defaults::http_status_codes()`) with backoff, up to `defaults::http_max_attempts()`.
   * @throws std::runtime_error "curl_easy_perform() error (...)" with libcurl's message, for a
   * failure not retried or once the attempts are spent.
   */
  void perform();
  /**
   * @brief perform(), running `on_retry` before each retried attempt (to undo what the failed
   * attempt left, such as bytes it wrote).
   */
  void perform(std::function<void()> const& on_retry);
  /// @brief Runs the transfer; returns libcurl's result (the message is in error_message()).
  CURLcode try_perform() noexcept;
  /// @brief The HTTP status of the last transfer (0 if none).
  [[nodiscard]] long status() const noexcept;
  /// @brief libcurl's text for `code` and its error buffer; a connect that failed for want of
  /// a descriptor says so, with the process's limit.
  [[nodiscard]] std::string error_message(CURLcode code) const;
  /// @brief The message libcurl recorded for the last failed transfer ("" if none).
  [[nodiscard]] std::string error_message() const;
  /// @brief Forgets the recorded message.
  void clear_error_message() noexcept;
  /// @brief EMFILE or ENFILE if the transfer ended with `code` for want of a descriptor (a
  /// failed connect while this process can open none), else 0. libcurl does not always keep
  /// the errno of the socket() that failed, so the process's descriptors are probed.
  [[nodiscard]] int descriptor_shortage(CURLcode code) const noexcept;
  [[nodiscard]] CURL* get() const noexcept { return handle_.get(); }
  /// @brief The libcurl easy handle (the same as get()).
  [[nodiscard]] CURL* handle() noexcept { return handle_.get(); }

  /**
   * @brief `curl_easy_getinfo(info, output)`.
   * @throws std::runtime_error "curl_easy_getinfo() error (...)" if libcurl fails it.
   */
  template <typename T>
  void getinfo(CURLINFO info, T* output)
  {
    check_getinfo(curl_easy_getinfo(handle_.get(), info, output));
  }

 private:
  void check_setopt(CURLcode code, CURLoption option) const;
  static void check_getinfo(CURLcode code);
  LibCurl::UniqueHandlePtr handle_;
  std::string source_;  // "file:line" of its creation, or empty
  curl_slist* headers_{nullptr};
  char error_[CURL_ERROR_SIZE]{};
};

}  // namespace kvikio
