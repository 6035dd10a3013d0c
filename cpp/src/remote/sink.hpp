/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <cuda.h>

#include <kvikio/bounce_buffer.hpp>

namespace kvikio::detail {

/**
 * @brief Wakes whoever drives non-blocking sinks (the multi-poll reactor) once copies it waits
 * for have completed. wake() is called from a CUDA host function: it must make no CUDA call.
 *
 * One host function at a time per stream: a host function wakes its waker once every copy
 * enqueued on its stream before it is done, so while one is pending, the copies enqueued after
 * it wait for the driver of the sinks to arm the next one (RemoteSink::rearm) once it was woken
 * (or, in the multi-poll reactor, once its watch of the copies ended).
 * At many transfers a second this is one host function per wakeup instead of one per transfer
 * (the driver runs them all on one thread, and each blocks its stream while it runs).
 */
class CopyWaker {
 public:
  virtual ~CopyWaker()         = default;
  virtual void wake() noexcept = 0;

  /// @brief Whether the caller is to launch a host function on `stream` (none is pending
  /// there); if so, one is recorded as pending there until host_function_ran(stream).
  bool claim_host_function(CUstream stream);
  /// @brief The host function claimed on `stream` ran (before it wakes the waker).
  void host_function_ran(CUstream stream) noexcept;

 private:
  std::mutex mutex_;
  std::vector<CUstream> pending_;  // streams with a host function pending
};

/**
 * @brief Where the body of one ranged response goes: host memory written in place, or device
 * memory through the ring (slots filled by the write callbacks, copied when full and at the
 * end). Never writes past `capacity` bytes: a server that sends more than the range (it may
 * ignore ranges) makes the sink refuse the data, and the transfer fails.
 *
 * Both transports use it. The easy transport lets it wait for a slot's copy when the ring wraps
 * around; the multi-poll reactor must never wait on the GPU, so it sets non-blocking mode: a
 * write that would wait pauses the transfer instead (libcurl delivers the same bytes again once
 * the reactor resumes it), and the last copies are awaited by polling copies_done() and, past the
 * reactor's watch of them, through a host function's wake (rearm()).
 */
class RemoteSink {
 public:
  /// @brief Host memory at `dst` (`device_context` null), or device memory of that context. A
  /// device sink takes its pinned memory when the first bytes of the body arrive, and holds it
  /// until it is destroyed: one bounce buffer of `KVIKIO_BOUNCE_BUFFER_SIZE` as set then, in
  /// `KVIKIO_NUM_BOUNCE_BUFFERS` slots as set now, or for a range that fills fewer slots only
  /// those (one of the range's size if it fits in one), from a smaller buffer of the pool.
  RemoteSink(void* dst, std::size_t capacity, CUcontext device_context);
  ~RemoteSink() noexcept;  // waits for copies still in flight
  RemoteSink(RemoteSink const&)            = delete;
  RemoteSink& operator=(RemoteSink const&) = delete;

  /// @brief libcurl's header callback: notes the Content-Range of the response.
  static std::size_t header_callback(char* data,
                                     std::size_t size,
                                     std::size_t nmemb,
                                     void* self) noexcept;
  /// @brief libcurl's write callback: returns `n`, CURL_WRITEFUNC_PAUSE, or (to abort) 0.
  static std::size_t write_callback(char* data,
                                    std::size_t size,
                                    std::size_t nmemb,
                                    void* self) noexcept;

  /// @brief The transfer about to run: its HTTP status decides where the body goes (the body of
  /// an error response is kept for the message, never written to the destination).
  /// `expected_range` is the Content-Range a partial (206) answer must carry: "bytes
  /// <first>-<last>/<object size>" (or with the size "*", unknown to the server), or "bytes
  /// <first>-<last>/" for any size. Any other range or size is refused before a byte is written.
  /// `expected_tag` is the ETag a successful answer that carries one must carry ("": any); a
  /// body of another version of the object is refused before a byte is written too.
  void attach(void* curl_easy_handle, std::string expected_range, std::string expected_tag)
  {
    curl_           = curl_easy_handle;
    expected_range_ = std::move(expected_range);
    expected_tag_   = std::move(expected_tag);
  }
  /// @brief Forget what arrived, for another attempt (which rewrites the whole range).
  void restart();
  /// @brief Copies what is still in the ring's current slot and waits for every copy.
  void finish();

  /// @brief Never wait on the GPU from the callbacks: pause the transfer instead. `waker` is
  /// woken when the copies that a pause left pending, or those of a rearm(), have completed.
  void set_nonblocking(std::shared_ptr<CopyWaker> waker) noexcept { waker_ = std::move(waker); }
  /// @brief Whether the last write paused the transfer (non-blocking mode).
  [[nodiscard]] bool paused() const noexcept { return paused_; }
  /// @brief Without waiting: whether a paused transfer can go on (then it is no longer paused).
  [[nodiscard]] bool ready_to_resume();
  /// @brief Copies what is still in the ring's current slot, without waiting: the caller polls
  /// copies_done(), or calls rearm() to be woken when the copies are done.
  void submit_rest();
  /// @brief Makes sure the waker is woken once this sink's copies are done (a host function
  /// pending on its stream may have been launched before some of them).
  void rearm();
  /// @brief Without waiting: whether every copy has completed (true for host memory).
  [[nodiscard]] bool copies_done();

  /// @brief The Content-Range value of the last response ("" if none).
  [[nodiscard]] std::string const& content_range() const noexcept { return content_range_; }
  /// @brief Whether a 206 answer carried another range or object size than expected.
  [[nodiscard]] bool wrong_range() const noexcept { return wrong_range_; }
  /// @brief The ETag of a successful answer that was not the one expected ("" if none was).
  [[nodiscard]] std::string const& other_version() const noexcept { return other_version_; }
  /// @brief The start of an error response's body ("" if none).
  [[nodiscard]] std::string const& error_body() const noexcept { return error_body_; }
  /// @brief What a callback caught (a CUDA failure while copying), or null.
  [[nodiscard]] std::exception_ptr error() const noexcept { return error_; }
  [[nodiscard]] std::size_t received() const noexcept { return received_; }
  [[nodiscard]] bool overflowed() const noexcept { return overflowed_; }

 private:
  [[nodiscard]] bool range_as_expected() const noexcept;
  void make_ring();
  [[nodiscard]] bool next_slots_free(std::size_t n);
  void flush();
  void wake_after_copies();
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
  std::string expected_tag_;
  std::string other_version_;
  std::exception_ptr error_;
  std::shared_ptr<CopyWaker> waker_;  // set: non-blocking mode
  bool paused_{false};
  // Device destinations only.
  CUcontext ctx_{nullptr};
  std::size_t num_slots_{0};
  std::optional<BounceBufferRing<>> ring_;  // from the first byte of the body
  CUstream stream_{nullptr};                // of the thread that copies, taken at the first copy
  std::byte* slot_{nullptr};
  std::size_t in_slot_{0};
  std::size_t flushed_{0};
};

}  // namespace kvikio::detail
