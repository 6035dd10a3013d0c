/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file threadpool_wrapper.hpp
 * @brief `kvikio::ThreadPool`: a fixed-size FIFO pool of worker threads.
 */

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace kvikio {

class ThreadPool;
namespace detail {
/// @brief Queues a task that may overlap its worker's leftovers (detail/worker_leftovers.hpp).
void detach_overlapping_job(ThreadPool& pool, std::function<void()> job);
/// @brief make_thread_pool_init_task(`prefix`), never destroyed: for threads that may start
/// while the process exits (each kind of thread keeps one in a function-local static).
[[nodiscard]] std::function<void()> const& lasting_thread_namer(std::string prefix);
}  // namespace detail

/**
 * @brief A task that names the thread it runs on "<prefix>-<N>" (`top -H`, `ps -L`, Nsight and
 * py-spy show it), N counting from 0 over the threads this task named; for a ThreadPool's
 * `init_task`. Linux keeps 15 characters of a name: keep `prefix` to 10 or fewer. Never throws
 * when run: a name that cannot be set is left as it was.
 */
[[nodiscard]] std::function<void()> make_thread_pool_init_task(std::string prefix);

/**
 * @brief A fixed number of threads running submitted tasks in submission order.
 *
 * Tasks may submit further tasks. A task's exception reaches whoever waits on its future.
 * The destructor runs every task already submitted, then joins the threads.
 */
class ThreadPool {
 public:
  /**
   * @brief Starts `nthreads` workers.
   * @throws std::invalid_argument if `nthreads` is 0.
   */
  explicit ThreadPool(unsigned int nthreads = 1);
  /**
   * @brief Starts `nthreads` workers, each running `init_task` first (and so does every worker
   * a later reset() starts), as `BS::thread_pool`'s constructor does; see
   * make_thread_pool_init_task(). An exception `init_task` throws is ignored.
   * @throws std::invalid_argument if `nthreads` is 0.
   */
  ThreadPool(unsigned int nthreads, std::function<void()> init_task);
  ~ThreadPool();

  ThreadPool(ThreadPool const&)            = delete;
  ThreadPool& operator=(ThreadPool const&) = delete;

  /**
   * @brief Queues `task` and returns the future of its result.
   */
  template <typename F>
  [[nodiscard]] std::future<std::invoke_result_t<std::decay_t<F>>> submit_task(F&& task)
  {
    using R      = std::invoke_result_t<std::decay_t<F>>;
    auto wrapped = std::make_shared<std::packaged_task<R()>>(std::forward<F>(task));
    auto future  = wrapped->get_future();
    enqueue([wrapped] { (*wrapped)(); });
    return future;
  }

  /**
   * @brief Queues `task` (any callable, move-only ones too) without a future
   * (`BS::thread_pool`'s call); an exception it throws is logged, not propagated.
   */
  template <typename F>
  void detach_task(F&& task)
  {
    // std::function needs a copyable target: a shared holder makes any callable one.
    auto held = std::make_shared<std::decay_t<F>>(std::forward<F>(task));
    detach_job([held] { (*held)(); });
  }

  /// @brief Number of worker threads.
  [[nodiscard]] unsigned int get_thread_count() const noexcept;

  /// @brief Tasks queued and not started yet.
  [[nodiscard]] std::size_t get_tasks_queued() const;
  /// @brief Tasks running now.
  [[nodiscard]] std::size_t get_tasks_running() const;
  /// @brief Tasks queued or running.
  [[nodiscard]] std::size_t get_tasks_total() const;

  /// @brief Whether at least as many tasks wait in the queue as the pool has threads, so that a
  /// task submitted now would wait behind a whole round of work. Read without the pool's lock:
  /// a hint for choosing where to run work, possibly stale by the time it is used.
  [[nodiscard]] bool is_backlogged() const noexcept;

  /**
   * @brief Waits until every submitted task has finished, then runs `nthreads` workers.
   * @throws std::invalid_argument if `nthreads` is 0.
   * @throws std::logic_error if called from one of this pool's tasks (it would wait for itself).
   * @throws std::system_error if the threads cannot be started (`EAGAIN`: a limit on threads or
   * memory); the pool then keeps the size it had. While the reset runs, get_thread_count() still
   * reports that size, and tasks submitted meanwhile run once the new threads start.
   */
  void reset(unsigned int nthreads);
  /// @brief reset(), with `init_task` run first by every worker started from now on.
  void reset(unsigned int nthreads, std::function<void()> init_task);

  /**
   * @brief Blocks until the queue is empty and no task is running.
   * @throws std::logic_error if called from one of this pool's tasks.
   */
  void wait();

  /// @brief Whether the calling thread is one of this pool's workers.
  [[nodiscard]] bool is_worker_thread() const noexcept;

 private:
  friend void detail::detach_overlapping_job(ThreadPool& pool, std::function<void()> job);
  struct Job {
    std::function<void()> run;
    // May start while leftovers of earlier tasks are pending (detail/worker_leftovers.hpp).
    bool overlaps_leftovers{false};
  };
  // The queue, its lock and the threads (thread_pool.cpp). Behind a pointer so that a child of
  // fork() can leave its parent's copy behind (its lock may have been held, its threads do not
  // exist there) and start afresh.
  struct State;
  void enqueue(std::function<void()> job, bool overlaps_leftovers = false);
  void detach_job(std::function<void()> job, bool overlaps_leftovers = false);
  void start(unsigned int nthreads);
  void start_locked(State& state, unsigned int nthreads);
  void stop_and_join();
  // reset()'s body; `init_task`, if given, replaces init_task_ for the threads it starts.
  void resize(unsigned int nthreads, std::function<void()>* init_task);
  void release() noexcept;  // stops, joins, leaves the registry of pools, frees the state
  void worker_loop(State& state);
  // In a child of fork(), for every pool of the process (registered by the constructor).
  static void start_afresh_after_fork() noexcept;
  // pthread_atfork's handlers, registered when the library loads.
  static int const fork_handlers_registered;

  State* state_;
  // Run first by every worker as it starts (its name); copied into each thread at its start.
  std::function<void()> init_task_;
  // The size the pool was last given, once its threads all started: never 0, never a size a
  // resize is still reaching (or failed to reach). Read without the lock.
  std::atomic<unsigned int> thread_count_{0};
  // Counts the tasks ever queued: an idle worker watches it, without the lock, before it sleeps.
  std::atomic<std::size_t> jobs_posted_{0};
  // Counts the tasks ever taken from the queue (is_backlogged()).
  std::atomic<std::size_t> jobs_started_{0};
};

}  // namespace kvikio
