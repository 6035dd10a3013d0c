/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <system_error>
#include <utility>

#include <curl/curl.h>

#include <kvikio/detail/curl.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include "core/in_flight.hpp"
#include "remote/multi_poll.hpp"
#include "remote/pread_chunks.hpp"
#include "remote/range_request.hpp"
#include "remote/reactor.hpp"
#include "remote/sink.hpp"

namespace kvikio::detail {

using multi_poll::Clock;
using multi_poll::shut_down_error;
using multi_poll::Transfer;

namespace {

// Events taken from the epoll set per wait: more wait for the next one.
constexpr std::size_t events_per_wait = 64;

// The longest wait without a deadline: a safety net, nothing is expected to need it.
constexpr int longest_wait_ms = 1000;

// How often transfers of closing handles are looked at (RangeRequest::stalled_after_close),
// and so the longest wait while transfers run.
constexpr std::chrono::milliseconds stall_check_interval{250};

// How long a reactor looks at copies just queued without blocking, before it asks for a host
// function to wake it (run()): a copy of a small chunk is usually done by then, and a host
// function per transfer costs more than the look.
constexpr std::chrono::microseconds copy_watch{50};

}  // namespace

MultiPollTransport::Reactor::Reactor(std::size_t index,
                                     std::shared_ptr<SharedChunks> shared,
                                     std::atomic<std::size_t>& resumed)
  : index_{index},
    shared_{std::move(shared)},
    resumed_{resumed},
    waker_{std::make_shared<multi_poll::EventWaker>()}
{
  open_multi();
  try {
    static auto const& name_thread = detail::lasting_thread_namer("kvikio-poll");
    thread_                        = std::thread{[this] {
      name_thread();
      run();
    }};
  } catch (std::system_error const& e) {
    close_multi();
    throw std::system_error(e.code(),
                            "KvikIO: could not start multi-poll reactor thread " +
                              std::to_string(index_ + 1) +
                              " (a limit on threads or memory: ulimit -u, the cgroup's pids.max; "
                              "KVIKIO_REMOTE_IO_NUM_REACTORS sets how many)");
  } catch (...) {
    close_multi();
    throw;
  }
}

void MultiPollTransport::Reactor::submit(std::vector<std::unique_ptr<Transfer>> transfers,
                                         std::size_t max_in_flight)
{
  {
    std::lock_guard const lock{mutex_};
    for (auto& t : transfers) {
      queue_.push_back(std::move(t));
    }
    max_in_flight_ = max_in_flight;
  }
  waker_->wake();
}

void MultiPollTransport::Reactor::stop() noexcept
{
  {
    std::lock_guard const lock{mutex_};
    if (stopping_) { return; }
    stopping_ = true;
  }
  waker_->wake();
  if (thread_.joinable()) { thread_.join(); }
  close_multi();
}

void MultiPollTransport::Reactor::start(Transfer& t)
{
  try {
    if (!t.sink) {
      t.sink.emplace(t.dst, t.size, t.device_context);
      t.sink->set_nonblocking(waker_);
      t.request.emplace(
        t.endpoint, *t.sink, t.file_offset, t.size, t.object_size, t.completion->owner());
    }
    t.curl.emplace();
    t.request->prepare(*t.curl);
    t.curl->setopt(CURLOPT_PRIVATE, static_cast<void*>(&t));
    t.curl->setopt(CURLOPT_PIPEWAIT, 1L);
    CURLMcode const code = curl_multi_add_handle(multi_, t.curl->get());
    if (code != CURLM_OK) {
      throw std::runtime_error(std::string{"KvikIO: curl_multi_add_handle failed: "} +
                               curl_multi_strerror(code));
    }
    t.state = Transfer::State::running;
    ++running_;
  } catch (...) {
    t.end(std::current_exception());
  }
}

void MultiPollTransport::Reactor::judge(Transfer& t, CURLcode code)
{
  try {
    auto const retry_after = t.request->outcome(*t.curl, code);
    t.curl.reset();
    if (retry_after) {
      t.state    = Transfer::State::waiting_retry;
      t.retry_at = Clock::now() + *retry_after;
      return;
    }
    t.sink->submit_rest();
    t.state = Transfer::State::draining;
    // Host memory has no copies: the transfer ends now. Device copies are watched (run()), and
    // wake the reactor if they take longer.
    if (t.sink->copies_done()) {
      t.end(nullptr);
    } else {
      auto const until = Clock::now() + copy_watch;
      if (!watch_copies_until_ || *watch_copies_until_ < until) { watch_copies_until_ = until; }
    }
  } catch (...) {
    t.end(std::current_exception());
  }
}

// After a wake, or while copies are watched: resume paused transfers whose next slot is free,
// end those whose copies are done; the others wait for another wake (rearm: the host function
// that woke the reactor may have been ahead of their copies), or for the next look while the
// watch lasts. A watch that has ended asks for the wakes of the copies still pending.
void MultiPollTransport::Reactor::settle(bool watching)
{
  if (!watching) { watch_copies_until_.reset(); }
  for (auto& t : active_) {
    try {
      bool const paused = t->state == Transfer::State::running && t->sink->paused();
      if (paused && !t->sink->ready_to_resume()) {
        if (!watching) { t->sink->rearm(); }
        continue;
      }
      if (paused) {
        // May call the write callback at once, which may pause the transfer again.
        CURLcode const resumed = curl_easy_pause(t->curl->get(), CURLPAUSE_CONT);
        if (resumed != CURLE_OK) {
          // The write callback run by the resume refused the bytes: the transfer ended here,
          // and is judged as one libcurl ended (the sink's reason first: more bytes than the
          // range, another range, a CUDA failure while copying).
          curl_multi_remove_handle(multi_, t->curl->get());
          --running_;
          judge(*t, resumed);
          continue;
        }
        resumed_.fetch_add(1, std::memory_order_relaxed);
      }
      if (t->state == Transfer::State::draining) {
        if (t->sink->copies_done()) {
          t->end(nullptr);
        } else {
          if (!watching) { t->sink->rearm(); }
        }
      }
    } catch (...) {
      if (t->state == Transfer::State::running) {
        curl_multi_remove_handle(multi_, t->curl->get());
        --running_;
      }
      t->end(std::current_exception());
    }
  }
  // Nothing left to watch (judge() above may have started another watch): block again.
  if (watching && std::none_of(active_.begin(), active_.end(), [](auto const& t) {
        return t->state == Transfer::State::draining;
      })) {
    watch_copies_until_.reset();
  }
}

// Retries whose backoff is over go first, then this reactor's own transfers, then shared ones,
// up to the limit. libcurl starts what was added at its next timeout (at once).
void MultiPollTransport::Reactor::start_what_fits(std::size_t max_in_flight)
{
  auto const now = Clock::now();
  for (auto& t : active_) {
    if (running_ >= max_in_flight) { break; }
    if (t->state == Transfer::State::waiting_retry && t->retry_at <= now) { start(*t); }
  }
  if (running_ + waiting_.size() < max_in_flight) {
    shared_->take(index_, max_in_flight - running_ - waiting_.size(), waiting_);
  }
  while (running_ < max_in_flight && !waiting_.empty()) {
    active_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    start(*active_.back());
  }
}

// libcurl runs a transfer only when its socket or its timer says so: one whose server sends
// nothing is not run until its timeout, and so never asks whether its handle is closing. The
// reactor asks for it, a few times a second; a transfer cut here ends as one its progress
// callback cut.
void MultiPollTransport::Reactor::cut_stalled_after_close()
{
  for (auto& t : active_) {
    if (t->state != Transfer::State::running) { continue; }
    InFlight const* const owner = t->completion->owner();
    if (owner == nullptr || !owner->closing()) { continue; }
    curl_off_t received = 0;
    curl_easy_getinfo(t->curl->get(), CURLINFO_SIZE_DOWNLOAD_T, &received);
    if (!t->request->stalled_after_close(received)) { continue; }
    curl_multi_remove_handle(multi_, t->curl->get());
    --running_;
    judge(*t, CURLE_ABORTED_BY_CALLBACK);
  }
}

void MultiPollTransport::Reactor::read_completions()
{
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
    if (msg->msg != CURLMSG_DONE) { continue; }
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
    CURLcode const result = msg->data.result;
    curl_multi_remove_handle(multi_, msg->easy_handle);
    --running_;
    judge(*t, result);
  }
}

