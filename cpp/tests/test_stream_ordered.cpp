/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Stream-ordered read_async/write_async on the thread pool (compat mode): the bytes land after
 * the stream's earlier work and before its later work, the caller is never blocked, failures
 * reach the StreamFuture and never leave the stream waiting. Both ways of making the stream
 * wait (stream memory operations, host functions) run under the simulator (slowed down, so that
 * a missing order shows) and on the GPU.
 */
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <iostream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/utils.hpp>

#include "common/busy_pool.hpp"
#include "common/busy_stream_workers.hpp"
#include "common/device.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "common/thread_names.hpp"
#include "parallel/stream_ordered.hpp"
#include "parallel/stream_workers.hpp"

using kvikio::FileHandle;
using kvikio::detail::StreamWaitKind;
using kvikio::test::api;
using kvikio::test::pattern;

namespace {

using kvikio::test::poison;
constexpr std::size_t guard = 64;

std::string name(StreamWaitKind kind)
{
  return kind == StreamWaitKind::stream_memops ? "StreamMemOps" : "HostFunction";
}

}  // namespace

namespace kvikio::detail {
// Readable test names in ctest (gtest prints parameters with this).
void PrintTo(StreamWaitKind kind, std::ostream* os) { *os << name(kind); }
}  // namespace kvikio::detail

namespace {

// The whole file read by read_async into `dev` (poisoned first, on the stream), checked.
void read_whole_file_and_check(FileHandle& f,
                               kvikio::test::DeviceBuffer const& dev,
                               kvikio::test::Stream const& stream,
                               std::vector<std::uint8_t> const& content,
                               char const* what)
{
  KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8Async(dev.ptr, 0xA5, content.size(), stream.handle));
  auto future = f.read_async(dev.get(), content.size(), 0, 0, stream.handle);
  EXPECT_EQ(future.check_bytes_done(), content.size()) << what;
  std::vector<std::uint8_t> back(content.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content) << what;
}

class StreamOrdered : public kvikio::test::OnDevice,
                      public ::testing::WithParamInterface<StreamWaitKind> {
 protected:
  void SetUp() override
  {
    OnDevice::SetUp();
    if (IsSkipped()) { return; }
    kvikio::defaults::set_compat_mode(kvikio::CompatMode::ON);
    kvikio::defaults::set_thread_pool_nthreads(4);
    kvikio::defaults::set_task_size(1 << 20);
    kvikio::defaults::set_bounce_buffer_size(1 << 20);  // 256 KiB slots: several per task
    kvikio::detail::force_stream_wait_kind(GetParam());
    kvikio::test::write_file(path_, content_);
  }
  void TearDown() override
  {
    kvikio::detail::force_stream_wait_kind(std::nullopt);
    OnDevice::TearDown();
  }
  kvikio::test::TempDir dir_;
  std::string path_                  = dir_.file("data");
  std::vector<std::uint8_t> content_ = pattern((3 << 20) + 333, 81);
};

TEST_P(StreamOrdered, ReadLandsBetweenEarlierAndLaterWork)
{
  std::size_t const size = content_.size() - 5;
  kvikio::test::DeviceBuffer dev{size + 2 * guard};
  kvikio::test::PinnedBuffer fill{size + 2 * guard};
  kvikio::test::PinnedBuffer out{size + 2 * guard};
  std::memset(fill.ptr, poison, fill.size);
  std::memset(out.ptr, 0, out.size);
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  // Earlier work fills the destination; later work copies it out. Only the stream orders them.
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr, fill.ptr, fill.size, stream.handle));
  auto future = f.read_async(dev.get(), size, 5, guard, stream.handle);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoHAsync(out.ptr, dev.ptr, out.size, stream.handle));
  EXPECT_EQ(future.check_bytes_done(), size);
  ASSERT_EQ(0, std::memcmp(out.bytes() + guard, content_.data() + 5, size))
    << "the read did not land between the stream's earlier and later work";
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(out.bytes()[i], poison);
    ASSERT_EQ(out.bytes()[guard + size + i], poison);
  }
  EXPECT_EQ(kvikio::detail::last_stream_wait_kind(), GetParam());
}

// The default stream names the current context's: a thread with no current context reads on
// its destination's, and its future waits there too (before, the bytes landed and the wait
// failed with CUDA_ERROR_INVALID_CONTEXT).
TEST_P(StreamOrdered, DefaultStreamFromAThreadWithoutAContext)
{
  std::size_t const size = content_.size() - 9;
  kvikio::test::DeviceBuffer dev{size + 2 * guard};
  std::vector<std::uint8_t> fill(dev.size, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, fill.data(), fill.size()));
  FileHandle f{path_, "r"};
  std::size_t read = 0;
  std::thread{[&] {
    CUcontext current{};
    ASSERT_EQ(api().CtxGetCurrent(&current), CUDA_SUCCESS);
    ASSERT_EQ(current, nullptr);
    auto future = f.read_async(dev.get(), size, 9, guard, nullptr);
    read        = future.check_bytes_done();
  }}.join();
  EXPECT_EQ(read, size);
  std::vector<std::uint8_t> back(dev.size);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  ASSERT_EQ(0, std::memcmp(back.data() + guard, content_.data() + 9, size));
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(back[i], poison);
    ASSERT_EQ(back[guard + size + i], poison);
  }
}

