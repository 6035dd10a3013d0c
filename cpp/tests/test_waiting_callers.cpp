/*
 * SPDX-License-Identifier: Apache-2.0
 */
// Reads of one task run on a caller that waits for each of its reads, and go back to the pool
// once the caller keeps reads in flight (core/waiting_callers.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include "common/temp_dir.hpp"
#include "core/waiting_callers.hpp"

namespace {

using kvikio::detail::caller_waits_for_each_read;
using kvikio::detail::handing_off;

// Each case runs on a thread of its own: the habit is the calling thread's.
template <typename F>
void on_a_fresh_thread(F&& f)
{
  std::thread t{std::forward<F>(f)};
  t.join();
}

TEST(WaitingCallers, TwoWaitedHandOffsInARowMakeAWaitingCaller)
{
  on_a_fresh_thread([] {
    EXPECT_FALSE(caller_waits_for_each_read());  // nothing known yet
    handing_off().ended();
    EXPECT_FALSE(caller_waits_for_each_read());  // one waited hand-off
    handing_off().ended();
    EXPECT_TRUE(caller_waits_for_each_read());
    EXPECT_TRUE(caller_waits_for_each_read());
  });
}

TEST(WaitingCallers, AReadStillRunningMakesTheCallerKeepReadsInFlight)
{
  on_a_fresh_thread([] {
    (void)caller_waits_for_each_read();
    handing_off().ended();
    (void)caller_waits_for_each_read();
    auto running = handing_off();  // not ended when the next read comes
    EXPECT_FALSE(caller_waits_for_each_read());
    running.ended();
    handing_off().ended();
    EXPECT_FALSE(caller_waits_for_each_read());  // one waited hand-off again, not two
  });
}

TEST(WaitingCallers, AnOlderReadEndingLastReadsAsStillRunning)
{
  on_a_fresh_thread([] {
    (void)caller_waits_for_each_read();
    auto older = handing_off();
    (void)caller_waits_for_each_read();
    auto newer = handing_off();
    newer.ended();
    older.ended();  // stores the older sequence number
    EXPECT_FALSE(caller_waits_for_each_read());
  });
}

// The calls (counted from 1) at which a waiting caller hands a read off, over `calls` calls, each
// hand-off ended at once (`keep_in_flight_at`: that call's hand-off is left running instead).
std::vector<int> probes(int calls, int keep_in_flight_at = 0)
{
  for (int i = 0; i < 2; ++i) {
    (void)caller_waits_for_each_read();
    handing_off().ended();
  }
  std::vector<int> at;
  kvikio::detail::HandOffMark running;
  for (int call = 1; call <= calls; ++call) {
    if (caller_waits_for_each_read()) { continue; }
    at.push_back(call);
    auto mark = handing_off();
    if (call == keep_in_flight_at) {
      running = std::move(mark);
    } else {
      mark.ended();
    }
  }
  running.ended();
  return at;
}

TEST(WaitingCallers, ProbesComeLessOftenUpToOneReadInSixtyFour)
{
  on_a_fresh_thread([] {
    EXPECT_EQ(probes(16 + 32 + 64 + 64), (std::vector<int>{16, 48, 112, 176}));
  });
}

TEST(WaitingCallers, ReadsInFlightSendTheProbesBackToOneInSixteen)
{
  on_a_fresh_thread([] {
    // The probe at 48 is left running: the next read is handed off and ends, the one after it
    // too (two in a row make a waiting caller again), then probes come one in sixteen.
    EXPECT_EQ(probes(48 + 2 + 16, 48), (std::vector<int>{16, 48, 49, 50, 66}));
  });
}

class WaitingCallersFile : public testing::Test {
 protected:
  void SetUp() override
  {
    std::mt19937 rng{7};
    bytes_.resize(1 << 20);
    for (auto& b : bytes_) {
      b = static_cast<char>(rng());
    }
    path_        = dir_.file("data.bin");
    int const fd = ::open(path_.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, bytes_.data(), bytes_.size()), static_cast<ssize_t>(bytes_.size()));
    ::close(fd);
  }
  // Reads 64 KiB at `offset` into a poisoned buffer with a one-thread pool.
  std::future<std::size_t> read(kvikio::FileHandle& f,
                                std::vector<char>& into,
                                std::size_t offset,
                                kvikio::ThreadPool& pool)
  {
    into.assign(size + 2, '\x5a');
    return f.pread(into.data() + 1,
                   size,
                   offset,
                   kvikio::defaults::task_size(),
                   kvikio::defaults::gds_threshold(),
                   true,
                   &pool);
  }
  void check(std::vector<char> const& got, std::size_t offset) const
  {
    EXPECT_EQ(got.front(), '\x5a');
    EXPECT_EQ(got.back(), '\x5a');
    EXPECT_EQ(std::memcmp(got.data() + 1, bytes_.data() + offset, size), 0);
  }
  static constexpr std::size_t size = 64 << 10;
  kvikio::test::TempDir dir_;
  std::string path_;
  std::vector<char> bytes_;
};

