/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include <cuda.h>

#include <kvikio/bounce_buffer.hpp>

namespace kvikio::detail {

/**
 * @brief Where the body of one ranged response goes: host memory written in place, or device
 * memory through the ring (slots filled by the write callbacks, copied when full and at the
 * end). Never writes past `capacity` bytes: a server that sends more than the range (it may
 * ignore ranges) makes the sink refuse the data, and the transfer fails.
 */
class RemoteSink {
 public:
  /// @brief Host memory at `dst`, or device memory (then the caller has pushed its context).
  RemoteSink(void* dst, std::size_t capacity, bool device);
  ~RemoteSink() noexcept;
  RemoteSink(RemoteSink const&)            = delete;
  RemoteSink& operator=(RemoteSink const&) = delete;

  /// @brief libcurl's header callback: notes the Content-Range of the response.
  static std::size_t header_callback(char* data,
                                     std::size_t size,
                                     std::size_t nmemb,
                                     void* self) noexcept;
  /// @brief The Content-Range value of the last response ("" if none).
  [[nodiscard]] std::string const& content_range() const noexcept { return content_range_; }

  /// @brief libcurl's write callback: returns `n` or, to abort, anything else.
  static std::size_t write_callback(char* data,
                                    std::size_t size,
                                    std::size_t nmemb,
                                    void* self) noexcept;

  /// @brief The transfer about to run: its HTTP status decides where the body goes (the body of
  /// an error response is kept for the message, never written to the destination).
  /// `expected_range` is the start of the Content-Range a partial (206) answer must carry
  /// ("bytes <first>-<last>/"): any other range is refused before a byte is written.
  void attach(void* curl_easy_handle, std::string expected_range)
  {
    curl_           = curl_easy_handle;
    expected_range_ = std::move(expected_range);
  }
  /// @brief Whether a 206 answer carried another range than the one asked for.
  [[nodiscard]] bool wrong_range() const noexcept { return wrong_range_; }
  /// @brief The start of an error response's body ("" if none).
  [[nodiscard]] std::string const& error_body() const noexcept { return error_body_; }

  /// @brief Forget what arrived (a retry rewrites its own range).
  void restart();
  /// @brief Copies what is still in the ring's current slot and waits for every copy.
  void finish();

  [[nodiscard]] std::size_t received() const noexcept { return received_; }
  [[nodiscard]] bool overflowed() const noexcept { return overflowed_; }

 private:
  void flush();
  std::byte* dst_;
  std::size_t capacity_;
  std::size_t received_{0};
  bool overflowed_{false};
  void* curl_{nullptr};
  int status_class_{0};  // 0: not known yet; 2: success, body goes to the destination; else error
  std::string error_body_;
  std::string content_range_;
  std::string expected_range_;
  bool wrong_range_{false};
  // Device destinations only.
  std::optional<BounceBufferRing<>> ring_;
  CUstream stream_{nullptr};
  std::byte* slot_{nullptr};
  std::size_t in_slot_{0};
  std::size_t flushed_{0};
};

}  // namespace kvikio::detail