// Every thread the library starts for local and stream-ordered reads has a name (the pool's
// "kvikio-N", the stream workers' and the pinning threads').
TEST_P(StreamOrdered, EveryThreadTheLibraryStartsIsNamed)
{
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  std::vector<std::uint8_t> host(content_.size(), poison);
  EXPECT_EQ(f.pread(host.data(), host.size()).get(), host.size());
  EXPECT_EQ(f.read_async(dev.get(), content_.size(), 0, 0, stream.handle).check_bytes_done(),
            content_.size());
  EXPECT_EQ(kvikio::test::unnamed_threads(), std::vector<std::string>{});
  EXPECT_GE(kvikio::test::threads_named("kvikio-strm-"), 1U);
  auto const names = kvikio::test::thread_names();  // one snapshot: pinning threads come and go
  EXPECT_EQ(std::count_if(names.begin(),
                          names.end(),
                          [](std::string const& n) {
                            return n.rfind("kvikio-", 0) == 0 && n.size() > 7 &&
                                   std::isdigit(static_cast<unsigned char>(n[7])) != 0;
                          }),
            4);  // the pool's: kvikio-0 to kvikio-3
}

TEST_P(StreamOrdered, WriteWritesWhatEarlierWorkLeft)
{
  auto const fresh = pattern(content_.size(), 82);
  kvikio::test::DeviceBuffer dev{fresh.size()};
  kvikio::test::PinnedBuffer src{fresh.size()};
  std::memcpy(src.ptr, fresh.data(), fresh.size());
  kvikio::test::Stream stream;
  {
    FileHandle f{path_, "r+"};
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr, src.ptr, src.size, stream.handle));
    auto future = f.write_async(dev.get(), fresh.size(), 0, 0, stream.handle);
    EXPECT_EQ(future.check_bytes_done(), fresh.size());
  }
  EXPECT_EQ(kvikio::test::read_file(path_), fresh)
    << "the write did not wait for the stream's earlier work";
}

// The stream is held up by a host function until the test releases it, after read_async has
// returned: a read_async that waited for the stream would hold the release back for 10 s.
TEST_P(StreamOrdered, CallerIsNotBlocked)
{
  struct Gate {
    std::promise<void> opened;
    std::atomic<bool> timed_out{false};
  } gate;
  auto opened = gate.opened.get_future().share();
  struct Held {
    std::shared_future<void> opened;
    Gate* gate;
  } held{opened, &gate};
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  KVIKIO_CUDA_DRIVER_TRY(api().LaunchHostFunc(
    stream.handle,
    [](void* user) {
      auto* h = static_cast<Held*>(user);
      if (h->opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        h->gate->timed_out = true;
      }
    },
    &held));
  FileHandle f{path_, "r"};
  auto future = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
  gate.opened.set_value();
  EXPECT_EQ(future.check_bytes_done(), content_.size());
  EXPECT_FALSE(gate.timed_out) << "read_async waited for the stream before returning";
  std::vector<std::uint8_t> back(content_.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content_);
}

// Assigning over a pending future frees the arguments the stream still writes (*bytes_done):
// the assignment must wait for the operation first, as the destructor does. The stream is held
// until a thread opens the gate a while later; without the wait the stream is still busy when
// the assignment returns (and ASan sees the write into freed memory).
TEST_P(StreamOrdered, MoveAssignmentWaitsForTheOperationItReplaces)
{
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  KVIKIO_CUDA_DRIVER_TRY(api().LaunchHostFunc(
    stream.handle,
    // Bounded: a read_async that waited for the stream would otherwise hang here, not fail.
    [](void* user) {
      (void)static_cast<std::shared_future<void>*>(user)->wait_for(std::chrono::seconds(10));
    },
    &opened));
  FileHandle f{path_, "r"};
  auto future = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
  std::thread opener{[&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gate.set_value();
  }};
  future = kvikio::StreamFuture{};
  EXPECT_EQ(api().StreamQuery(stream.handle), CUDA_SUCCESS)
    << "the assignment returned while the operation it replaced was still on the stream";
  opener.join();
  EXPECT_THROW((void)future.check_bytes_done(), kvikio::CUfileException);
  std::vector<std::uint8_t> back(content_.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content_);
}

TEST_P(StreamOrdered, BackToBackReadsOnOneStream)
{
  std::size_t const piece = 300000;
  std::size_t const n     = content_.size() / piece;
  kvikio::test::DeviceBuffer dev{n * piece};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  std::vector<kvikio::StreamFuture> futures;
  for (std::size_t i = 0; i < n; ++i) {  // in reverse file order, into forward device order
    futures.push_back(f.read_async(dev.get(),
                                   piece,
                                   static_cast<off_t>((n - 1 - i) * piece),
                                   static_cast<off_t>(i * piece),
                                   stream.handle));
  }
  for (auto& fut : futures) {
    EXPECT_EQ(fut.check_bytes_done(), piece);
  }
  std::vector<std::uint8_t> back(n * piece);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(0, std::memcmp(back.data() + i * piece, content_.data() + (n - 1 - i) * piece, piece))
      << "piece " << i;
  }
}

