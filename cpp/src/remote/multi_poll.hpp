/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda.h>

#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/remote_handle.hpp>

namespace kvikio::detail {

/**
 * @brief The multi-poll transport: reactor threads, each driving one libcurl multi handle from
 * an epoll set (`curl_multi_socket_action`), so that many transfers are in flight on few threads.
 *
 * A pread is cut into chunks of `task_size`. With `PER_CHUNK` dispatch the chunks wait in one
 * queue that every reactor takes from whenever it has room, so a reactor whose connections are
 * faster takes more of them; with `PER_PREAD` all chunks of a pread go to one reactor, chosen in
 * turn. The chunks of many preads share the reactors. Each reactor keeps at most
 * `KVIKIO_REMOTE_MAX_CONNECTIONS` transfers in flight (or its share of
 * `KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS`), retries as
 * the easy transport does (RangeRequest), and writes through the same sink: device memory goes
 * through a ring whose copies it never waits for (a transfer whose next slot is still being
 * copied is paused, and resumed when the copy is done). The settings are read at every pread.
 * No thread of the thread pool is used.
 */
class MultiPollTransport {
 public:
  /// @brief The process-wide transport; its reactors start at the first pread.
  static MultiPollTransport& instance();

  /// @brief Where one pread's bytes go: `size` bytes at `file_offset` of the object into `buf`,
  /// host memory (`device_context` null) or device memory of that context, in chunks of
  /// `task_size`.
  struct Destination {
    std::byte* buf;
    std::size_t size;
    std::size_t file_offset;
    std::size_t task_size;
    CUcontext device_context;
  };

  /**
   * @brief Reads into `to` from `endpoint`, an object of `object_size` bytes as the server said
   * at the open (a response that says otherwise fails; 0: not checked). The future is ready when
   * every chunk has arrived (or failed: the first error is reported, after the other chunks
   * ended). `endpoint` and `to.buf` must live until then; `lease` (a RemoteHandle's,
   * detail/in_flight.hpp) is held until no chunk uses the endpoint any more, just before the
   * future is made ready; once its handle is closing, chunks are not retried and a stalled one is
   * cut (RangeRequest). With a `recorder` (the pread's observation), the chunk that ends the pread
   * finishes it before the future becomes ready.
   */
  std::future<std::size_t> pread(RemoteEndpoint& endpoint,
                                 std::size_t object_size,
                                 Destination const& to,
                                 std::shared_ptr<void> lease                          = nullptr,
                                 std::shared_ptr<LogicalObservationRecorder> recorder = nullptr);

  /**
   * @brief Stops the reactors. Transfers in flight or queued fail with an error that says so;
   * nothing is written after this returns. The next pread starts reactors again. Runs at exit.
   */
  void shutdown() noexcept;

  /// @brief Reactor threads running now.
  [[nodiscard]] std::size_t num_reactors() const;

  /// @brief How many times a transfer paused for a ring slot was resumed, since the start.
  [[nodiscard]] std::size_t num_resumed() const noexcept
  {
    return resumed_.load(std::memory_order_relaxed);
  }

  ~MultiPollTransport();
  MultiPollTransport(MultiPollTransport const&)            = delete;
  MultiPollTransport& operator=(MultiPollTransport const&) = delete;

  class Reactor;
  class SharedChunks;

 private:
  MultiPollTransport();
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Reactor>> reactors_;
  std::shared_ptr<SharedChunks> shared_;  // PER_CHUNK chunks of the reactors running now
  std::size_t next_reactor_{0};           // where the next PER_PREAD pread goes
  std::atomic<std::size_t> resumed_{0};
};

}  // namespace kvikio::detail
