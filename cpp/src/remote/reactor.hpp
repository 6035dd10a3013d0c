/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <curl/curl.h>

#include <kvikio/detail/multi_poll.hpp>

#include "pread_chunks.hpp"
#include "sink.hpp"

namespace kvikio::detail {
namespace multi_poll {

/// Wakes a reactor's curl_multi_poll: from other threads submitting work and from CUDA host
/// functions when copies complete. Outlives the reactor if a host function still holds it.
class MultiWaker final : public CopyWaker {
 public:
  explicit MultiWaker(CURLM* multi) : multi_{multi} {}
  void wake() noexcept override
  {
    std::lock_guard const lock{mutex_};
    if (multi_ != nullptr) { curl_multi_wakeup(multi_); }
  }
  /// The handle to wake from now on (null: none, the reactor is stopping).
  void set(CURLM* multi) noexcept
  {
    std::lock_guard const lock{mutex_};
    multi_ = multi;
  }

 private:
  std::mutex mutex_;
  CURLM* multi_;
};

}  // namespace multi_poll

/**
 * One reactor thread and its multi handle. Other threads only queue transfers and wake it
 * (`curl_multi_wakeup`); everything else happens on the reactor thread.
 */
class MultiPollTransport::Reactor {
 public:
  Reactor(std::size_t index,
          std::shared_ptr<SharedChunks> shared,
          std::atomic<std::size_t>& resumed)
    : index_{index},
      shared_{std::move(shared)},
      resumed_{resumed},
      multi_{new_multi()},
      waker_{std::make_shared<multi_poll::MultiWaker>(multi_)},
      thread_{[this] { run(); }}
  {
  }
  ~Reactor() { stop(); }
  Reactor(Reactor const&)            = delete;
  Reactor& operator=(Reactor const&) = delete;

  /// Queues `transfers` (none: look at the shared chunks) and sets the in-flight limit the
  /// reactor applies from now on.
  void submit(std::vector<std::unique_ptr<multi_poll::Transfer>> transfers,
              std::size_t max_in_flight)
  {
    std::lock_guard const lock{mutex_};
    for (auto& t : transfers) {
      queue_.push_back(std::move(t));
    }
    max_in_flight_ = max_in_flight;
    waker_->wake();
  }

  /// Ends the thread; what is in flight or queued fails.
  void stop() noexcept
  {
    {
      std::lock_guard const lock{mutex_};
      if (stopping_) { return; }
      stopping_ = true;
    }
    waker_->wake();
    if (thread_.joinable()) { thread_.join(); }
    waker_->set(nullptr);  // host functions still pending must not touch the handle
    curl_multi_cleanup(multi_);
  }

 private:
  static CURLM* new_multi()
  {
    CURLM* multi = curl_multi_init();
    if (multi == nullptr) { throw std::runtime_error("KvikIO: curl_multi_init failed"); }
    // Keep warm connections when concurrency dips (the default cache is 4x the handles added),
    // and multiplex over HTTP/2 when the server offers it.
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, 64L);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    return multi;
  }

  void run();
  void start(multi_poll::Transfer& t);
  void judge(multi_poll::Transfer& t, CURLcode code);
  void rebuild(CURLMcode code);
  [[nodiscard]] int poll_timeout_ms(multi_poll::Clock::time_point now) const;

  std::size_t const index_;               // the reactor's place in the transport
  std::shared_ptr<SharedChunks> shared_;  // where PER_CHUNK chunks wait
  std::atomic<std::size_t>& resumed_;     // the transport's count of resumed transfers
  std::mutex mutex_;
  std::deque<std::unique_ptr<multi_poll::Transfer>> queue_;  // guarded by mutex_
  std::size_t max_in_flight_{8};                             // guarded by mutex_
  bool stopping_{false};                                     // guarded by mutex_
  CURLM* multi_;  // used by the reactor thread; others wake it through waker_
  std::shared_ptr<multi_poll::MultiWaker> waker_;
  // Reactor thread only:
  std::deque<std::unique_ptr<multi_poll::Transfer>>
    waiting_;  // not started yet: own first, then shared
  std::vector<std::unique_ptr<multi_poll::Transfer>> active_;  // started and not ended
  std::size_t running_{0};                                     // attached to multi_
  std::thread thread_;                                         // last: starts once the rest exists
};

}  // namespace kvikio::detail