// Once their work is done the stream-ordered workers sleep on a condition variable: for a second
// of idling the whole process uses (nearly) no CPU, where one polling worker would use about a
// second. The measured CPU is printed.
TEST_P(StreamOrdered, IdleWorkersUseNoCpu)
{
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  auto future = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
  ASSERT_EQ(future.check_bytes_done(), content_.size());
  std::vector<std::uint8_t> back(content_.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  ASSERT_EQ(back, content_);
  ASSERT_GT(kvikio::detail::stream_worker_count(), 0U);

  auto cpu_seconds = [] {
    ::rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    auto const s = [](::timeval t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
    return s(usage.ru_utime) + s(usage.ru_stime);
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the last worker goes to sleep
  double const before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double const used = cpu_seconds() - before;
  std::cout << "[ idle     ] " << kvikio::detail::stream_worker_count()
            << " stream-ordered workers, CPU of the process over 1 s idle: " << used << " s\n";
  EXPECT_LT(used, 0.1) << "something polls while no work is left";
}

// The only stream-ordered worker is busy for a while after the call: the stream must wait for
// the data to be read into the staging slots before it copies them.
TEST_P(StreamOrdered, CopiesWaitForTheData)
{
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::test::BusyStreamWorkers busy{1};
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  auto future = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // room for a stream that won't wait
  busy.release();
  EXPECT_EQ(future.check_bytes_done(), content_.size());
  std::vector<std::uint8_t> back(content_.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content_) << "the stream copied staging slots before they were filled";
}

// Every thread of the global pool is busy (one, waiting) while a stream-ordered read and write
// run: their host part is not the pool's, so they complete. When it was, the H100 hung: device
// pread tasks held the pool's threads waiting for copies that a stream waiting for a read (queued
// behind them) held up, as streams share hardware queues.
TEST_P(StreamOrdered, NoFreePoolThreadIsNeeded)
{
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::test::BusyPool busy;
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  std::string const copy = dir_.file("copy");
  auto done              = std::async(std::launch::async, [&] {
    kvikio::PushAndPopContext const context{ctx_};
    FileHandle in{path_, "r"};
    FileHandle out{copy, "w"};
    auto read    = in.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
    auto written = out.write_async(dev.get(), content_.size(), 0, 0, stream.handle);
    return read.check_bytes_done() + written.check_bytes_done();
  });
  bool const finished    = done.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  busy.release();
  ASSERT_TRUE(finished) << "stream-ordered I/O waited for a thread of the global pool";
  EXPECT_EQ(done.get(), 2 * content_.size());
  EXPECT_EQ(kvikio::test::read_file(copy), content_);
}

// Staging smaller than k pages (fewer, page-sized slots, reused many times). The staging is
// the stream's own ring, not the bounce buffer pool; once idle it can be freed.
TEST_P(StreamOrdered, TinyStagingIsTheStreamsOwnAndFreedWhenIdle)
{
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::defaults::set_bounce_buffer_size(8192);  // 2 slots of one page: no more than 8 KiB
  auto& pool               = kvikio::BounceBufferPool<>::instance();
  std::size_t const pinned = pool.pinned_bytes();
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  {
    FileHandle f{path_, "r+"};
    auto future = f.read_async(dev.get(), 200001, 3, 0, stream.handle);
    EXPECT_EQ(future.check_bytes_done(), 200001U);
    auto back = f.write_async(dev.get(), 200001, 0, 0, stream.handle);  // writes what it read
    EXPECT_EQ(back.check_bytes_done(), 200001U);
  }
  auto const disk = kvikio::test::read_file(path_);
  EXPECT_EQ(0, std::memcmp(disk.data(), content_.data() + 3, 200001));
  EXPECT_EQ(0, std::memcmp(disk.data() + 200001, content_.data() + 200001, 1000))
    << "written past the range";
  EXPECT_EQ(pool.pinned_bytes(), pinned) << "stream-ordered I/O took bounce buffers";
  EXPECT_GE(kvikio::detail::staging_pinned_bytes(), 8192U);
  EXPECT_GE(kvikio::detail::free_idle_staging(), 1U);
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 0U) << "an idle ring was not freed";
}

// Many calls back to back on one stream pin one ring (two slots per thread, each of a task and
// at least 4 MiB, and at most threads x bounce buffer size), not one per call. A ring larger
// than a huge page starts as a starter of one huge page in four slots, pinned at the first call,
// and the full ring takes over at the first call after it is pinned in the background; a new shape
// (either size changed) takes over once the ring is idle.
TEST_P(StreamOrdered, StagingIsOneRingPerStream)
{
  (void)kvikio::detail::free_idle_staging();
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  std::vector<kvikio::StreamFuture> futures;
  for (int i = 0; i < 20; ++i) {
    futures.push_back(f.read_async(dev.get(), content_.size(), 0, 0, stream.handle));
  }
  // The starter (four 512 KiB slots); or, if the full ring was pinned before the last call, the
  // full ring and the starter, draining until idle (or the full ring alone if it was idle, and
  // where the stream waits through host functions, which have no starter).
  auto const first = kvikio::detail::staging_pinned_bytes();
  EXPECT_TRUE(first == 2U << 20 || first == 6U << 20 || first == 4U << 20) << first;
  for (auto& fut : futures) {
    EXPECT_EQ(fut.check_bytes_done(), content_.size());
  }
  auto read_and_check = [&](char const* what) {
    read_whole_file_and_check(f, dev, stream, content_, what);
  };
  kvikio::detail::wait_for_staging_pinning();
  read_and_check("the full ring");
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 4U << 20)
    << "4 threads x 1 MiB; the idle starter freed";
  kvikio::defaults::set_bounce_buffer_size(1 << 18);
  read_and_check("a small ring");
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 1U << 20) << "4 threads x 256 KiB, at once";

  // Bounce buffers larger than the tasks: two slots per thread, each of a task and at least
  // 4 MiB.
  kvikio::defaults::set_bounce_buffer_size(16 << 20);
  for (auto [task, ring] :
       {std::pair<std::size_t, std::size_t>{8 << 20, 64 << 20}, {64 << 10, 32 << 20}}) {
    kvikio::defaults::set_task_size(task);
    read_and_check("a starter");
    bool const starter = GetParam() == StreamWaitKind::stream_memops;
    EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), starter ? 2U << 20 : ring)
      << "task size " << task << ": the full ring takes over at the next call";
    kvikio::detail::wait_for_staging_pinning();
    read_and_check("the full ring");
    EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), ring) << "task size " << task;
  }
}