// Until libcurl's timer or the first retry is due; sockets and wakes end the wait earlier.
int MultiPollTransport::Reactor::wait_timeout_ms(Clock::time_point now) const
{
  auto until = [now](Clock::time_point due) {
    auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(due - now).count();
    // Rounded up: waking before the deadline would only wait again.
    return due <= now ? 0 : static_cast<int>(std::min<long long>(left + 1, longest_wait_ms));
  };
  int timeout = curl_deadline_ ? until(*curl_deadline_) : longest_wait_ms;
  if (running_ > 0) {
    timeout = std::min(timeout, until(last_stall_check_ + stall_check_interval));
  }
  for (auto const& t : active_) {
    if (t->state == Transfer::State::waiting_retry) {
      timeout = std::min(timeout, until(t->retry_at));
    }
  }
  return timeout;
}

void MultiPollTransport::Reactor::run()
{
  std::array<epoll_event, events_per_wait> events{};
  bool woken = true;  // by the waker: submissions to take, paused or draining transfers to see
  while (true) {
    std::size_t max_in_flight = 0;
    {
      std::lock_guard const lock{mutex_};
      if (stopping_) { break; }
      while (!queue_.empty()) {
        waiting_.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      max_in_flight = max_in_flight_;
    }
    // Copies just queued are looked at without blocking for a while: they take microseconds,
    // while the host function that would wake the reactor after them comes tens of microseconds
    // later, and costs a driver call and its thread's wakeup. A watch that ends with copies
    // still pending asks for that wake.
    bool const watching = watch_copies_until_ && Clock::now() < *watch_copies_until_;
    if (woken || watch_copies_until_) { settle(watching); }
    start_what_fits(max_in_flight);
    std::erase_if(active_, [](auto const& t) { return t->state == Transfer::State::ended; });

    // A wake that came while the reactor was busy is a note read here: then it does not block.
    bool const noted = waker_->about_to_block();
    int const n      = ::epoll_wait(epoll_,
                               events.data(),
                               static_cast<int>(events.size()),
                               noted || watch_copies_until_ ? 0 : wait_timeout_ms(Clock::now()));
    bool signalled   = false;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == waker_->fd()) {
        signalled = true;
        continue;
      }
      std::uint32_t const e = events[i].events;
      act(events[i].data.fd,
          ((e & (EPOLLIN | EPOLLHUP)) != 0 ? CURL_CSELECT_IN : 0) |
            ((e & EPOLLOUT) != 0 ? CURL_CSELECT_OUT : 0) |
            ((e & EPOLLERR) != 0 ? CURL_CSELECT_ERR : 0));
    }
    waker_->awake(signalled);
    woken          = noted || signalled;
    auto const now = Clock::now();
    if (curl_deadline_ && *curl_deadline_ <= now) {
      curl_deadline_.reset();  // libcurl sets the next one from inside
      act(CURL_SOCKET_TIMEOUT, 0);
    }
    read_completions();
    if (running_ > 0 && now >= last_stall_check_ + stall_check_interval) {
      last_stall_check_ = now;
      cut_stalled_after_close();
    }
  }

  // Stopping: nothing in flight or queued may write after stop() returns.
  auto const error = shut_down_error();
  for (auto& t : active_) {
    if (t->state == Transfer::State::running) { curl_multi_remove_handle(multi_, t->curl->get()); }
    t->end(error);
  }
  active_.clear();
  std::lock_guard const lock{mutex_};
  for (auto* queue : {&waiting_, &queue_}) {
    for (auto& t : *queue) {
      t->end(error);
    }
    queue->clear();
  }
}

}  // namespace kvikio::detail