TEST_F(WaitingCallersFile, AWaitingCallerReadsWhileThePoolIsBusy)
{
  kvikio::ThreadPool pool{1};
  kvikio::FileHandle f{path_, "r", kvikio::FileHandle::m644, kvikio::CompatMode::ON};
  std::vector<char> buf;
  on_a_fresh_thread([&] {
    for (std::size_t i = 0; i < 3; ++i) {  // two hand-offs waited for, then one on the caller
      EXPECT_EQ(read(f, buf, i * 4096 + 1, pool).get(), size);
      check(buf, i * 4096 + 1);
    }
    // The pool's only thread is held: a read handed to it could not be ready on return.
    std::promise<void> gate;
    auto held   = pool.submit_task([opened = gate.get_future().share()] { opened.wait(); });
    auto future = read(f, buf, 12345, pool);
    EXPECT_EQ(future.wait_for(std::chrono::seconds{0}), std::future_status::ready);
    EXPECT_EQ(future.get(), size);
    check(buf, 12345);
    gate.set_value();
    held.get();
  });
}

TEST_F(WaitingCallersFile, AFreshCallerThatKeepsReadsInFlightIsSeenWithinSixteenReads)
{
  // Four threads, all held: a read handed off waits in the queue, which stays short of a
  // backlog (as many queued as threads) for the three reads this test hands off.
  kvikio::ThreadPool pool{4};
  kvikio::FileHandle f{path_, "r", kvikio::FileHandle::m644, kvikio::CompatMode::ON};
  on_a_fresh_thread([&] {
    std::vector<char> buf;
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(read(f, buf, i, pool).get(), size);
    }
    std::promise<void> gate;
    std::shared_future<void> const opened = gate.get_future().share();
    std::atomic<int> holding{0};
    std::vector<std::future<void>> held;
    for (int i = 0; i < 4; ++i) {
      held.push_back(pool.submit_task([&holding, opened] {
        ++holding;
        opened.wait();
      }));
    }
    while (holding.load() < 4) {
      std::this_thread::yield();
    }
    std::vector<std::vector<char>> bufs(19);
    std::vector<std::future<std::size_t>> futures;
    auto ready = [](std::future<std::size_t> const& f) {
      return f.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
    };
    // On the caller until its probe goes to the pool, within sixteen reads.
    while (futures.size() < 16) {
      futures.push_back(read(f, bufs[futures.size()], futures.size() * 1000, pool));
      if (!ready(futures.back())) { break; }
    }
    ASSERT_FALSE(ready(futures.back())) << "no read went to the pool in sixteen";
    // The probe still running, the caller counts as keeping reads in flight: the next two go to
    // the pool as well.
    for (int i = 0; i < 2; ++i) {
      futures.push_back(read(f, bufs[futures.size()], futures.size() * 1000, pool));
      EXPECT_FALSE(ready(futures.back())) << "read " << futures.size() - 1;
    }
    gate.set_value();
    for (auto& h : held) {
      h.get();
    }
    for (std::size_t i = 0; i < futures.size(); ++i) {
      EXPECT_EQ(futures[i].get(), size);
      check(bufs[i], i * 1000);
    }
  });
}

}  // namespace