// A starter takes calls up to 256 uses of its slots in flight; the call that would pass that
// waits for the full ring (or finds it pinned already), and a first call that alone would pass
// it pins the full ring at once. Where the stream waits through host functions there is no
// starter: the first call pins the full ring.
// 32 slots: the starter's are 64 KiB (2 MiB / 32), the full ring's 128 KiB (4 x 1 MiB / 32).
TEST_P(StreamOrdered, AStarterTakesAFewHundredUsesThenTheFullRingTakesOver)
{
  std::size_t const slots = kvikio::defaults::num_bounce_buffers();
  kvikio::defaults::set_num_bounce_buffers(32);
  kvikio::defaults::set_task_size(1 << 20);
  std::size_t const n    = 4 << 20;
  auto const content     = pattern(n + (1 << 20) + 77, 85);
  std::string const path = dir_.file("uses");
  kvikio::test::write_file(path, content);
  FileHandle f{path, "r"};
  kvikio::test::DeviceBuffer dev{n};
  std::vector<std::uint8_t> back(n);
  {
    (void)kvikio::detail::free_idle_staging();
    kvikio::test::Stream stream;
    // The stream is held until the calls are made, so no call's uses end before the fifth.
    std::promise<void> opened;
    std::shared_future<void> held = opened.get_future().share();
    KVIKIO_CUDA_DRIVER_TRY(api().LaunchHostFunc(
      stream.handle,
      [](void* user) {
        (void)static_cast<std::shared_future<void>*>(user)->wait_for(std::chrono::seconds(10));
      },
      &held));
    // 64 uses of the starter each: the fifth call waits for the full ring.
    std::vector<kvikio::StreamFuture> futures;
    for (std::size_t i = 0; i < 5; ++i) {
      futures.push_back(f.read_async(dev.get(), n, i * 1000, 0, stream.handle));
    }
    if (GetParam() == StreamWaitKind::stream_memops) {
      EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 6U << 20)
        << "the full ring took over, the busy starter drains";
    } else {
      EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 4U << 20) << "the full ring alone";
    }
    opened.set_value();
    for (auto& fut : futures) {
      EXPECT_EQ(fut.check_bytes_done(), n);
    }
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, n));
    EXPECT_EQ(0, std::memcmp(back.data(), content.data() + 4000, n)) << "the last call's bytes";
  }
  {
    (void)kvikio::detail::free_idle_staging();
    EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 0U);
    kvikio::test::Stream stream;
    // 16 MiB + 64 KiB: 257 uses of the starter, too many for it either way.
    std::size_t const big      = (16 << 20) + (64 << 10);
    auto const big_content     = pattern(big, 86);
    std::string const big_path = dir_.file("big");
    kvikio::test::write_file(big_path, big_content);
    FileHandle g{big_path, "r"};
    kvikio::test::DeviceBuffer big_dev{big};
    auto fut = g.read_async(big_dev.get(), big, 0, 0, stream.handle);
    EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 4U << 20) << "the full ring at once";
    EXPECT_EQ(fut.check_bytes_done(), big);
    std::vector<std::uint8_t> big_back(big);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(big_back.data(), big_dev.ptr, big));
    EXPECT_EQ(big_back, big_content);
  }
  kvikio::defaults::set_num_bounce_buffers(slots);
}

