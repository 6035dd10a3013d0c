/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/threadpool_wrapper.hpp>

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>

#include "core/threadpool_internals.hpp"
#include "core/worker_leftovers.hpp"

namespace kvikio {
namespace {
// The pool whose worker is running on this thread, if any.
thread_local ThreadPool const* current_pool{nullptr};
// What this worker's tasks left for it to finish (detail/worker_leftovers.hpp), if anything.
thread_local detail::WorkerLeftovers* worker_leftovers{nullptr};
// Set by the task that ran last on this thread (detail::no_idle_spin_after_this_task()).
thread_local bool skip_idle_spin{false};

// How long a worker that ran out of work keeps looking for more before it sleeps. A sleeping
// worker takes tens of microseconds to wake on a GPU server (C-states, the futex round trip),
// as long as a small read itself; a caller that keeps a few reads in flight, waits, and asks for
// the next few finds its worker awake. The price is at most this much of a core per worker each
// time its queue runs dry, paid only while the pools leave half the cores to others
// (detail::at_most_half_the_cores()).
constexpr auto idle_spin = std::chrono::microseconds{50};

void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void check_thread_count(unsigned int nthreads)
{
  if (nthreads == 0) {
    throw std::invalid_argument("ThreadPool: the number of threads must be positive, got 0");
  }
}

// Every pool of the process, so that a child of fork() can give each one a fresh state. Its lock
// is taken around fork() (pthread_atfork), so the child finds the set whole and the lock free.
struct LivePools {
  std::mutex mutex;
  std::set<ThreadPool*> pools;
};
// The threads of every pool alive (threads_of_live_pools()): read on the I/O path, so kept as
// one number rather than summed over the registry under its lock.
std::atomic<std::size_t> live_threads{0};

LivePools& live_pools()
{
  static detail::BuiltOnce<LivePools> live;  // never destroyed: pools may outlive static objects
  return live.get([] { return new LivePools(); });
}
}  // namespace

int const ThreadPool::fork_handlers_registered =
  ::pthread_atfork([] { live_pools().mutex.lock(); },
                   [] { live_pools().mutex.unlock(); },
                   [] {
                     start_afresh_after_fork();
                     live_pools().mutex.unlock();
                   });

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable job_available;
  std::condition_variable idle;
  std::deque<Job> jobs;
  std::size_t running{0};
  bool stopping{false};
  std::vector<std::thread> threads;
  // In a child of fork(): the threads to start with the first task, so that a child that only
  // execs (subprocess) starts none.
  unsigned int threads_to_start{0};
  std::mutex reset_mutex;  // serialises reset() against itself
};

ThreadPool::ThreadPool(unsigned int nthreads, std::function<void()> init_task)
  : init_task_{std::move(init_task)}
{
  check_thread_count(nthreads);
  state_ = new State();
  {
    std::lock_guard const lock{live_pools().mutex};
    live_pools().pools.insert(this);
  }
  try {
    start(nthreads);
  } catch (...) {
    release();  // with the threads that did start
    throw;
  }
}

ThreadPool::ThreadPool(unsigned int nthreads) : ThreadPool(nthreads, {}) {}

ThreadPool::~ThreadPool() { release(); }

void ThreadPool::release() noexcept
{
  stop_and_join();
  live_threads.fetch_sub(thread_count_.exchange(0));
  {
    std::lock_guard const lock{live_pools().mutex};
    live_pools().pools.erase(this);
  }
  delete state_;
}

void ThreadPool::start_afresh_after_fork() noexcept
{
  // The forking thread may have been a worker: in the child it is the main thread of no pool.
  current_pool     = nullptr;
  worker_leftovers = nullptr;
  for (ThreadPool* pool : live_pools().pools) {
    // The parent's state stays behind, never freed: its lock may have been held at the fork, and
    // its threads and their tasks (the parent's operations) do not exist here.
    pool->state_                   = new State();
    pool->state_->threads_to_start = pool->thread_count_.load();
    pool->jobs_started_            = pool->jobs_posted_.load();
  }
}

unsigned int ThreadPool::get_thread_count() const noexcept { return thread_count_.load(); }

bool ThreadPool::is_worker_thread() const noexcept { return current_pool == this; }

void ThreadPool::reset(unsigned int nthreads) { resize(nthreads, nullptr); }

