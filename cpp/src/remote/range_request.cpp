/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <algorithm>
#include <stdexcept>
#include <string>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>

#include "range_request.hpp"

namespace kvikio::detail {
namespace {

// libcurl's receive buffer for ranged GETs (CURLOPT_BUFFERSIZE), per transfer.
constexpr long receive_buffer_size = 1L << 20;

// How long an attempt of a closing handle's read may receive nothing before it is cut.
constexpr std::chrono::seconds stall_after_close{1};

}  // namespace

std::chrono::milliseconds retry_backoff(std::size_t attempt) noexcept
{
  constexpr std::chrono::milliseconds first{500};
  constexpr std::chrono::milliseconds most{4000};
  std::size_t const doublings = std::min<std::size_t>(attempt == 0 ? 0 : attempt - 1, 3);
  return std::min(most, first * (1 << doublings));
}

RangeRequest::RangeRequest(RemoteEndpoint& endpoint,
                           RemoteSink& sink,
                           std::size_t file_offset,
                           std::size_t size,
                           InFlight const* owner)
  : endpoint_{endpoint},
    sink_{sink},
    file_offset_{file_offset},
    size_{size},
    owner_{owner},
    max_attempts_{defaults::http_max_attempts()},
    retry_statuses_{defaults::http_status_codes()},
    expected_range_{"bytes " + std::to_string(file_offset) + "-" +
                    std::to_string(file_offset + size - 1) + "/"},
    what_{endpoint.str() + " (" + std::to_string(size) + " bytes at offset " +
          std::to_string(file_offset) + ")"}
{
}

std::runtime_error RangeRequest::ended_by_close() const
{
  return std::runtime_error("KvikIO: " + what_ +
                            ": the RemoteHandle was closed (destroyed) while this read was "
                            "stalled or retrying");
}

int RangeRequest::progress(void* self, curl_off_t, curl_off_t received, curl_off_t, curl_off_t)
{
  auto& request  = *static_cast<RangeRequest*>(self);
  auto const now = std::chrono::steady_clock::now();
  if (received != request.progress_bytes_) {
    request.progress_bytes_ = received;
    request.progress_at_    = now;
  }
  return request.owner_->closing() && now - request.progress_at_ >= stall_after_close ? 1 : 0;
}

void RangeRequest::prepare(CurlHandle& curl)
{
  if (owner_ != nullptr) {
    if (attempt_ > 1 && owner_->closing()) { throw ended_by_close(); }
    progress_bytes_ = 0;
    progress_at_    = std::chrono::steady_clock::now();
    curl.setopt(CURLOPT_XFERINFOFUNCTION, &RangeRequest::progress);
    curl.setopt(CURLOPT_XFERINFODATA, static_cast<void*>(this));
    curl.setopt(CURLOPT_NOPROGRESS, 0L);
  }
  if (attempt_ > 1) { sink_.restart(); }
  endpoint_.setopt(curl);
  endpoint_.setup_range_request(curl, file_offset_, size_);
  curl.setopt(CURLOPT_WRITEFUNCTION, &RemoteSink::write_callback);
  curl.setopt(CURLOPT_WRITEDATA, static_cast<void*>(&sink_));
  curl.setopt(CURLOPT_HEADERFUNCTION, &RemoteSink::header_callback);
  curl.setopt(CURLOPT_HEADERDATA, static_cast<void*>(&sink_));
  // libcurl reads the socket 16 KiB at a time by default: larger reads cost fewer system calls
  // per byte, and one multi-poll reactor or one easy thread read 1.4-1.7x as fast with 1 MiB
  // (docs/benchmarks.md). A request, not an order: a libcurl that refuses it keeps its own size.
  (void)curl_easy_setopt(curl.get(), CURLOPT_BUFFERSIZE, receive_buffer_size);
  sink_.attach(curl.get(), expected_range_);
}

std::optional<std::chrono::milliseconds> RangeRequest::outcome(CurlHandle const& curl,
                                                               CURLcode code)
{
  if (code == CURLE_ABORTED_BY_CALLBACK && owner_ != nullptr && owner_->closing()) {
    throw ended_by_close();
  }
  long const status = curl.status();
  if (sink_.error()) { std::rethrow_exception(sink_.error()); }
  if (sink_.wrong_range()) {
    throw std::runtime_error("KvikIO: " + what_ + ": the server answered Content-Range \"" +
                             sink_.content_range() + "\" instead of \"" + expected_range_ +
                             "...\"");
  }
  if (sink_.overflowed()) {
    throw std::overflow_error("maybe the server doesn't support file ranges? [KvikIO: " + what_ +
                              ": the server sent more bytes than the range asked for]");
  }
  bool const retry_status =
    std::find(retry_statuses_.begin(), retry_statuses_.end(), status) != retry_statuses_.end();
  if (code == CURLE_OK && !retry_status) {
    if (status / 100 != 2) {
      // Upstream's wording (libcurl's text for a failed status), then ours.
      throw std::runtime_error(
        "curl_easy_perform() error (The requested URL returned error: " + std::to_string(status) +
        ") [KvikIO: " + what_ + ": HTTP " + std::to_string(status) +
        (sink_.error_body().empty() ? "" : ": " + sink_.error_body()) + "]");
    }
    if (sink_.received() != size_) {
      throw std::runtime_error("KvikIO: " + what_ + ": the server sent " +
                               std::to_string(sink_.received()) + " bytes");
    }
    return std::nullopt;
  }
  bool const timeout = code == CURLE_OPERATION_TIMEDOUT;
  if (!retry_status && !timeout) {
    throw std::runtime_error("curl_easy_perform() error (" + curl.error_message(code) +
                             ") [KvikIO: " + what_ + "]");
  }
  // Upstream's wording, so that logs and scripts that look for it keep working.
  std::string const reason =
    timeout ? "Operation timed out." : "Got HTTP code " + std::to_string(status) + ".";
  if (owner_ != nullptr && owner_->closing()) { throw ended_by_close(); }
  if (attempt_ >= max_attempts_) {
    throw std::runtime_error("KvikIO: " + what_ +
                             ": HTTP request reached maximum number of attempts (" +
                             std::to_string(max_attempts_) + "). Reason: " + reason);
  }
  auto const delay = retry_backoff(attempt_);
  KVIKIO_LOG_WARN("KvikIO: ",
                  timeout ? std::string{"Timeout error."} : reason,
                  " Retrying after ",
                  delay.count(),
                  "ms (attempt ",
                  attempt_,
                  " of ",
                  max_attempts_,
                  "). [",
                  what_,
                  "]");
  ++attempt_;
  return delay;
}

}  // namespace kvikio::detail