// Reads and writes alternate on one stream through the same slots: read -> write (the stream
// orders them), write -> write (the stream waits for the file), write -> read (the tasks wait
// for the file and the stream).
TEST_P(StreamOrdered, ReadsAndWritesShareTheSlotsInOrder)
{
  kvikio::defaults::set_bounce_buffer_size(64 << 10);  // 4 threads: four 64 KiB slots
  std::size_t const n = 1000003;
  kvikio::test::DeviceBuffer a{n};
  kvikio::test::DeviceBuffer b{n};
  kvikio::test::Stream stream;
  std::string const copy = dir_.file("copy");
  kvikio::test::write_file(copy, pattern(2 * n, 84));
  {
    FileHandle in{path_, "r"};
    FileHandle out{copy, "r+"};
    std::vector<kvikio::StreamFuture> futures;
    futures.push_back(in.read_async(a.get(), n, 7, 0, stream.handle));
    futures.push_back(in.read_async(b.get(), n, 100, 0, stream.handle));
    futures.push_back(out.write_async(a.get(), n, 0, 0, stream.handle));
    futures.push_back(out.write_async(b.get(), n, static_cast<off_t>(n), 0, stream.handle));
    futures.push_back(out.read_async(a.get(), n, static_cast<off_t>(n), 0, stream.handle));
    for (auto& fut : futures) {
      EXPECT_EQ(fut.check_bytes_done(), n);
    }
  }
  auto const disk = kvikio::test::read_file(copy);
  ASSERT_EQ(disk.size(), 2 * n);
  EXPECT_EQ(0, std::memcmp(disk.data(), content_.data() + 7, n))
    << "a write overtook the one before";
  EXPECT_EQ(0, std::memcmp(disk.data() + n, content_.data() + 100, n));
  std::vector<std::uint8_t> back(n);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), a.ptr, n));
  EXPECT_EQ(0, std::memcmp(back.data(), content_.data() + 100, n))
    << "the read overtook the writes before it";
}