void ThreadPool::reset(unsigned int nthreads, std::function<void()> init_task)
{
  resize(nthreads, &init_task);
}

void ThreadPool::resize(unsigned int nthreads, std::function<void()>* init_task)
{
  check_thread_count(nthreads);
  if (is_worker_thread()) {
    throw std::logic_error("ThreadPool::reset() called from one of the pool's own tasks");
  }
  std::lock_guard const reset_lock{state_->reset_mutex};
  unsigned int const before = thread_count_.load();
  stop_and_join();
  // Read by start_locked() under the state's lock, which a first task after fork() takes too.
  auto const set_init_task = [this](std::function<void()>& task) {
    std::lock_guard const lock{state_->mutex};
    std::swap(init_task_, task);
  };
  if (init_task != nullptr) { set_init_task(*init_task); }  // *init_task: the one replaced
  try {
    start(nthreads);
  } catch (std::system_error const& e) {
    // The pool keeps the size and set-up it had: a failed resize leaves nothing half done.
    stop_and_join();
    if (init_task != nullptr) { set_init_task(*init_task); }
    start(before);
    throw std::system_error(e.code(),
                            "ThreadPool::reset(" + std::to_string(nthreads) +
                              "): could not start " + std::to_string(nthreads) +
                              " threads; the pool keeps its " + std::to_string(before));
  }
}

void ThreadPool::wait()
{
  if (is_worker_thread()) {
    throw std::logic_error("ThreadPool::wait() called from one of the pool's own tasks");
  }
  State& state = *state_;
  std::unique_lock lock{state.mutex};
  state.idle.wait(lock, [&state] { return state.jobs.empty() && state.running == 0; });
}

void ThreadPool::detach_job(std::function<void()> job, bool overlaps_leftovers)
{
  enqueue(
    [job = std::move(job)] {
      try {
        job();
      } catch (std::exception const& e) {
        KVIKIO_LOG_ERROR("a detached task of the thread pool failed: ", e.what());
      } catch (...) {
        KVIKIO_LOG_ERROR("a detached task of the thread pool failed with an unknown exception");
      }
    },
    overlaps_leftovers);
}

std::size_t ThreadPool::get_tasks_queued() const
{
  std::lock_guard const lock{state_->mutex};
  return state_->jobs.size();
}

std::size_t ThreadPool::get_tasks_running() const
{
  std::lock_guard const lock{state_->mutex};
  return state_->running;
}

std::size_t ThreadPool::get_tasks_total() const
{
  std::lock_guard const lock{state_->mutex};
  return state_->jobs.size() + state_->running;
}

bool ThreadPool::is_backlogged() const noexcept
{
  // Two relaxed counters, read without the lock: a task is counted as posted after it was
  // queued, so it may be seen started and not yet posted (the signed difference then reads as
  // none queued). The answer is a hint and may be off by the tasks moving meanwhile.
  std::size_t const started = jobs_started_.load(std::memory_order_relaxed);
  std::size_t const posted  = jobs_posted_.load(std::memory_order_relaxed);
  auto const queued         = static_cast<std::ptrdiff_t>(posted - started);
  return queued > 0 && static_cast<std::size_t>(queued) >= thread_count_.load();
}

void ThreadPool::enqueue(std::function<void()> job, bool overlaps_leftovers)
{
  State& state = *state_;
  {
    std::lock_guard const lock{state.mutex};
    if (state.threads_to_start > 0) {
      start_locked(state, state.threads_to_start);
      state.threads_to_start = 0;
    }
    state.jobs.push_back(Job{std::move(job), overlaps_leftovers});
  }
  // Outside the lock: a spinning worker that sees it takes the lock at once, without waiting for
  // this thread to let go of it.
  jobs_posted_.fetch_add(1, std::memory_order_relaxed);
  state.job_available.notify_one();
}

void ThreadPool::start(unsigned int nthreads)
{
  {
    std::lock_guard const lock{state_->mutex};
    state_->stopping         = false;
    state_->threads_to_start = 0;
    start_locked(*state_, nthreads);
  }
  // Only once they all run: while a resize is under way the pool reports the size it had.
  live_threads.fetch_add(nthreads);
  live_threads.fetch_sub(thread_count_.exchange(nthreads));
}

