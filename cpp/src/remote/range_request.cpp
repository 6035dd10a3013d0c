/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <stdexcept>
#include <string>

#include <kvikio/detail/url.hpp>
#include <kvikio/statistics/counters.hpp>

#include "remote/range_request.hpp"

#include "remote/message_redaction.hpp"

namespace kvikio::detail {
namespace {

// libcurl's receive buffer for ranged GETs (CURLOPT_BUFFERSIZE), per transfer.
constexpr long receive_buffer_size = 1L << 20;

// How long an attempt of a closing handle's read may receive nothing before it is cut.
constexpr std::chrono::seconds stall_after_close{1};

}  // namespace

RangeRequest::RangeRequest(RemoteEndpoint& endpoint,
                           RemoteSink& sink,
                           std::size_t file_offset,
                           std::size_t size,
                           std::size_t object_size,
                           InFlight const* owner)
  : endpoint_{endpoint},
    sink_{sink},
    file_offset_{file_offset},
    size_{size},
    owner_{owner},
    expected_range_{"bytes " + std::to_string(file_offset) + "-" +
                    std::to_string(file_offset + size - 1) + "/" +
                    (object_size > 0 ? std::to_string(object_size) : "")},
    expected_tag_{object_size > 0 ? endpoint.entity_tag() : std::string{}},
    retry_{detail::url_for_message(endpoint.str()) + " (" + std::to_string(size) +
           " bytes at offset " + std::to_string(file_offset) + ")"}
{
}

std::runtime_error RangeRequest::ended_by_close() const
{
  return std::runtime_error("KvikIO: " + what() +
                            ": the RemoteHandle was closed (destroyed) while this read was "
                            "stalled or retrying");
}

bool RangeRequest::stalled_after_close(curl_off_t received)
{
  if (owner_ == nullptr) { return false; }
  auto const now = std::chrono::steady_clock::now();
  if (received != progress_bytes_) {
    progress_bytes_ = received;
    progress_at_    = now;
  }
  return owner_->closing() && now - progress_at_ >= stall_after_close;
}

int RangeRequest::progress(void* self, curl_off_t, curl_off_t received, curl_off_t, curl_off_t)
{
  return static_cast<RangeRequest*>(self)->stalled_after_close(received) ? 1 : 0;
}

void RangeRequest::prepare(CurlHandle& curl)
{
  if (owner_ != nullptr) {
    if (retry_.attempt() > 1 && owner_->closing()) { throw ended_by_close(); }
    progress_bytes_ = 0;
    progress_at_    = std::chrono::steady_clock::now();
    curl.setopt(CURLOPT_XFERINFOFUNCTION, &RangeRequest::progress);
    curl.setopt(CURLOPT_XFERINFODATA, static_cast<void*>(this));
    curl.setopt(CURLOPT_NOPROGRESS, 0L);
  }
  if (retry_.attempt() > 1) { sink_.restart(); }
  endpoint_.setopt(curl);
  endpoint_.setup_range_request(curl, file_offset_, size_);
  curl.setopt(CURLOPT_WRITEFUNCTION, &RemoteSink::write_callback);
  curl.setopt(CURLOPT_WRITEDATA, static_cast<void*>(&sink_));
  curl.setopt(CURLOPT_HEADERFUNCTION, &RemoteSink::header_callback);
  curl.setopt(CURLOPT_HEADERDATA, static_cast<void*>(&sink_));
  // libcurl reads the socket 16 KiB at a time by default: larger reads cost fewer system calls
  // per byte, which is what bounds one reactor or one easy thread. A request, not an order: a
  // libcurl that refuses it keeps its own size.
  (void)curl_easy_setopt(curl.get(), CURLOPT_BUFFERSIZE, receive_buffer_size);
  sink_.attach(curl.get(), expected_range_, expected_tag_);
}

std::optional<std::chrono::milliseconds> RangeRequest::outcome(CurlHandle const& curl,
                                                               CURLcode code)
{
  if (code == CURLE_ABORTED_BY_CALLBACK && owner_ != nullptr && owner_->closing()) {
    throw ended_by_close();
  }
  count_http_connection_of(curl.get());  // every attempt, on both transports
  long const status = curl.status();
  if (sink_.error()) { std::rethrow_exception(sink_.error()); }
  if (sink_.wrong_range()) {
    auto const range_end = expected_range_.rfind('/') + 1;
    bool const resized =
      sink_.content_range().compare(0, range_end, expected_range_, 0, range_end) == 0;
    throw std::runtime_error(
      "KvikIO: " + what() + ": the server answered Content-Range \"" +
      server_text_for_message(sink_.content_range()) + "\" instead of \"" + expected_range_ + "\"" +
      (resized ? " (the object changed size since the handle was opened: open it again)" : ""));
  }
  if (!sink_.other_version().empty()) {
    throw std::runtime_error("KvikIO: " + what() + ": the server answered with ETag " +
                             server_text_for_message(sink_.other_version()) +
                             ", the object it named " + server_text_for_message(expected_tag_) +
                             " when the handle was opened was replaced: open it again");
  }
  if (sink_.overflowed()) {
    throw std::overflow_error("maybe the server doesn't support file ranges? [KvikIO: " + what() +
                              ": the server sent more bytes than the range asked for]");
  }
  if (retry_.retry_after_releasing_descriptors(curl, code)) { return std::chrono::milliseconds{0}; }
  bool const retry = retry_.retryable(code, status);
  if (code == CURLE_OK && !retry) {
    if (status / 100 != 2) { throw http_status_error(status, what(), sink_.error_body()); }
    if (sink_.received() != size_) {
      throw std::runtime_error("KvikIO: " + what() + ": the server sent " +
                               std::to_string(sink_.received()) + " bytes");
    }
    return std::nullopt;
  }
  if (!retry) {
    throw std::runtime_error("curl_easy_perform() error (" + curl.error_message(code) +
                             ") [KvikIO: " + what() + "]");
  }
  if (owner_ != nullptr && owner_->closing()) { throw ended_by_close(); }
  return retry_.next_attempt(code, status);
}

}  // namespace kvikio::detail
