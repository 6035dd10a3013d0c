/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "parallel/stream_workers.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <kvikio/threadpool_wrapper.hpp>

#include "core/renewed_at_fork.hpp"

namespace kvikio::detail {
namespace {

class StreamWorkers;
thread_local bool this_thread_is_a_worker = false;
// The process's workers, once there are any (detached workers use them until the process ends).
RenewedAtFork<StreamWorkers> current;

class StreamWorkers {
 public:
  /// The process's workers; a child of fork() starts with none (and with no work).
  static StreamWorkers& instance() { return current.get(); }

  void add(std::shared_ptr<ReadyPieces> work, std::size_t threads)
  {
    {
      std::lock_guard const lock{mutex_};
      wanted_ = std::max(wanted_, threads);
      // The caller starts one worker at most; each new worker starts the next (a thread's start
      // costs tens of microseconds, the caller's whole call a few).
      if (workers_ < wanted_ && !starting_) {
        start_one_locked();
        starting_ = true;
      }
      work_.push_back(std::move(work));
    }
    cv_.notify_all();
  }

  std::size_t count()
  {
    std::lock_guard const lock{mutex_};
    return workers_;
  }

 private:
  struct Claim {
    std::shared_ptr<ReadyPieces> work;
    std::size_t piece;
  };

  /// A ready piece of the oldest work that has one (under mutex_); drops fully claimed work.
  std::optional<Claim> claim_locked()
  {
    for (auto it = work_.begin(); it != work_.end();) {
      auto const piece = (*it)->claim_ready();
      if (piece.has_value()) { return Claim{*it, *piece}; }
      it = (*it)->all_claimed() ? work_.erase(it) : std::next(it);
    }
    return std::nullopt;
  }

  // Under mutex_. @throws std::system_error if the thread cannot be started.
  void start_one_locked()
  {
    static auto const& name_thread = detail::lasting_thread_namer("kvikio-strm");
    std::thread{[this] {
      name_thread();
      loop();
    }}.detach();
    ++workers_;
  }

  void loop()
  {
    this_thread_is_a_worker = true;
    std::unique_lock lock{mutex_};
    starting_ = workers_ < wanted_;
    if (starting_) {
      try {
        start_one_locked();
      } catch (std::exception const&) {  // the workers there are do the work
        wanted_   = workers_;
        starting_ = false;
      }
    }
    bool polling      = false;  // this worker is the one polling for the GPU
    unsigned attempts = 0;
    auto stop_polling = [&] {
      if (polling) { polling = polling_ = false; }
      attempts = 0;
    };
    while (true) {
      if (auto claim = claim_locked()) {
        stop_polling();
        bool const more = !work_.empty();
        lock.unlock();
        if (more) { cv_.notify_one(); }  // another worker may run the next piece, or poll
        claim->work->run(claim->piece);
        claim.reset();
        lock.lock();
        continue;
      }
      if (work_.empty() || (polling_ && !polling)) {
        stop_polling();
        cv_.wait(lock);
        continue;
      }
      // Work waits for the GPU, which tells nobody when it is done: poll.
      polling = polling_ = true;
      lock.unlock();
      if (attempts++ < 1000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::list<std::shared_ptr<ReadyPieces>> work_;  // oldest first
  std::size_t workers_{0};
  std::size_t wanted_{0};  // workers asked for: the largest `threads` of add()
  bool starting_{false};   // a worker is starting, and starts the next if more are wanted
  bool polling_{false};    // a worker polls
};

// A child of fork() whose parent had workers starts its own, empty.
[[maybe_unused]] int const fork_handler_registered =
  ::pthread_atfork(nullptr, nullptr, [] { current.renew(); });

}  // namespace

void run_when_ready(std::shared_ptr<ReadyPieces> work, std::size_t threads)
{
  StreamWorkers::instance().add(std::move(work), threads);
}

std::size_t stream_worker_count() noexcept { return StreamWorkers::instance().count(); }

bool on_stream_worker() noexcept { return this_thread_is_a_worker; }

}  // namespace kvikio::detail