void ThreadPool::start_locked(State& state, unsigned int nthreads)
{
  state.threads.reserve(state.threads.size() + nthreads);
  for (unsigned int i = 0; i < nthreads; ++i) {
    try {
      state.threads.emplace_back([this, &state, init = init_task_] {
        if (init) {
          try {
            init();
          } catch (...) {  // a name or other set-up is no reason to lose a worker
          }
        }
        worker_loop(state);
      });
    } catch (std::system_error const& e) {
      throw std::system_error(e.code(),
                              "ThreadPool: could not start thread " + std::to_string(i + 1) +
                                " of " + std::to_string(nthreads) +
                                " (a limit on threads or memory: ulimit -u, the cgroup's "
                                "pids.max; KVIKIO_NTHREADS sets the pool's size)");
    }
  }
}

void ThreadPool::stop_and_join()
{
  State& state = *state_;
  std::vector<std::thread> threads;
  {
    std::lock_guard const lock{state.mutex};
    // Workers leave only once the queue is empty and no task is running (a running task may
    // still submit more), so everything submitted before this call runs to completion.
    state.stopping         = true;
    state.threads_to_start = 0;
    threads.swap(state.threads);
  }
  state.job_available.notify_all();
  for (auto& t : threads) {
    t.join();
  }
}

void ThreadPool::worker_loop(State& state)
{
  current_pool = this;
  std::unique_lock lock{state.mutex};
  while (true) {
    if (state.jobs.empty() && worker_leftovers != nullptr) {
      // Nothing to run next: poll what earlier tasks left (their futures are waited for) until
      // it is done or new work comes; a stopping pool finishes it.
      bool const stopping = state.stopping;
      bool left           = false;
      lock.unlock();
      if (stopping) {
        worker_leftovers->finish();
      } else if ((left = worker_leftovers->progress(false))) {
        std::this_thread::yield();
      }
      lock.lock();
      // Checked and waited on under one hold of the lock: work that another worker takes in
      // between never sends this one to sleep with its leftovers pending.
      if (left && state.jobs.empty()) { continue; }
    }
    bool const may_spin = !skip_idle_spin;
    skip_idle_spin      = false;
    if (may_spin && state.jobs.empty() && !state.stopping &&
        detail::at_most_half_the_cores(detail::threads_of_live_pools(), detail::machine_cores())) {
      std::size_t const seen = jobs_posted_.load(std::memory_order_relaxed);
      lock.unlock();
      auto const until = std::chrono::steady_clock::now() + idle_spin;
      while (jobs_posted_.load(std::memory_order_relaxed) == seen &&
             std::chrono::steady_clock::now() < until) {
        cpu_relax();
      }
      lock.lock();
    }
    state.job_available.wait(
      lock, [&state] { return !state.jobs.empty() || (state.stopping && state.running == 0); });
    if (state.jobs.empty()) { break; }  // stopping, and nothing left that could submit more
    {
      auto job = std::move(state.jobs.front());
      state.jobs.pop_front();
      jobs_started_.fetch_add(1, std::memory_order_relaxed);
      ++state.running;
      lock.unlock();
      if (worker_leftovers != nullptr) {
        // A task of another kind may wait for a future the leftovers hold: they end first.
        if (job.overlaps_leftovers) {
          worker_leftovers->progress(true);
        } else {
          worker_leftovers->finish();
        }
      }
      job.run();  // a packaged_task: exceptions go to its future
    }  // the job and what it holds (an operation's state, its lease) freed outside the lock
    lock.lock();
    --state.running;
    if (state.jobs.empty() && state.running == 0) {
      state.idle.notify_all();
      if (state.stopping) { state.job_available.notify_all(); }  // let the other workers leave
    }
  }
  if (worker_leftovers != nullptr) { worker_leftovers->finish(); }
  current_pool = nullptr;
}

namespace detail {

bool register_worker_leftovers(WorkerLeftovers& leftovers) noexcept
{
  if (current_pool == nullptr) { return false; }
  worker_leftovers = &leftovers;
  return true;
}

void detach_overlapping_job(ThreadPool& pool, std::function<void()> job)
{
  pool.detach_job(std::move(job), true);
}

std::size_t threads_of_live_pools() { return live_threads.load(std::memory_order_relaxed); }

void no_idle_spin_after_this_task() noexcept
{
  if (current_pool != nullptr) { skip_idle_spin = true; }
}

}  // namespace detail
}  // namespace kvikio
