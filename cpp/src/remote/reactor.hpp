/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <curl/curl.h>

#include "remote/multi_poll.hpp"

#include "remote/pread_chunks.hpp"
#include "remote/sink.hpp"

namespace kvikio::detail {
namespace multi_poll {

/**
 * Wakes a reactor blocked in epoll_wait: from threads submitting work and from CUDA host
 * functions when copies complete. It owns its eventfd, so a host function that runs after the
 * reactor stopped still writes to a live descriptor. A wake while the reactor is busy costs no
 * system call: it leaves a note that the reactor reads before it next blocks.
 */
class EventWaker final : public CopyWaker {
 public:
  /// @throws std::system_error if the eventfd cannot be made.
  EventWaker();
  ~EventWaker() override;
  EventWaker(EventWaker const&)            = delete;
  EventWaker& operator=(EventWaker const&) = delete;

  void wake() noexcept override;
  [[nodiscard]] int fd() const noexcept { return fd_; }
  /// The reactor is about to block: whether a wake came since it last asked (then it must not).
  [[nodiscard]] bool about_to_block() noexcept;
  /// The reactor is awake again; `signalled`: the eventfd was readable (its count is cleared).
  void awake(bool signalled) noexcept;

 private:
  int fd_;
  std::atomic<bool> pending_{false};   // a wake the reactor has not seen yet
  std::atomic<bool> sleeping_{false};  // the reactor may be blocked: a wake writes the eventfd
};

}  // namespace multi_poll

/**
 * One reactor thread, its multi handle and its epoll set. libcurl tells the reactor which
 * sockets to watch (CURLMOPT_SOCKETFUNCTION) and when it next needs the time
 * (CURLMOPT_TIMERFUNCTION); the reactor waits in epoll_wait and hands libcurl only the sockets
 * that are ready (`curl_multi_socket_action`), so a transfer waiting for its server costs
 * nothing per wakeup. Other threads only queue transfers and wake it (EventWaker); everything
 * else happens on the reactor thread.
 */
class MultiPollTransport::Reactor {
 public:
  Reactor(std::size_t index,
          std::shared_ptr<SharedChunks> shared,
          std::atomic<std::size_t>& resumed);
  ~Reactor() { stop(); }
  Reactor(Reactor const&)            = delete;
  Reactor& operator=(Reactor const&) = delete;

  /// Queues `transfers` (none: look at the shared chunks) and sets the in-flight limit the
  /// reactor applies from now on.
  void submit(std::vector<std::unique_ptr<multi_poll::Transfer>> transfers,
              std::size_t max_in_flight);

  /// Ends the thread; what is in flight or queued fails.
  void stop() noexcept;

 private:
  // libcurl's callbacks (`self` is the reactor); they run on the reactor thread, inside
  // curl_multi_socket_action and curl_multi_add_handle.
  static int on_socket(CURL* easy, curl_socket_t socket, int what, void* self, void* socketp);
  static int on_timer(CURLM* multi, long timeout_ms, void* self);

  void open_multi();
  void close_multi() noexcept;
  void run();
  void start(multi_poll::Transfer& t);
  void judge(multi_poll::Transfer& t, CURLcode code);
  void settle(bool watching);
  void start_what_fits(std::size_t max_in_flight);
  void act(curl_socket_t socket, int events);
  void read_completions();
  void cut_stalled_after_close();
  void rebuild(CURLMcode code);
  [[nodiscard]] int wait_timeout_ms(multi_poll::Clock::time_point now) const;

  std::size_t const index_;               // the reactor's place in the transport
  std::shared_ptr<SharedChunks> shared_;  // where PER_CHUNK chunks wait
  std::atomic<std::size_t>& resumed_;     // the transport's count of resumed transfers
  std::shared_ptr<multi_poll::EventWaker> waker_;
  std::mutex mutex_;
  std::deque<std::unique_ptr<multi_poll::Transfer>> queue_;  // guarded by mutex_
  std::size_t max_in_flight_{8};                             // guarded by mutex_
  bool stopping_{false};                                     // guarded by mutex_
  // Reactor thread only (and the constructor and stop(), before and after it):
  CURLM* multi_{nullptr};
  int epoll_{-1};
  /// What the epoll set holds for a socket (indexed by descriptor), and whether libcurl wants it.
  struct Watched {
    std::uint32_t events{0};
    bool in_set{false};
    bool wanted{false};
  };
  std::vector<Watched> watched_;
  std::optional<multi_poll::Clock::time_point> curl_deadline_;  // libcurl's timer
  multi_poll::Clock::time_point last_stall_check_{};            // cut_stalled_after_close()
  // While set and not passed: a transfer waits for its device copies, which the reactor then
  // looks at without blocking (see run()).
  std::optional<multi_poll::Clock::time_point> watch_copies_until_;
  std::deque<std::unique_ptr<multi_poll::Transfer>>
    waiting_;  // not started yet: own first, then shared
  std::vector<std::unique_ptr<multi_poll::Transfer>> active_;  // started and not ended
  std::size_t running_{0};                                     // attached to multi_
  std::thread thread_;                                         // last: starts once the rest exists
};

}  // namespace kvikio::detail
