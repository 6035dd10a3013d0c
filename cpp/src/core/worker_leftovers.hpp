/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file core/worker_leftovers.hpp
 * @brief Work a thread pool task leaves on its worker thread when it returns, which that worker
 * finishes later.
 */

#include <functional>

namespace kvikio {
class ThreadPool;
}

namespace kvikio::detail {

/**
 * @brief What tasks left unfinished on their worker thread: copies to the device in flight, or
 * held to start together with those of the next tasks, whose futures are made ready once the
 * copies are done.
 *
 * With nothing to run, the worker polls its leftovers until they are done (taking new work as
 * soon as it comes); it finishes them, waiting, before any task that was not queued by
 * detach_overlapping_job() (such a task may wait for one of those futures) and before it
 * leaves; before a task queued by detach_overlapping_job() it only finishes what is already
 * done (progress(true)). So the leftovers of one task overlap the next task only where both are of
 * the kind that leaves them. Such a task may also join what an earlier one held back (copies
 * started together); a worker that runs out of tasks starts it.
 */
class WorkerLeftovers {
 public:
  /**
   * @brief Finishes what is already done, without waiting; returns whether anything is left.
   * @param another_task_follows Whether the worker is about to run another task of the kind that
   * leaves work: what is held back for such a task to join (copies to start together) may stay
   * held; otherwise it is started now.
   */
  virtual bool progress(bool another_task_follows) noexcept = 0;
  /// @brief Finishes everything, waiting for it.
  virtual void finish() noexcept = 0;

 protected:
  WorkerLeftovers()  = default;
  ~WorkerLeftovers() = default;

 public:
  WorkerLeftovers(WorkerLeftovers const&)            = delete;
  WorkerLeftovers& operator=(WorkerLeftovers const&) = delete;
};

/**
 * @brief Makes `leftovers` the calling thread's, for its thread pool to finish (one object per
 * thread, which must outlive the thread's worker loop).
 * @return false, registering nothing, on a thread that is not a ThreadPool worker: there the
 * caller must finish its work itself.
 */
[[nodiscard]] bool register_worker_leftovers(WorkerLeftovers& leftovers) noexcept;

/**
 * @brief Queues `job` on `pool` (as ThreadPool::detach_task: an exception it throws is logged) as
 * a task its worker may start while leftovers of earlier tasks are still pending.
 */
void detach_overlapping_job(ThreadPool& pool, std::function<void()> job);

}  // namespace kvikio::detail