// Two threads, each with its own stream, read back to back at once: each stream has its ring.
TEST_P(StreamOrdered, StreamsOfTwoThreadsAtOnce)
{
  std::size_t const piece = 250000;
  std::vector<std::string> failures(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      kvikio::PushAndPopContext const context{ctx_};
      kvikio::test::DeviceBuffer dev{4 * piece};
      kvikio::test::Stream stream;
      FileHandle f{path_, "r"};
      std::vector<kvikio::StreamFuture> futures;
      for (std::size_t i = 0; i < 4; ++i) {
        std::size_t const offset = (t * 4 + i) * 333 + i * piece;
        futures.push_back(f.read_async(dev.get(),
                                       piece,
                                       static_cast<off_t>(offset),
                                       static_cast<off_t>(i * piece),
                                       stream.handle));
      }
      std::vector<std::uint8_t> back(4 * piece);
      for (auto& fut : futures) {
        if (fut.check_bytes_done() != piece) { failures[t] += "short read; "; }
      }
      KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
      for (std::size_t i = 0; i < 4; ++i) {
        std::size_t const offset = (t * 4 + i) * 333 + i * piece;
        if (std::memcmp(back.data() + i * piece, content_.data() + offset, piece) != 0) {
          failures[t] += "piece " + std::to_string(i) + " differs; ";
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

// More slots than a stream holds pending operations (about 1000 on the GPU, 1024 in the
// simulator): enqueuing blocks until the stream has run some, which needs the tasks already.
TEST_P(StreamOrdered, MoreChunksThanTheStreamHolds)
{
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::defaults::set_bounce_buffer_size(8192);  // one-page slots: 2 MiB is 512 of them
  std::size_t const size = 2 << 20;
  kvikio::test::DeviceBuffer dev{size};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  auto future = f.read_async(dev.get(), size, 1, 0, stream.handle);
  EXPECT_EQ(future.check_bytes_done(), size);
  std::vector<std::uint8_t> back(size);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(0, std::memcmp(back.data(), content_.data() + 1, size));
}

// The file shrinks between the call and its reads (the only stream-ordered worker is busy until
// then): the short reads fail the operation, the future says so, the stream is released.
TEST_P(StreamOrdered, FailedTaskIsReportedAndReleasesTheStream)
{
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::test::BusyStreamWorkers busy{1};
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  auto future = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
  ASSERT_EQ(::truncate(path_.c_str(), 1000), 0);
  busy.release();
  try {
    (void)future.check_bytes_done();
    FAIL() << "a read of a truncated file succeeded";
  } catch (kvikio::CUfileException const& e) {  // as the task threw it
    EXPECT_NE(std::string{e.what()}.find("past the end"), std::string::npos) << e.what();
  }
  kvikio::test::write_file(path_, content_);  // and the next operation works
  FileHandle g{path_, "r"};
  auto again = g.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
  EXPECT_EQ(again.check_bytes_done(), content_.size());
  std::vector<std::uint8_t> back(content_.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content_);
}

INSTANTIATE_TEST_SUITE_P(Waits,
                         StreamOrdered,
                         ::testing::Values(StreamWaitKind::stream_memops,
                                           StreamWaitKind::host_function),
                         [](auto const& info) { return name(info.param); });

// A pool of 2 and 1 MiB bounce buffers: a stream's ring is 4 x 512 KiB (5 copies per read), the
// size of a kept starter block, pinned at the stream's first call (no starter); and `content` in
// `path`.
void use_small_rings(std::string const& path, std::vector<std::uint8_t> const& content)
{
  kvikio::defaults::set_compat_mode(kvikio::CompatMode::ON);
  kvikio::defaults::set_thread_pool_nthreads(2);
  kvikio::defaults::set_task_size(1 << 20);
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  kvikio::test::write_file(path, content);
}

class SmallRings : public kvikio::test::OnDevice {
 protected:
  void SetUp() override
  {
    OnDevice::SetUp();
    if (IsSkipped()) { return; }
    use_small_rings(path_, content_);
  }
  kvikio::test::TempDir dir_;
  std::string path_                  = dir_.file("data");
  std::vector<std::uint8_t> content_ = pattern((2 << 20) + 1, 83);
};

// Run by ctest with a CUDASIM_FAIL rule (the test says which); skipped otherwise.
class Injected : public SmallRings {
 protected:
  void SetUp() override
  {
    if (std::getenv("CUDASIM_FAIL") == nullptr) {
      GTEST_SKIP() << "runs with CUDASIM_FAIL set (ctest)";
    }
    SmallRings::SetUp();
  }
};

// CUDASIM_FAIL=cuMemcpyHtoDAsync:2:CUDA_ERROR_INVALID_VALUE: enqueuing a copy fails half-way.
// The error is reported, the stream is not left waiting, the next read works.
TEST_F(Injected, CopyFailureIsReportedAndReleasesTheStream)
{
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  try {
    // The copies are enqueued by read_async itself: the failure may surface there.
    auto failing = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
    (void)failing.check_bytes_done();
    FAIL() << "the injected failure was not reported";
  } catch (std::exception const& e) {
    EXPECT_NE(std::string{e.what()}.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos)
      << e.what();
  }
  auto again = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
  EXPECT_EQ(again.check_bytes_done(), content_.size());
  std::vector<std::uint8_t> back(content_.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content_);
}

// CUDASIM_FAIL=cuStreamWaitValue32:1 or cuStreamBatchMemOp:1 (CUDA_ERROR_NOT_SUPPORTED): a
// driver without stream memory operations, refusing the first lone one or the first batch (what
// was enqueued before is harmless). The read still lands in order, through host functions, and
// later ones use them.
TEST_F(Injected, WithoutStreamMemOpsAHostFunctionWaits)
{
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  for (int i = 0; i < 2; ++i) {
    auto future = f.read_async(dev.get(), content_.size(), 0, 0, stream.handle);
    EXPECT_EQ(future.check_bytes_done(), content_.size());
    EXPECT_EQ(kvikio::detail::last_stream_wait_kind(), StreamWaitKind::host_function);
  }
  std::vector<std::uint8_t> back(content_.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content_);
}

// CUDASIM_FAIL=cuMemHostRegister:3:CUDA_ERROR_OUT_OF_MEMORY: the stream's full ring (the
// process's third registration, after the counters' page and the starter's block, both pinned
// when the file was opened) fails to pin in the background. The failure is logged, the starter's
// bytes are right, and the next call, the starter being idle, pins the full ring on the caller.
TEST_F(Injected, AFailedBackgroundPinningLeavesTheStarterThenPinsOnTheCaller)
{
  kvikio::defaults::set_thread_pool_nthreads(4);  // a ring of 8 x 512 KiB: four to start
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream stream;
  FileHandle f{path_, "r"};
  auto read_and_check = [&](char const* what) {
    read_whole_file_and_check(f, dev, stream, content_, what);
  };
  read_and_check("through the starter");
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 2U << 20);
  kvikio::detail::wait_for_staging_pinning();
  read_and_check("after the failure");
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 4U << 20) << "pinned on the caller";
  read_and_check("through the full ring");
}

// CUDASIM_FAIL=cuMemHostRegister:3:CUDA_ERROR_OUT_OF_MEMORY: opening a file with a context
// current pins the counters' page and a starter block (registrations 1 and 2) on a thread of
// its own; the first stream's call (a ring of 4 x 512 KiB, which fits the block) stages through
// them and registers nothing, and has a block pinned for the next stream (registration 3, which
// fails: logged, nothing kept). The second stream's first call then pins its own. Once the
// first stream's ring is freed, its block is kept and serves a third stream, whose taking it
// has another pinned.
TEST_F(Injected, TheFirstCallStagesThroughWhatTheOpenPinnedAhead)
{
  kvikio::test::DeviceBuffer dev{content_.size()};
  kvikio::test::Stream first;
  kvikio::test::Stream second;
  kvikio::test::Stream third;
  FileHandle f{path_, "r"};
  kvikio::detail::wait_for_staging_pinning();
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 1U);
  read_whole_file_and_check(f, dev, first, content_, "through the block pinned at the open");
  kvikio::detail::wait_for_staging_pinning();
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 0U) << "its replacement failed to pin";
  read_whole_file_and_check(f, dev, second, content_, "through a block pinned at the call");
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 4U << 20);
  EXPECT_EQ(kvikio::detail::free_idle_staging(), 2U);
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 0U);
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 1U) << "the first ring's block, kept";
  read_whole_file_and_check(f, dev, third, content_, "through the block the first ring gave back");
  kvikio::detail::wait_for_staging_pinning();
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 1U) << "replaced on a thread of its own";
}

