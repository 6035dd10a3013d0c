/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/detail/curl.hpp>

namespace kvikio::detail {

/**
 * @brief The wait before attempt `attempt + 1` after attempt `attempt` failed: 500 ms, doubling,
 * at most 4 s.
 */
[[nodiscard]] std::chrono::milliseconds retry_backoff(std::size_t attempt) noexcept;

/**
 * @brief The retry rule of every HTTP request the library makes, the ranged reads of both
 * transports and the size request of an open alike: an attempt that ends in a status of
 * `KVIKIO_HTTP_STATUS_CODES` or in a timeout is tried again after retry_backoff(), up to
 * `KVIKIO_HTTP_MAX_ATTEMPTS` attempts in all.
 *
 * Each retry is announced in fixed words: on stdout (programs and tests read it there), or,
 * with `KVIKIO_LOG_FILE` set, as a warn line of the log naming the request; `KVIKIO_LOG_LEVEL`
 * `error` or `off` silences it.
 */
class RetryRule {
 public:
  /// @brief Reads the settings now (a request keeps the ones it started with); `what` names the
  /// request in messages.
  explicit RetryRule(std::string what);

  /// @brief Whether the attempt that ended with `code` and HTTP `status` is one to try again.
  [[nodiscard]] bool retryable(CURLcode code, long status) const;

  /**
   * @brief After a retryable attempt: announces the retry and returns the delay before the
   * next attempt.
   * @throws std::runtime_error "KvikIO: HTTP request reached maximum number of attempts (N).
   * Reason: ..." (fixed words, then the request) when that was the last attempt.
   */
  std::chrono::milliseconds next_attempt(CURLcode code, long status);

  /**
   * @brief Whether the attempt that ended with `code` on `curl` failed for want of a descriptor
   * (no socket: EMFILE, ENFILE) and is to be tried again at once, as it is the first such
   * failure of the request and idle connections were closed to make room
   * (LibCurl::release_idle_handles()). Counts no attempt.
   */
  [[nodiscard]] bool retry_after_releasing_descriptors(CurlHandle const& curl, CURLcode code);

  /// @brief The attempt now running or about to run, from 1.
  [[nodiscard]] std::size_t attempt() const noexcept { return attempt_; }

  /// @brief The request, as messages name it.
  [[nodiscard]] std::string const& what() const noexcept { return what_; }

 private:
  std::size_t attempt_{1};
  bool released_descriptors_{false};
  std::size_t max_attempts_;
  std::vector<int> retry_statuses_;
  std::string what_;
};

/**
 * @brief The error of a request answered with a final `status` that is not a success: fixed
 * words (libcurl's text for a failed status), then `what` (the request), the status and the start
 * of the answer's `body` if any.
 */
[[nodiscard]] std::runtime_error http_status_error(long status,
                                                   std::string const& what,
                                                   std::string const& body = {});

/**
 * @brief Runs `curl` (set up by the caller) until an attempt is not one to retry, sleeping the
 * backoff between attempts; `before_attempt` runs before every attempt (to empty what the last
 * one collected). For requests without a destination of their own, such as an open's size
 * request.
 * @return libcurl's result of the last attempt, which the caller judges (with curl.status()).
 * @throws std::runtime_error when the attempts are spent (RetryRule::next_attempt).
 */
CURLcode perform_retrying(CurlHandle& curl,
                          std::string what,
                          std::function<void()> const& before_attempt = {});

}  // namespace kvikio::detail
