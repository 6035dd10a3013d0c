/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/parallel_operation.hpp>

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>

#include "core/observed_promise.hpp"

namespace kvikio {
namespace {

// Shared by the tasks of one call, with the operation they run; the last task to finish makes
// the future ready.
template <typename Operation>
struct Gather {
  explicit Gather(std::shared_ptr<detail::LogicalObservationRecorder> recorder)
    : promise{std::move(recorder)}
  {
  }
  Operation op;
  detail::ObservedPromise promise;
  std::atomic<std::size_t> remaining{0};
  std::atomic<std::size_t> total{0};
  std::mutex mutex;
  std::exception_ptr first_error;

  template <typename... Args>
  void run(Args... args) noexcept
  {
    try {
      KVIKIO_NVTX_SCOPED_RANGE("task");
      total += op(args...);
    } catch (...) {
      std::lock_guard const lock{mutex};
      if (!first_error) { first_error = std::current_exception(); }
    }
    if (--remaining == 0) {
      if (first_error) {
        promise.set_exception(first_error);
      } else {
        promise.set_value(total.load());
      }
    }
  }
};

// One task, whose future holds only its result: the operation (and the lease on the handle it
// holds) is freed with the task. (A packaged_task's future would keep the operation alive while
// the caller keeps the future, and closing the handle would wait for that.)
template <typename F>
std::future<std::size_t> submit_one(ThreadPool* pool,
                                    F fn,
                                    std::shared_ptr<detail::LogicalObservationRecorder> recorder)
{
  detail::ObservedPromise promise{std::move(recorder)};
  auto future = promise.get_future();
  pool->detach_task([fn = std::move(fn), promise = std::move(promise)]() mutable {
    try {
      KVIKIO_NVTX_SCOPED_RANGE("task");
      promise.set_value(fn());
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  });
  return future;
}

}  // namespace

std::future<std::size_t> parallel_io(ChunkOperation op,
                                     std::size_t size,
                                     std::size_t file_offset,
                                     std::size_t task_size,
                                     ThreadPool* pool,
                                     std::size_t alignment,
                                     std::shared_ptr<detail::LogicalObservationRecorder> recorder)
{
  KVIKIO_EXPECT(
    task_size > 0, "`task_size` must be positive (parallel_io got 0)", std::invalid_argument);
  KVIKIO_EXPECT(pool != nullptr, "The thread pool must not be nullptr (parallel_io)");
  if (size == 0) {
    if (recorder) { recorder->finish(0); }
    return make_ready_future<std::size_t>(0);
  }

  // Chunk boundaries: [0, first), then task_size steps.
  std::size_t first = std::min(size, task_size);
  if (alignment > 0 && file_offset % alignment != 0 && task_size > file_offset % alignment) {
    first = std::min(size, task_size - file_offset % alignment);
  }
  std::size_t const tasks = 1 + (size - first + task_size - 1) / task_size;
  if (tasks == 1) {  // the task's own future: nothing to gather
    return submit_one(
      pool,
      [op = std::move(op), size, file_offset] { return op(0, size, file_offset); },
      std::move(recorder));
  }

  auto gather       = std::make_shared<Gather<ChunkOperation>>(std::move(recorder));
  gather->op        = std::move(op);
  gather->remaining = tasks;
  auto future       = gather->promise.get_future();
  std::size_t begin = 0;
  for (std::size_t i = 0; i < tasks; ++i) {
    std::size_t const n = i == 0 ? first : std::min(task_size, size - begin);
    (void)pool->submit_task(
      [gather, begin, n, file_offset] { gather->run(begin, n, file_offset + begin); });
    begin += n;
  }
  return future;
}

namespace detail {

std::future<std::size_t> parallel_workers(std::function<std::size_t()> work,
                                          std::size_t workers,
                                          ThreadPool* pool,
                                          std::shared_ptr<LogicalObservationRecorder> recorder)
{
  KVIKIO_EXPECT(pool != nullptr, "The thread pool must not be nullptr (parallel_workers)");
  if (workers == 0) {
    if (recorder) { recorder->finish(0); }
    return make_ready_future<std::size_t>(0);
  }
  if (workers == 1) {  // the task's own future: nothing to gather
    return submit_one(pool, std::move(work), std::move(recorder));
  }
  auto gather       = std::make_shared<Gather<std::function<std::size_t()>>>(std::move(recorder));
  gather->op        = std::move(work);
  gather->remaining = workers;
  auto future       = gather->promise.get_future();
  for (std::size_t i = 0; i < workers; ++i) {
    (void)pool->submit_task([gather] { gather->run(); });
  }
  return future;
}

}  // namespace detail

}  // namespace kvikio