// The block kept for the next stream's first call serves every context, so it is pinned only in
// a primary context, whose handle lasts as long as the process. A stream of a context the
// program made takes the block pinned when the file was opened (in the primary context) and has
// none pinned in its place (a block pinned there would die with that context, and the next
// stream would copy out of memory no longer pinned); once its ring is freed the block is kept
// again and serves a stream of the primary context after the program's context has ended.
TEST_F(SmallRings, AKeptBlockIsPinnedOnlyInAPrimaryContext)
{
  FileHandle f{path_, "r"};
  kvikio::detail::wait_for_staging_pinning();
  ASSERT_EQ(kvikio::detail::staging_blocks_kept(), 1U) << "pinned ahead in the primary context";
  CUdevice device{};
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGet(&device, 0));
  CUcontext own{};
  KVIKIO_CUDA_DRIVER_TRY(api().CtxCreate(&own, nullptr, 0, device));
  {
    kvikio::test::DeviceBuffer const dev{content_.size()};
    kvikio::test::Stream const stream;
    read_whole_file_and_check(f, dev, stream, content_, "in a context the program made");
    kvikio::detail::wait_for_staging_pinning();
    EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 0U) << "a block pinned in that context";
    EXPECT_EQ(kvikio::detail::free_idle_staging(), 1U);
  }
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 1U) << "the block its ring gave back";
  KVIKIO_CUDA_DRIVER_TRY(api().CtxDestroy(own));
  kvikio::test::DeviceBuffer const dev{content_.size()};
  kvikio::test::Stream const stream;
  read_whole_file_and_check(f, dev, stream, content_, "in the primary context, afterwards");
}

// The process's first stream-ordered read (ctest runs each test in a process of its own) runs in
// a context the program made, which it then destroys: the counters that read took were pinned in
// that context for it alone, and a read in the primary context afterwards, on counters of its
// own, gets its bytes.
TEST(StagingOfEndedContexts, AReadAfterTheFirstReadsContextEndedGetsItsBytes)
{
  if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
  kvikio::test::TempDir const dir;
  std::string const path = dir.file("data");
  auto const content     = pattern((1 << 20) + 5, 84);
  use_small_rings(path, content);
  CUdevice device{};
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGet(&device, 0));
  CUcontext own{};
  KVIKIO_CUDA_DRIVER_TRY(api().CtxCreate(&own, nullptr, 0, device));
  {
    FileHandle f{path, "r"};
    kvikio::test::DeviceBuffer const dev{content.size()};
    kvikio::test::Stream const stream;
    read_whole_file_and_check(f, dev, stream, content, "in a context the program made");
    kvikio::detail::wait_for_staging_pinning();
    EXPECT_EQ(kvikio::detail::free_idle_staging(), 1U);
  }
  KVIKIO_CUDA_DRIVER_TRY(api().CtxDestroy(own));
  kvikio::PushAndPopContext const primary{kvikio::get_primary_cuda_context(0)};
  FileHandle f{path, "r"};
  kvikio::test::DeviceBuffer const dev{content.size()};
  kvikio::test::Stream const stream;
  read_whole_file_and_check(f, dev, stream, content, "in the primary context, afterwards");
}

