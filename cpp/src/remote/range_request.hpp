/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <kvikio/detail/curl.hpp>
#include <kvikio/remote_handle.hpp>

#include "core/in_flight.hpp"
#include "remote/retry_rule.hpp"
#include "remote/sink.hpp"

namespace kvikio::detail {

/**
 * @brief One ranged GET of `size` bytes at `file_offset` into a sink, as a series of attempts.
 *
 * prepare() sets up an easy handle for the next attempt; once libcurl has run it, outcome()
 * decides: the range arrived whole, or it is retried after a backoff (RetryRule), or the request
 * failed (outcome() throws). Both transports drive requests through this one rule: the easy
 * transport in a loop on a pool thread, the multi-poll reactor from its completions.
 *
 * A request made for a handle (`owner`, the handle's InFlight) keeps going while its handle is
 * closing as long as bytes arrive (closing waits for reads), but it is not retried then, and an
 * attempt that receives nothing for a second once the handle is closing (a stalled server) is cut
 * (stalled_after_close(): asked by libcurl's progress callback, which a blocking easy transfer
 * runs at least once a second, stalled or not, and by the multi-poll reactor). So a handle
 * destroyed under a read against a stalled server waits about a second, not the HTTP timeout
 * times the attempts.
 */
class RangeRequest {
 public:
  /// @brief Reads the retry settings now: a request keeps the ones it started with.
  /// `object_size` is the object's size as the server gave it when the handle was opened (0
  /// where the caller gave the size: then any is accepted): a partial answer whose Content-Range
  /// gives another (the object changed since) fails the read, as does, for a handle opened
  /// without a size, an answer whose ETag differs from the one the open saw
  /// (RemoteEndpoint::entity_tag(): another version of the same size).
  RangeRequest(RemoteEndpoint& endpoint,
               RemoteSink& sink,
               std::size_t file_offset,
               std::size_t size,
               std::size_t object_size,
               InFlight const* owner = nullptr);

  /// @brief Sets the endpoint's options, the range and the sink's callbacks on `curl` (a fresh
  /// handle for each attempt); from the second attempt on, restarts the sink first.
  /// @throws std::runtime_error for a retry once the owner is closing (see ended_by_close()).
  void prepare(CurlHandle& curl);

  /**
   * @brief Judges the attempt that just ran on `curl` and ended with `code`.
   * @return std::nullopt when the whole range arrived (the caller then finishes the sink), or
   * the delay after which to call prepare() again (the retry notice says so; see RetryRule).
   * @throws std::overflow_error if the server sent more than the range (it may ignore ranges);
   * std::runtime_error for any other failure, naming the URL, the range and the reason; what a
   * sink callback caught (a CUDA error) as it was thrown.
   */
  std::optional<std::chrono::milliseconds> outcome(CurlHandle const& curl, CURLcode code);

  /// @brief The error of a request cut because its handle was closed before it finished.
  [[nodiscard]] std::runtime_error ended_by_close() const;

  /**
   * @brief Whether this attempt is to be cut: its handle is closing and its body (`received`
   * bytes so far, libcurl's count) has not grown for a second. libcurl's progress callback asks
   * this whenever libcurl runs the transfer; the multi-poll reactor asks it on a clock too, as
   * libcurl does not run a transfer whose server sends nothing.
   */
  [[nodiscard]] bool stalled_after_close(curl_off_t received);

  /// @brief "<url> (<size> bytes at offset <offset>)", for messages.
  [[nodiscard]] std::string const& what() const noexcept { return retry_.what(); }

 private:
  // libcurl's progress callback (the request is its data): a non-zero return cuts the attempt.
  static int progress(void* self, curl_off_t, curl_off_t received, curl_off_t, curl_off_t);

  RemoteEndpoint& endpoint_;
  RemoteSink& sink_;
  std::size_t file_offset_;
  std::size_t size_;
  InFlight const* owner_;
  // Body bytes of this attempt at the last progress callback, and when that count last moved.
  curl_off_t progress_bytes_{0};
  std::chrono::steady_clock::time_point progress_at_{};
  std::string expected_range_;
  std::string expected_tag_;  // "": any version
  RetryRule retry_;
};

}  // namespace kvikio::detail
