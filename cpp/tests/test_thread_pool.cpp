/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio::ThreadPool: results, exceptions, FIFO order, reset, wait, nested and concurrent
 * submission.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/threadpool_wrapper.hpp>

#include "common/thread_names.hpp"
#include "core/threadpool_internals.hpp"

using kvikio::ThreadPool;

namespace {

// An idle worker spins before it sleeps (and `auto` reads through io_uring) only while the
// process's pool threads are at most half the cores: on fewer, a spinning worker takes a core
// from the reads it waits for.
TEST(ThreadPool, IdleWorkersSpinOnlyWithCoresToSpare)
{
  EXPECT_TRUE(kvikio::detail::at_most_half_the_cores(8, 16));
  EXPECT_FALSE(kvikio::detail::at_most_half_the_cores(9, 16));
  EXPECT_FALSE(kvikio::detail::at_most_half_the_cores(16, 16));
  EXPECT_TRUE(kvikio::detail::at_most_half_the_cores(1, 2));
  EXPECT_FALSE(kvikio::detail::at_most_half_the_cores(8, 2)) << "a pool of 8 on 2 cores";
  EXPECT_FALSE(kvikio::detail::at_most_half_the_cores(1, 1));
}

TEST(ThreadPool, ReturnsResults)
{
  ThreadPool pool{4};
  std::vector<std::future<int>> futures;
  for (int i = 0; i < 100; ++i) {
    futures.push_back(pool.submit_task([i] { return i * i; }));
  }
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(futures[i].get(), i * i);
  }
}

TEST(ThreadPool, RejectsZeroThreads)
{
  EXPECT_THROW(ThreadPool{0}, std::invalid_argument);
  ThreadPool pool{1};
  EXPECT_THROW(pool.reset(0), std::invalid_argument);
  EXPECT_EQ(pool.get_thread_count(), 1U);
}

TEST(ThreadPool, PropagatesExceptions)
{
  ThreadPool pool{2};
  auto failing = pool.submit_task([]() -> int { throw std::overflow_error("task failed"); });
  auto fine    = pool.submit_task([] { return 7; });
  EXPECT_THROW(failing.get(), std::overflow_error);
  EXPECT_EQ(fine.get(), 7);  // the pool survives a failing task
}

TEST(ThreadPool, DetachedTasksRunAndAreCounted)
{
  ThreadPool pool{1};
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  std::atomic<int> ran{0};
  pool.detach_task([opened, &ran] {
    opened.wait();
    ++ran;
  });
  pool.detach_task([] { throw std::runtime_error("a detached failure"); });  // logged only
  pool.detach_task([&ran] { ++ran; });
  // The first task holds the only thread until the gate opens: two are queued behind it.
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (pool.get_tasks_running() != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(pool.get_tasks_running(), 1U);
  EXPECT_EQ(pool.get_tasks_queued(), 2U);
  EXPECT_EQ(pool.get_tasks_total(), 3U);
  gate.set_value();
  pool.wait();
  EXPECT_EQ(ran.load(), 2);  // the failing task did not stop the one after it
  EXPECT_EQ(pool.get_tasks_total(), 0U);
}

TEST(ThreadPool, DetachedTaskMayBeMoveOnly)
{
  ThreadPool pool{2};
  auto value  = std::make_unique<int>(41);
  int* seen   = nullptr;
  int result  = 0;
  auto* where = value.get();
  pool.detach_task([v = std::move(value), &seen, &result]() mutable {
    seen   = v.get();
    result = ++*v;
  });
  pool.wait();
  EXPECT_EQ(seen, where);  // the task's own unique_ptr, moved in, not a copy
  EXPECT_EQ(result, 42);
}

TEST(ThreadPool, SingleThreadRunsInSubmissionOrder)
{
  ThreadPool pool{1};
  std::vector<int> order;
  std::vector<std::future<void>> futures;
  for (int i = 0; i < 50; ++i) {
    futures.push_back(pool.submit_task([i, &order] { order.push_back(i); }));
  }
  for (auto& f : futures) {
    f.get();
  }
  std::vector<int> expected(50);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
}

TEST(ThreadPool, RunsOnAllThreads)
{
  unsigned int const n = 4;
  ThreadPool pool{n};
  // Each task waits until all n have started: only possible if n threads run them at once.
  std::atomic<unsigned int> started{0};
  std::vector<std::future<void>> futures;
  for (unsigned int i = 0; i < n; ++i) {
    futures.push_back(pool.submit_task([&started, n] {
      ++started;
      while (started.load() < n) {
        std::this_thread::yield();
      }
    }));
  }
  for (auto& f : futures) {
    f.get();
  }
  EXPECT_EQ(started.load(), n);
}

TEST(ThreadPool, ResetWhileIdleAndAfterWork)
{
  ThreadPool pool{2};
  EXPECT_EQ(pool.get_thread_count(), 2U);
  pool.reset(5);
  EXPECT_EQ(pool.get_thread_count(), 5U);
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    (void)pool.submit_task([&done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++done;
    });
  }
  pool.reset(1);  // waits for the 20 tasks
  EXPECT_EQ(done.load(), 20);
  EXPECT_EQ(pool.get_thread_count(), 1U);
  EXPECT_EQ(pool.submit_task([] { return 3; }).get(), 3);
}

