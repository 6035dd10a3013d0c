/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include <kvikio/detail/observation_recorder.hpp>

namespace kvikio::detail {

/**
 * The promise of one call's result, and the call's observation: fulfilling it finishes the
 * observation first, so that a monitor hears of the end (on the thread that ends the call)
 * before the caller's future is ready. Without a recorder (no monitor was registered at the
 * call) it is a plain promise. Moving it never throws, as a promise's.
 */
class ObservedPromise {
 public:
  ObservedPromise() = default;
  explicit ObservedPromise(std::shared_ptr<LogicalObservationRecorder> recorder) noexcept
    : recorder_{std::move(recorder)}
  {
  }

  [[nodiscard]] std::future<std::size_t> get_future() { return promise_.get_future(); }

  void set_value(std::size_t bytes)
  {
    if (recorder_) { recorder_->finish(bytes); }
    promise_.set_value(bytes);
  }

  void set_exception(std::exception_ptr error)
  {
    if (recorder_) { recorder_->finish_with_failure(); }
    promise_.set_exception(std::move(error));
  }

 private:
  std::promise<std::size_t> promise_;
  std::shared_ptr<LogicalObservationRecorder> recorder_;
};

/// One call's observation shared with the tasks that finish it, or null when no monitor is
/// registered (the unobserved call allocates nothing). `source` is the handle's own string,
/// shared so that it outlives the observation.
inline std::shared_ptr<LogicalObservationRecorder> observe_call(
  IoBackend backend,
  TransferDirection direction,
  MemoryKind memory_kind,
  std::size_t offset,
  std::size_t size,
  std::shared_ptr<std::string const> source,
  char const* http_method = nullptr)
{
  if (!monitoring_enabled()) { return nullptr; }
  return std::make_shared<LogicalObservationRecorder>(
    backend, direction, memory_kind, offset, size, std::move(source), http_method);
}

/// `on_done` of a stream-ordered operation (bytes moved, or its error), finishing the
/// operation's observation first when it has one.
inline std::function<void(ssize_t, std::exception_ptr)> finishing_observation(
  std::shared_ptr<LogicalObservationRecorder> recorder,
  std::function<void(ssize_t, std::exception_ptr)> on_done)
{
  if (!recorder) { return on_done; }
  return [recorder = std::move(recorder), on_done = std::move(on_done)](ssize_t bytes,
                                                                        std::exception_ptr error) {
    if (error || bytes < 0) {
      recorder->finish_with_failure();
    } else {
      recorder->finish(static_cast<std::size_t>(bytes));
    }
    on_done(bytes, std::move(error));
  };
}

/// @brief A transfer done on the calling thread: its result, or its error, in a ready future
/// (observed by `recorder`, if any), as a pool task's would be.
template <typename Transfer>
std::future<std::size_t> done_here(Transfer&& transfer,
                                   std::shared_ptr<LogicalObservationRecorder> recorder)
{
  ObservedPromise done{std::move(recorder)};
  try {
    done.set_value(transfer());
  } catch (...) {
    done.set_exception(std::current_exception());
  }
  return done.get_future();
}

}  // namespace kvikio::detail
