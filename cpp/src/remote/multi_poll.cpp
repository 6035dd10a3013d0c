/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/multi_poll.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <curl/curl.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/curl.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/nvtx.hpp>

#include "range_request.hpp"
#include "sink.hpp"

namespace kvikio::detail {
namespace {

using Clock = std::chrono::steady_clock;

/// What one pread waits for: its chunks report in; the first error wins once all have ended,
/// so no chunk still writes into the caller's buffer when the future is ready.
class PreadCompletion {
 public:
  PreadCompletion(std::size_t chunks, std::size_t total, std::shared_ptr<void> lease)
    : remaining_{chunks}, total_{total}, lease_{std::move(lease)}
  {
  }
  std::future<std::size_t> future() { return promise_.get_future(); }
  void chunk_ended(std::exception_ptr error) noexcept
  {
    std::lock_guard const lock{mutex_};
    if (error && !error_) { error_ = std::move(error); }
    if (--remaining_ > 0) { return; }
    lease_.reset();  // no chunk uses the endpoint any more
    if (error_) {
      promise_.set_exception(error_);
    } else {
      promise_.set_value(total_);
    }
  }

 private:
  std::mutex mutex_;
  std::size_t remaining_;
  std::size_t total_;
  std::exception_ptr error_;
  std::shared_ptr<void> lease_;  // the caller's lease on the endpoint (detail/in_flight.hpp)
  std::promise<std::size_t> promise_;
};

/// One chunk of a pread, as its reactor drives it.
struct Transfer {
  enum class State { queued, running, waiting_retry, draining, ended };

  Transfer(RemoteEndpoint& endpoint_,
           std::byte* dst_,
           std::size_t size_,
           std::size_t file_offset_,
           CUcontext device_context_,
           std::shared_ptr<PreadCompletion> completion_)
    : endpoint{endpoint_},
      dst{dst_},
      size{size_},
      file_offset{file_offset_},
      device_context{device_context_},
      completion{std::move(completion_)}
  {
  }

  RemoteEndpoint& endpoint;
  std::byte* dst;
  std::size_t size;
  std::size_t file_offset;
  CUcontext device_context;
  std::shared_ptr<PreadCompletion> completion;
  State state{State::queued};
  Clock::time_point retry_at{};
  // From the start of the first attempt (a device sink pins memory from the first byte of the
  // body until the transfer ends):
  std::optional<RemoteSink> sink;
  std::optional<RangeRequest> request;
  std::optional<CurlHandle> curl;  // a fresh easy handle per attempt

  /// Reports the end of this chunk, after its copies: the sink waits for them when destroyed.
  void end(std::exception_ptr error) noexcept
  {
    curl.reset();
    request.reset();
    sink.reset();
    state = State::ended;
    completion->chunk_ended(std::move(error));
  }
};

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

}  // namespace

/**
 * The PER_CHUNK chunks not started yet, in pread order. Every reactor whose index is below the
 * current reactor count takes from here whenever it has room, so the load follows how fast each
 * reactor's connections are (nginx, for one, serves connections of one worker process together).
 */
class MultiPollTransport::SharedChunks {
 public:
  void push(std::vector<std::unique_ptr<Transfer>> chunks, std::size_t takers)
  {
    std::lock_guard const lock{mutex_};
    for (auto& c : chunks) {
      chunks_.push_back(std::move(c));
    }
    takers_ = takers;
  }

  /// Moves up to `n` chunks into `into`, if reactor `index` is one of those that take.
  void take(std::size_t index, std::size_t n, std::deque<std::unique_ptr<Transfer>>& into)
  {
    std::lock_guard const lock{mutex_};
    if (index >= takers_) { return; }
    for (; n > 0 && !chunks_.empty(); --n) {
      into.push_back(std::move(chunks_.front()));
      chunks_.pop_front();
    }
  }

  /// Ends every chunk still here with `error` (the reactors that would take them have stopped).
  void fail_all(std::exception_ptr const& error)
  {
    std::lock_guard const lock{mutex_};
    for (auto& c : chunks_) {
      c->end(error);
    }
    chunks_.clear();
  }

 private:
  std::mutex mutex_;
  std::deque<std::unique_ptr<Transfer>> chunks_;  // guarded by mutex_
  std::size_t takers_{0};                         // guarded by mutex_
};

namespace {
/// The error of every chunk that a stopping transport still held.
std::exception_ptr shut_down_error()
{
  return std::make_exception_ptr(
    std::runtime_error("KvikIO: the multi-poll transport shut down before this read finished"));
}
}  // namespace

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
      waker_{std::make_shared<MultiWaker>(multi_)},
      thread_{[this] { run(); }}
  {
  }
  ~Reactor() { stop(); }
  Reactor(Reactor const&)            = delete;
  Reactor& operator=(Reactor const&) = delete;

