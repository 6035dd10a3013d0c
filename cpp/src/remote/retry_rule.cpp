/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/statistics/counters.hpp>

#include "remote/retry_rule.hpp"

#include "remote/message_redaction.hpp"

namespace kvikio::detail {

std::chrono::milliseconds retry_backoff(std::size_t attempt) noexcept
{
  constexpr std::chrono::milliseconds first{500};
  constexpr std::chrono::milliseconds most{4000};
  std::size_t const doublings = std::min<std::size_t>(attempt == 0 ? 0 : attempt - 1, 3);
  return std::min(most, first * (1 << doublings));
}

RetryRule::RetryRule(std::string what)
  : max_attempts_{defaults::http_max_attempts()},
    retry_statuses_{defaults::http_status_codes()},
    what_{std::move(what)}
{
}

bool RetryRule::retryable(CURLcode code, long status) const
{
  return code == CURLE_OPERATION_TIMEDOUT ||
         std::find(retry_statuses_.begin(), retry_statuses_.end(), status) != retry_statuses_.end();
}

bool RetryRule::retry_after_releasing_descriptors(CurlHandle const& curl, CURLcode code)
{
  if (released_descriptors_ || curl.descriptor_shortage(code) == 0) { return false; }
  released_descriptors_ = true;
  return LibCurl::instance().release_idle_handles() > 0;
}

std::chrono::milliseconds RetryRule::next_attempt(CURLcode code, long status)
{
  bool const timeout = code == CURLE_OPERATION_TIMEDOUT;
  // Fixed words, so that logs and scripts that look for them keep working.
  std::string const reason =
    timeout ? "Operation timed out." : "Got HTTP code " + std::to_string(status) + ".";
  if (attempt_ >= max_attempts_) {
    throw std::runtime_error("KvikIO: HTTP request reached maximum number of attempts (" +
                             std::to_string(max_attempts_) + "). Reason: " + reason + " [" + what_ +
                             "]");
  }
  auto const delay = retry_backoff(attempt_);
  count_http_retry(delay);
  Logger::instance().notice(LogLevel::warn,
                            "KvikIO: " + (timeout ? std::string{"Timeout error."} : reason) +
                              " Retrying after " + std::to_string(delay.count()) + "ms (attempt " +
                              std::to_string(attempt_) + " of " + std::to_string(max_attempts_) +
                              ").",
                            what_);
  ++attempt_;
  return delay;
}

std::runtime_error http_status_error(long status, std::string const& what, std::string const& body)
{
  return std::runtime_error(
    "curl_easy_perform() error (The requested URL returned error: " + std::to_string(status) +
    ") [KvikIO: " + what + ": HTTP " + std::to_string(status) +
    (body.empty() ? "" : ": " + error_body_for_message(body)) + "]");
}

CURLcode perform_retrying(CurlHandle& curl,
                          std::string what,
                          std::function<void()> const& before_attempt)
{
  RetryRule rule{std::move(what)};
  while (true) {
    if (before_attempt) { before_attempt(); }
    CURLcode const code = curl.try_perform();
    count_http_connection_of(curl.get());
    if (rule.retry_after_releasing_descriptors(curl, code)) { continue; }
    if (!rule.retryable(code, curl.status())) { return code; }
    std::this_thread::sleep_for(rule.next_attempt(code, curl.status()));
  }
}

}  // namespace kvikio::detail
