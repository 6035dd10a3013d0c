/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/multi_poll.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include <curl/curl.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/curl.hpp>
#include <kvikio/detail/logger.hpp>

#include "pread_chunks.hpp"
#include "range_request.hpp"
#include "reactor.hpp"
#include "sink.hpp"

namespace kvikio::detail {

using multi_poll::Clock;
using multi_poll::shut_down_error;
using multi_poll::Transfer;

void MultiPollTransport::Reactor::start(Transfer& t)
{
  try {
    if (!t.sink) {
      t.sink.emplace(t.dst, t.size, t.device_context);
      t.sink->set_nonblocking(waker_);
      t.request.emplace(t.endpoint, *t.sink, t.file_offset, t.size, t.completion->owner());
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
    t.state = Transfer::State::draining;  // ends once its copies are done (at once for host)
  } catch (...) {
    t.end(std::current_exception());
  }
}

// A failing multi handle fails the transfers attached to it (each pread reports it) and is
// replaced; the reactor and the other transfers go on.
void MultiPollTransport::Reactor::rebuild(CURLMcode code)
{
  KVIKIO_LOG_ERROR("multi-poll reactor: ", curl_multi_strerror(code), "; rebuilding its handle");
  auto const error = std::make_exception_ptr(
    std::runtime_error(std::string{"KvikIO: the multi-poll reactor's libcurl handle failed: "} +
                       curl_multi_strerror(code)));
  for (auto& t : active_) {
    if (t->state == Transfer::State::running) {
      curl_multi_remove_handle(multi_, t->curl->get());
      t->end(error);
    }
  }
  running_           = 0;
  CURLM* const fresh = new_multi();
  waker_->set(fresh);
  curl_multi_cleanup(multi_);
  multi_ = fresh;
}

int MultiPollTransport::Reactor::poll_timeout_ms(Clock::time_point now) const
{
  // libcurl's sockets, submissions and the host functions behind the copies that paused and
  // draining transfers wait for (CopyWaker) wake the poll; the timeout is for retries, and a
  // safety net.
  int timeout = 1000;
  for (auto const& t : active_) {
    if (t->state == Transfer::State::waiting_retry) {
      auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(t->retry_at - now);
      timeout         = std::clamp(static_cast<int>(left.count()) + 1, 1, timeout);
    }
  }
  return timeout;
}

void MultiPollTransport::Reactor::run()
{
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

    int still_running    = 0;
    CURLMcode const code = curl_multi_perform(multi_, &still_running);
    if (code != CURLM_OK) { rebuild(code); }
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
    // Resume paused transfers whose next slot is free; end those whose copies are done.
    for (auto& t : active_) {
      try {
        if (t->state == Transfer::State::running && t->sink->paused() &&
            t->sink->ready_to_resume()) {
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
        if (t->state == Transfer::State::draining && t->sink->copies_done()) { t->end(nullptr); }
      } catch (...) {
        if (t->state == Transfer::State::running) {
          curl_multi_remove_handle(multi_, t->curl->get());
          --running_;
        }
        t->end(std::current_exception());
      }
    }
    std::erase_if(active_, [](auto const& t) { return t->state == Transfer::State::ended; });

    // Retries whose backoff is over go first, then this reactor's own transfers, then shared
    // ones, up to the limit. What starts now is driven by the next curl_multi_perform, after a
    // poll that does not wait.
    auto const now            = Clock::now();
    std::size_t const running = running_;
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
    std::erase_if(active_, [](auto const& t) { return t->state == Transfer::State::ended; });
    int const timeout      = running_ > running ? 0 : poll_timeout_ms(now);
    CURLMcode const polled = curl_multi_poll(multi_, nullptr, 0, timeout, nullptr);
    if (polled != CURLM_OK) { rebuild(polled); }
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