  /// Queues `transfers` (none: look at the shared chunks) and sets the in-flight limit the
  /// reactor applies from now on.
  void submit(std::vector<std::unique_ptr<Transfer>> transfers, std::size_t max_in_flight)
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
  void start(Transfer& t);
  void judge(Transfer& t, CURLcode code);
  void rebuild(CURLMcode code);
  [[nodiscard]] int poll_timeout_ms(Clock::time_point now) const;

  std::size_t const index_;               // the reactor's place in the transport
  std::shared_ptr<SharedChunks> shared_;  // where PER_CHUNK chunks wait
  std::atomic<std::size_t>& resumed_;     // the transport's count of resumed transfers
  std::mutex mutex_;
  std::deque<std::unique_ptr<Transfer>> queue_;  // guarded by mutex_
  std::size_t max_in_flight_{8};                 // guarded by mutex_
  bool stopping_{false};                         // guarded by mutex_
  CURLM* multi_;  // used by the reactor thread; others wake it through waker_
  std::shared_ptr<MultiWaker> waker_;
  // Reactor thread only:
  std::deque<std::unique_ptr<Transfer>> waiting_;  // not started yet: own first, then shared
  std::vector<std::unique_ptr<Transfer>> active_;  // started and not ended
  std::size_t running_{0};                         // attached to multi_
  std::thread thread_;                             // last: starts once the rest exists
};

void MultiPollTransport::Reactor::start(Transfer& t)
{
  try {
    if (!t.sink) {
      t.sink.emplace(t.dst, t.size, t.device_context);
      t.sink->set_nonblocking(waker_);
      t.request.emplace(t.endpoint, *t.sink, t.file_offset, t.size);
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

MultiPollTransport& MultiPollTransport::instance()
{
  // Destroyed at exit, before the settings and pools it uses (they are created before it).
  static MultiPollTransport transport;
  return transport;
}

MultiPollTransport::MultiPollTransport() : shared_{std::make_shared<SharedChunks>()} {}

MultiPollTransport::~MultiPollTransport() { shutdown(); }

void MultiPollTransport::shutdown() noexcept
{
  // The shared chunks go with the reactors that take them: a pread after this point starts new
  // reactors with a queue of their own, which this shutdown never fails.
  std::vector<std::unique_ptr<Reactor>> reactors;
  std::shared_ptr<SharedChunks> shared;
  {
    std::lock_guard const lock{mutex_};
    reactors.swap(reactors_);
    shared = std::exchange(shared_, std::make_shared<SharedChunks>());
  }
  shared->fail_all(shut_down_error());  // first: the stopping reactors start none of them
  for (auto& r : reactors) {
    r->stop();
  }
}

std::size_t MultiPollTransport::num_reactors() const
{
  std::lock_guard const lock{mutex_};
  return reactors_.size();
}

std::future<std::size_t> MultiPollTransport::pread(RemoteEndpoint& endpoint,
                                                   std::byte* buf,
                                                   std::size_t size,
                                                   std::size_t file_offset,
                                                   std::size_t task_size,
                                                   CUcontext device_context,
                                                   std::shared_ptr<void> lease)
{
  KVIKIO_NVTX_FUNC_RANGE();
  std::size_t const chunks     = (size + task_size - 1) / task_size;
  auto completion              = std::make_shared<PreadCompletion>(chunks, size, std::move(lease));
  auto future                  = completion->future();
  std::size_t const n_reactors = defaults::remote_io_num_reactors();
  std::size_t const total      = defaults::remote_io_max_concurrent_requests();
  std::size_t const max_in_flight =
    total > 0 ? std::max<std::size_t>(total / n_reactors, 1) : defaults::remote_max_connections();
  // PER_PREAD keeps the chunks of this pread on one reactor (its connections are reused).
  bool const per_pread = defaults::remote_io_reactor_dispatch() == RemoteReactorDispatch::PER_PREAD;

  std::vector<std::unique_ptr<Transfer>> transfers;
  transfers.reserve(chunks);
  for (std::size_t i = 0; i < chunks; ++i) {
    std::size_t const offset = i * task_size;
    transfers.push_back(std::make_unique<Transfer>(endpoint,
                                                   buf + offset,
                                                   std::min(task_size, size - offset),
                                                   file_offset + offset,
                                                   device_context,
                                                   completion));
  }
  std::lock_guard const lock{mutex_};
  while (reactors_.size() < n_reactors) {
    reactors_.push_back(std::make_unique<Reactor>(reactors_.size(), shared_, resumed_));
  }
  if (per_pread) {
    reactors_[next_reactor_ % n_reactors]->submit(std::move(transfers), max_in_flight);
    next_reactor_ = (next_reactor_ + 1) % n_reactors;
    return future;
  }
  shared_->push(std::move(transfers), n_reactors);
  for (std::size_t r = 0; r < n_reactors; ++r) {
    reactors_[r]->submit({}, max_in_flight);
  }
  return future;
}

}  // namespace kvikio::detail
