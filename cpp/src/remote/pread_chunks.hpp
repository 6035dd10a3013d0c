/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <kvikio/detail/curl.hpp>

#include "core/in_flight.hpp"
#include "core/observed_promise.hpp"
#include "remote/multi_poll.hpp"
#include "remote/range_request.hpp"
#include "remote/sink.hpp"

namespace kvikio::detail {
namespace multi_poll {

using Clock = std::chrono::steady_clock;

/// What one pread waits for: its chunks report in; the first error wins once all have ended,
/// so no chunk still writes into the caller's buffer when the future is ready.
class PreadCompletion {
 public:
  PreadCompletion(std::size_t chunks,
                  std::size_t total,
                  std::shared_ptr<void> lease,
                  std::shared_ptr<LogicalObservationRecorder> recorder)
    : remaining_{chunks},
      total_{total},
      owner_{InFlight::owner_of(lease)},
      lease_{std::move(lease)},
      promise_{std::move(recorder)}
  {
  }
  /// The handle's tracker the chunks' requests watch for closing (null: none).
  [[nodiscard]] InFlight const* owner() const noexcept { return owner_; }
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
  InFlight const* owner_;
  std::shared_ptr<void> lease_;  // the caller's lease on the endpoint (detail/in_flight.hpp)
  ObservedPromise promise_;      // finishes the pread's observation, if any, first
};

/// One chunk of a pread, as its reactor drives it.
struct Transfer {
  enum class State { queued, running, waiting_retry, draining, ended };

  Transfer(RemoteEndpoint& endpoint_,
           std::size_t object_size_,
           std::byte* dst_,
           std::size_t size_,
           std::size_t file_offset_,
           CUcontext device_context_,
           std::shared_ptr<PreadCompletion> completion_)
    : endpoint{endpoint_},
      object_size{object_size_},
      dst{dst_},
      size{size_},
      file_offset{file_offset_},
      device_context{device_context_},
      completion{std::move(completion_)}
  {
  }

  RemoteEndpoint& endpoint;
  std::size_t object_size;  // as the handle was opened
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

/// The error of every chunk that a stopping transport still held.
inline std::exception_ptr shut_down_error()
{
  return std::make_exception_ptr(
    std::runtime_error("KvikIO: the multi-poll transport shut down before this read finished"));
}

}  // namespace multi_poll

/**
 * The PER_CHUNK chunks not started yet, in pread order. Every reactor whose index is below the
 * current reactor count takes from here whenever it has room, so the load follows how fast each
 * reactor's connections are (nginx, for one, serves connections of one worker process together).
 */
class MultiPollTransport::SharedChunks {
 public:
  void push(std::vector<std::unique_ptr<multi_poll::Transfer>> chunks, std::size_t takers)
  {
    std::lock_guard const lock{mutex_};
    for (auto& c : chunks) {
      chunks_.push_back(std::move(c));
    }
    takers_ = takers;
  }

  /// Moves up to `n` chunks into `into`, if reactor `index` is one of those that take, and no
  /// more than its share of those waiting (a reactor that wakes first would otherwise take all
  /// of a burst of large reads and copy them alone while the others idle).
  void take(std::size_t index,
            std::size_t n,
            std::deque<std::unique_ptr<multi_poll::Transfer>>& into)
  {
    std::lock_guard const lock{mutex_};
    if (index >= takers_) { return; }
    n = std::min(n, (chunks_.size() + takers_ - 1) / takers_);
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
  std::deque<std::unique_ptr<multi_poll::Transfer>> chunks_;  // guarded by mutex_
  std::size_t takers_{0};                                     // guarded by mutex_
};

}  // namespace kvikio::detail