// Contexts the program made, each destroyed as soon as its one read is done (the stream
// synchronised and destroyed first): no thread of the library goes on pinning in one (the
// simulator reports a destroyed context pushed as misuse, which fails the test); the rings of
// ended contexts, whose registrations ended with them, are freed without an error; and a read
// in the primary context afterwards gets its bytes.
TEST(StagingOfEndedContexts, AContextEndedRightAfterItsReadHasNoPinningLeftInIt)
{
  if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
  kvikio::defaults::set_compat_mode(kvikio::CompatMode::ON);
  kvikio::defaults::set_thread_pool_nthreads(8);  // a ring of 16 x 4 MiB, larger than a starter
  kvikio::test::TempDir const dir;
  std::string const log = dir.file("log");
  auto& logger          = kvikio::detail::Logger::instance();
  ASSERT_TRUE(logger.set_file(log));
  std::string const path = dir.file("data");
  auto const content     = pattern((1 << 20) + 5, 85);
  kvikio::test::write_file(path, content);
  CUdevice device{};
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGet(&device, 0));
  FileHandle f{path, "r"};
  for (int round = 0; round < 10; ++round) {  // more rings than are kept: some are freed
    CUcontext own{};
    KVIKIO_CUDA_DRIVER_TRY(api().CtxCreate(&own, nullptr, 0, device));
    {
      kvikio::test::DeviceBuffer const dev{content.size()};
      kvikio::test::Stream const stream;
      read_whole_file_and_check(f, dev, stream, content, "in a context the program made");
    }
    KVIKIO_CUDA_DRIVER_TRY(api().CtxDestroy(own));
  }
  kvikio::detail::wait_for_staging_pinning();
  EXPECT_EQ(kvikio::detail::free_idle_staging(), 8U) << "the rings kept, all idle";
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 0U);
  {
    kvikio::PushAndPopContext const primary{kvikio::get_primary_cuda_context(0)};
    kvikio::test::DeviceBuffer const dev{content.size()};
    kvikio::test::Stream const stream;
    read_whole_file_and_check(f, dev, stream, content, "in the primary context, afterwards");
  }
  ASSERT_TRUE(logger.set_file(""));
  auto const logged = kvikio::test::read_file(log);
  std::string const text{logged.begin(), logged.end()};
  EXPECT_EQ(text.find(" error ["), std::string::npos) << text;
}

// CUDASIM_REUSE_CONTEXT_HANDLES=1 (ctest): a context made after another was destroyed gets its
// handle, as a driver may give it. Reads on the legacy default stream (the same handle in every
// context) in each: the second context gets a ring of its own, not the ended one's (whose
// registration ended with it: its copies would take the slots' bytes before they are read).
TEST(StagingOfEndedContexts, ANewContextWithAnEndedOnesHandleGetsARingOfItsOwn)
{
  if (std::getenv("CUDASIM_REUSE_CONTEXT_HANDLES") == nullptr) {
    GTEST_SKIP() << "runs with CUDASIM_REUSE_CONTEXT_HANDLES set (ctest)";
  }
  kvikio::test::TempDir const dir;
  std::string const path = dir.file("data");
  auto const content     = pattern((1 << 20) + 5, 86);
  use_small_rings(path, content);
  FileHandle f{path, "r"};
  CUdevice device{};
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGet(&device, 0));
  CUcontext previous{};
  for (int round = 0; round < 2; ++round) {
    CUcontext own{};
    KVIKIO_CUDA_DRIVER_TRY(api().CtxCreate(&own, nullptr, 0, device));
    if (round == 1) { ASSERT_EQ(own, previous) << "the simulator did not reuse the handle"; }
    {
      kvikio::test::DeviceBuffer const dev{content.size()};
      KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8(dev.ptr, 0xA5, content.size()));
      auto future = f.read_async(dev.get(), content.size(), 0, 0, nullptr);
      EXPECT_EQ(future.check_bytes_done(), content.size());
      std::vector<std::uint8_t> back(content.size());
      KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
      EXPECT_EQ(back, content) << "context " << round;
    }
    KVIKIO_CUDA_DRIVER_TRY(api().CtxDestroy(own));
    previous = own;
  }
}

}  // namespace

namespace {
class StreamOrderedArguments : public kvikio::test::OnDevice {};
}  // namespace

// Pageable host memory is refused by the call itself, with one error that names the call and
// says what to use instead; nothing is logged and the buffer is not written.
TEST_F(StreamOrderedArguments, PageableHostMemoryIsOneClearError)
{
  kvikio::test::TempDir const dir;
  std::string const path = dir.file("data");
  std::string const log  = dir.file("log");
  kvikio::test::write_file(path, pattern(4096, 7));
  auto& logger = kvikio::detail::Logger::instance();
  ASSERT_TRUE(logger.set_file(log));
  logger.set_level(kvikio::detail::LogLevel::info);
  std::vector<std::uint8_t> host(4096, poison);
  std::string message;
  {
    kvikio::FileHandle file{path, "r"};
    try {
      (void)file.read_async(host.data(), host.size(), 0, 0, nullptr).check_bytes_done();
    } catch (std::invalid_argument const& e) {
      message = e.what();
    }
  }
  logger.set_level(kvikio::detail::LogLevel::warn);
  ASSERT_TRUE(logger.set_file(""));
  EXPECT_NE(message.find("FileHandle::read_async: the buffer at "), std::string::npos) << message;
  EXPECT_NE(message.find("is pageable host memory"), std::string::npos) << message;
  EXPECT_NE(message.find("use pread()"), std::string::npos) << message;
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](std::uint8_t b) { return b == poison; }));
  auto const logged = kvikio::test::read_file(log);
  std::string const text{logged.begin(), logged.end()};
  EXPECT_EQ(text.find(" error ["), std::string::npos) << text;
  EXPECT_EQ(text.find(" warn ["), std::string::npos) << text;
}