TEST(ThreadPool, WaitBlocksUntilAllTasksFinish)
{
  ThreadPool pool{3};
  std::atomic<int> done{0};
  for (int i = 0; i < 30; ++i) {
    (void)pool.submit_task([&done] {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      ++done;
    });
  }
  pool.wait();
  EXPECT_EQ(done.load(), 30);
}

TEST(ThreadPool, TaskSubmitsTask)
{
  ThreadPool pool{1};
  // With one thread the inner task can only run after the outer one returns.
  auto outer = pool.submit_task([&pool] { return pool.submit_task([] { return 5; }); });
  auto inner = outer.get();
  EXPECT_EQ(inner.get(), 5);
}

TEST(ThreadPool, ResetAndWaitFromOwnTaskAreRejected)
{
  ThreadPool pool{1};
  EXPECT_THROW(pool.submit_task([&pool] { pool.reset(2); }).get(), std::logic_error);
  EXPECT_THROW(pool.submit_task([&pool] { pool.wait(); }).get(), std::logic_error);
  EXPECT_TRUE(pool.submit_task([&pool] { return pool.is_worker_thread(); }).get());
  EXPECT_FALSE(pool.is_worker_thread());
}

TEST(ThreadPool, ManyConcurrentSubmitters)
{
  ThreadPool pool{4};
  std::atomic<long> sum{0};
  std::vector<std::thread> submitters;
  for (int s = 0; s < 8; ++s) {
    submitters.emplace_back([&pool, &sum] {
      std::vector<std::future<void>> futures;
      for (int i = 1; i <= 500; ++i) {
        futures.push_back(pool.submit_task([&sum, i] { sum += i; }));
      }
      for (auto& f : futures) {
        f.get();
      }
    });
  }
  for (auto& t : submitters) {
    t.join();
  }
  EXPECT_EQ(sum.load(), 8L * 500 * 501 / 2);
}

TEST(ThreadPool, ResetWhileOthersSubmit)
{
  ThreadPool pool{2};
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  std::thread submitter{[&] {
    while (!stop) {
      pool.submit_task([&done] { ++done; }).get();
    }
  }};
  while (done.load() == 0) {  // the submitter is running
    std::this_thread::yield();
  }
  for (unsigned int n = 1; n <= 4; ++n) {
    pool.reset(n);
  }
  int const before = done.load();
  while (done.load() <= before) {  // and its tasks still complete after the resets
    std::this_thread::yield();
  }
  stop = true;
  submitter.join();
  EXPECT_EQ(pool.get_thread_count(), 4U);
}

TEST(ThreadPool, DestructorRunsQueuedTasks)
{
  std::atomic<int> done{0};
  {
    ThreadPool pool{1};
    for (int i = 0; i < 10; ++i) {
      (void)pool.submit_task([&done] { ++done; });
    }
  }
  EXPECT_EQ(done.load(), 10);
}

}  // namespace

TEST(ThreadPool, InitTaskNamesEveryWorkerAndEveryResetsWorker)
{
  ThreadPool pool{3, kvikio::make_thread_pool_init_task("tp-name")};
  pool.wait();
  auto const names = [] {
    auto all = kvikio::test::thread_names();
    std::vector<std::string> ours;
    std::copy_if(all.begin(), all.end(), std::back_inserter(ours), [](auto const& n) {
      return n.rfind("tp-name-", 0) == 0;
    });
    std::sort(ours.begin(), ours.end());
    return ours;
  };
  // Each worker names itself as it starts: wait until all three have.
  for (int i = 0; i < 500 && names().size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(names(), (std::vector<std::string>{"tp-name-0", "tp-name-1", "tp-name-2"}));
  pool.reset(2);
  for (int i = 0; i < 500 && names().size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(names(), (std::vector<std::string>{"tp-name-3", "tp-name-4"}));
  pool.reset(1, kvikio::make_thread_pool_init_task("tp-other"));
  for (int i = 0; i < 500 && kvikio::test::threads_named("tp-other-") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(kvikio::test::threads_named("tp-other-0"), 1U);
  EXPECT_EQ(kvikio::test::threads_named("tp-name-"), 0U);
  // A task that throws costs no worker.
  ThreadPool throwing{2, [] { throw std::runtime_error("set-up failed"); }};
  EXPECT_EQ(throwing.submit_task([] { return 7; }).get(), 7);
}

TEST(ThreadPool, NameLongerThanLinuxKeepsIsCut)
{
  ThreadPool pool{1, kvikio::make_thread_pool_init_task("a-prefix-of-twenty-x")};
  for (int i = 0; i < 500 && kvikio::test::threads_named("a-prefix-of-tw") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(kvikio::test::threads_named("a-prefix-of-twe"), 1U);
}
