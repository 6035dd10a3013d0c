/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Observation hooks (observation.hpp): one observation per user call at every entry point (local
 * host and device, blocking, stream-ordered, Mmap, remote on both transports, batches), failed
 * calls recorded as failed, refused calls not at all, and the registry under concurrent use.
 * SummaryMonitor, which builds on them, is test_summary.cpp.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/batch_read.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/observation.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/statistics/counters.hpp>

#include "common/device.hpp"
#include "common/nginx.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "common/test_servers.hpp"

using kvikio::IoBackend;
using kvikio::MemoryKind;
using kvikio::Observation;
using kvikio::TransferDirection;
using kvikio::test::pattern;
using kvikio::test::poison;

namespace {

// Keeps every observation it is told of, with the source copied (a view is valid only during
// the callback).
class Recorder : public kvikio::Monitor {
 public:
  struct Seen {
    Observation observation;
    std::string source;
  };
  Recorder() : id_{kvikio::register_monitor(this)} {}
  ~Recorder() override { kvikio::unregister_monitor(id_); }
  void on_start(Observation const& o) noexcept override
  {
    std::lock_guard const lock{mutex_};
    started_.push_back({o, std::string{o.source}});
  }
  void on_finish(Observation const& o) noexcept override
  {
    std::lock_guard const lock{mutex_};
    finished_.push_back({o, std::string{o.source}});
  }
  std::vector<Seen> finished() const
  {
    std::lock_guard const lock{mutex_};
    return finished_;
  }
  std::vector<Seen> started() const
  {
    std::lock_guard const lock{mutex_};
    return started_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Seen> started_;
  std::vector<Seen> finished_;
  std::uint64_t id_;
};

class Observations : public kvikio::test::OnDevice {
 protected:
  void SetUp() override
  {
    OnDevice::SetUp();
    if (IsSkipped()) { return; }
    kvikio::defaults::set_compat_mode(kvikio::CompatMode::ON);
    kvikio::test::write_file(path_, content_);
  }
  void expect_one(Recorder const& r,
                  IoBackend backend,
                  TransferDirection direction,
                  MemoryKind memory,
                  std::size_t offset,
                  std::size_t size,
                  std::size_t bytes,
                  bool ok = true)
  {
    auto const seen = r.finished();
    ASSERT_EQ(seen.size(), 1U);
    auto const& o = seen.front().observation;
    EXPECT_EQ(kvikio::to_string(o.backend), kvikio::to_string(backend));
    EXPECT_EQ(o.direction, direction);
    EXPECT_EQ(o.memory_kind, memory);
    EXPECT_EQ(o.offset, offset);
    EXPECT_EQ(o.size, size);
    EXPECT_EQ(o.bytes_transferred, bytes);
    EXPECT_EQ(o.ok, ok);
    EXPECT_NE(o.id, 0U);
    EXPECT_GE(o.end, o.start);
    ASSERT_EQ(r.started().size(), 1U);
    EXPECT_EQ(r.started().front().observation.id, o.id);
    EXPECT_EQ(r.started().front().observation.bytes_transferred, 0U);
  }
  kvikio::test::TempDir dir_;
  std::string path_                  = dir_.file("data");
  std::vector<std::uint8_t> content_ = pattern((3 << 20) + 77, 91);
};

TEST_F(Observations, NothingIsObservedWithoutAMonitor)
{
  EXPECT_FALSE(kvikio::detail::monitoring_enabled());
  Recorder r;
  EXPECT_TRUE(kvikio::detail::monitoring_enabled());
  EXPECT_THROW((void)kvikio::register_monitor(nullptr), std::invalid_argument);
}

TEST_F(Observations, AHostPreadIsOneObservationWhateverItsTasks)
{
  kvikio::FileHandle f{path_, "r"};
  Recorder r;
  std::vector<std::uint8_t> buf(content_.size(), poison);
  EXPECT_EQ(f.pread(buf.data(), buf.size() - 5, 5, 256 << 10).get(), buf.size() - 5);
  expect_one(r,
             IoBackend::POSIX,
             TransferDirection::READ,
             MemoryKind::HOST,
             5,
             buf.size() - 5,
             buf.size() - 5);
  EXPECT_EQ(r.finished().front().source, path_);
  // The handle owns what `source` views: it is still there after the callback.
  EXPECT_EQ(r.finished().front().observation.source, path_);
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + 5, buf.size() - 5));
}

TEST_F(Observations, ThePreadsObservationEndsBeforeItsFutureIsReady)
{
  kvikio::FileHandle f{path_, "r"};
  Recorder r;
  std::vector<std::uint8_t> buf(content_.size(), poison);
  auto future = f.pread(buf.data(), buf.size(), 0, 128 << 10);
  (void)future.get();
  EXPECT_EQ(r.finished().size(), 1U);  // delivered before get() returned
}

TEST_F(Observations, AWriteAndAFailedWriteAreObservedAsWrites)
{
  std::string const out = dir_.file("out");
  {
    kvikio::FileHandle f{out, "w"};
    Recorder r;
    EXPECT_EQ(f.pwrite(content_.data(), 100000, 0).get(), 100000U);
    expect_one(r, IoBackend::POSIX, TransferDirection::WRITE, MemoryKind::HOST, 0, 100000, 100000);
  }
  kvikio::FileHandle readonly{path_, "r"};
  Recorder r;
  EXPECT_ANY_THROW(readonly.pwrite(content_.data(), 4096, 0).get());
  // The arguments were fine; the write itself failed (the handle is read-only).
  expect_one(r, IoBackend::POSIX, TransferDirection::WRITE, MemoryKind::HOST, 0, 4096, 0, false);
}

TEST_F(Observations, ACallRefusedOnItsArgumentsIsNone)
{
  kvikio::FileHandle f{path_, "r"};
  Recorder r;
  std::vector<std::uint8_t> buf(4096, poison);
  EXPECT_THROW((void)f.pread(buf.data(), buf.size(), 0, 0), std::invalid_argument);
  EXPECT_THROW((void)f.pread(nullptr, buf.size(), 0), std::invalid_argument);
  EXPECT_EQ(r.finished().size(), 0U);
  EXPECT_EQ(r.started().size(), 0U);
}

TEST_F(Observations, AReadPastTheEndIsOneFailedObservation)
{
  kvikio::FileHandle f{path_, "r"};
  kvikio::test::DeviceBuffer dev{content_.size() + 4096};
  Recorder r;
  EXPECT_ANY_THROW(f.pread(dev.get(), content_.size() + 4096, 0).get());
  expect_one(r,
             IoBackend::POSIX,
             TransferDirection::READ,
             MemoryKind::DEVICE,
             0,
             content_.size() + 4096,
             0,
             false);
}

TEST_F(Observations, DeviceReadsBlockingAndStreamOrderedAreObservedOnce)
{
  kvikio::FileHandle f{path_, "r"};
  kvikio::test::DeviceBuffer dev{content_.size()};
  {
    Recorder r;
    EXPECT_EQ(f.pread(dev.get(), content_.size(), 0, 1 << 20).get(), content_.size());
    expect_one(r,
               IoBackend::POSIX,
               TransferDirection::READ,
               MemoryKind::DEVICE,
               0,
               content_.size(),
               content_.size());
  }
  {
    Recorder r;
    EXPECT_EQ(f.read(dev.get(), 4096, 10, 0), 4096U);
    expect_one(r, IoBackend::POSIX, TransferDirection::READ, MemoryKind::DEVICE, 10, 4096, 4096);
  }
  {
    Recorder r;
    kvikio::test::Stream stream;
    EXPECT_EQ(f.read_async(dev.get(), 70000, 3, 0, stream.handle).check_bytes_done(), 70000U);
    expect_one(r, IoBackend::POSIX, TransferDirection::READ, MemoryKind::DEVICE, 3, 70000, 70000);
  }
  std::vector<std::uint8_t> back(70000);
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(0, std::memcmp(back.data(), content_.data() + 3, back.size()));
}

TEST_F(Observations, MmapReadsAreTaggedMmapAndNameTheirFile)
{
  kvikio::MmapHandle m{path_, "r"};
  kvikio::MmapHandle moved{std::move(m)};
  std::vector<std::uint8_t> buf(1000, poison);
  {
    Recorder r;
    EXPECT_EQ(moved.read(buf.data(), 8, 16), 8U);
    expect_one(r, IoBackend::MMAP, TransferDirection::READ, MemoryKind::HOST, 16, 8, 8);
    EXPECT_EQ(r.finished().front().source, path_);
  }
  Recorder r;
  EXPECT_EQ(moved.pread(buf.data(), 1000, 500, 100).get(), 1000U);
  expect_one(r, IoBackend::MMAP, TransferDirection::READ, MemoryKind::HOST, 500, 1000, 1000);
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + 500, 1000));
}

TEST_F(Observations, EveryRangeOfABatchIsOneObservation)
{
  kvikio::FileHandle f{path_, "r"};
  std::vector<std::vector<std::uint8_t>> bufs(4, std::vector<std::uint8_t>(1000, poison));
  std::vector<kvikio::FileReadRequest> const requests{{&f, bufs[0].data(), 1000, 0},
                                                      {&f, bufs[1].data(), 1000, 1100},
                                                      {&f, bufs[2].data(), 1000, 2200},
                                                      {&f, bufs[3].data(), 1000, 900000}};
  Recorder r;
  auto futures = kvikio::file_batch_read(requests, {.coalesce_max_gap = 200});
  for (auto& future : futures) {
    EXPECT_EQ(future.get(), 1000U);
  }
  auto seen = r.finished();
  ASSERT_EQ(seen.size(), 4U);  // three merged into one read, and one alone: four calls
  std::vector<std::size_t> offsets;
  for (auto const& s : seen) {
    EXPECT_EQ(s.observation.bytes_transferred, 1000U);
    EXPECT_EQ(s.source, path_);
    offsets.push_back(s.observation.offset);
  }
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(offsets, (std::vector<std::size_t>{0, 1100, 2200, 900000}));
}

TEST_F(Observations, RemoteReadsAreObservedOnceWithTheirUrlWithoutItsQuery)
{
  kvikio::test::Nginx nginx;
  kvikio::test::write_file(nginx.root() + "/obj.bin", content_);
  auto handle = kvikio::RemoteHandle::open(nginx.url("obj.bin") + "?token=secret");
  std::vector<std::uint8_t> buf(content_.size(), poison);
  {
    Recorder r;
    EXPECT_EQ(handle.pread(buf.data(), 2000000, 7, 256 << 10).get(), 2000000U);
    expect_one(
      r, IoBackend::REMOTE_HTTP, TransferDirection::READ, MemoryKind::HOST, 7, 2000000, 2000000);
    EXPECT_EQ(r.finished().front().source, nginx.url("obj.bin"));
    EXPECT_EQ(r.finished().front().observation.source, nginx.url("obj.bin"));
    EXPECT_STREQ(r.finished().front().observation.http_method, "GET");
  }
  {
    Recorder r;
    EXPECT_EQ(handle.read(buf.data(), 100, 9), 100U);
    expect_one(r, IoBackend::REMOTE_HTTP, TransferDirection::READ, MemoryKind::HOST, 9, 100, 100);
  }
  Recorder r;
  EXPECT_THROW((void)handle.pread(buf.data(), 10, 0, 0), std::invalid_argument);
  EXPECT_THROW((void)handle.read(buf.data(), 10, content_.size()), std::invalid_argument);
  EXPECT_EQ(r.finished().size(), 0U);
  auto missing = kvikio::RemoteHandle::open(
    nginx.url("missing.bin"), kvikio::RemoteEndpointType::HTTP, std::nullopt, 100);
  EXPECT_ANY_THROW(missing.pread(buf.data(), 100, 0).get());
  expect_one(
    r, IoBackend::REMOTE_HTTP, TransferDirection::READ, MemoryKind::HOST, 0, 100, 0, false);
}

TEST_F(Observations, RemoteBatchesAndStreamOrderedReadsAreObservedPerCall)
{
  kvikio::test::Nginx nginx;
  kvikio::test::write_file(nginx.root() + "/obj.bin", content_);
  auto handle = kvikio::RemoteHandle::open(nginx.url("obj.bin"));
  std::vector<std::vector<std::uint8_t>> bufs(3, std::vector<std::uint8_t>(1000, poison));
  {
    Recorder r;
    std::vector<kvikio::RemoteReadRequest> const requests{{&handle, bufs[0].data(), 1000, 0},
                                                          {&handle, bufs[1].data(), 1000, 1050},
                                                          {&handle, bufs[2].data(), 1000, 800000}};
    for (auto& future : kvikio::remote_batch_read(requests, {.coalesce_max_gap = 100})) {
      EXPECT_EQ(future.get(), 1000U);
    }
    auto const seen = r.finished();
    ASSERT_EQ(seen.size(), 3U);
    for (auto const& s : seen) {
      EXPECT_EQ(s.observation.backend, IoBackend::REMOTE_HTTP);
      EXPECT_EQ(s.observation.bytes_transferred, 1000U);
      EXPECT_TRUE(s.observation.ok);
    }
    EXPECT_EQ(0, std::memcmp(bufs[1].data(), content_.data() + 1050, 1000));
  }
  kvikio::test::DeviceBuffer dev{5000};
  kvikio::test::Stream stream;
  Recorder r;
  EXPECT_EQ(handle.read_async(dev.get(), 5000, 77, stream.handle).check_bytes_done(), 5000U);
  expect_one(
    r, IoBackend::REMOTE_HTTP, TransferDirection::READ, MemoryKind::DEVICE, 77, 5000, 5000);
  std::vector<std::uint8_t> back(5000);
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(0, std::memcmp(back.data(), content_.data() + 77, back.size()));
}

// The remote transports' costs go to the process's counters on both transports: the size
// probe of an open, each connection's handshake, and each retry with its backoff.
TEST_F(Observations, RemoteCostsAreCountedInTheProcesssCounters)
{
  kvikio::test::MisbehavingServer server{100000};
  auto const before = kvikio::statistics::counters();
  auto handle       = kvikio::RemoteHandle::open(server.url("flaky/1/obj"),
                                           kvikio::RemoteEndpointType::HTTP);  // 503, then 200
  std::vector<std::uint8_t> buf(5000, poison);
  EXPECT_EQ(handle.pread(buf.data(), buf.size(), 100).get(), buf.size());
  for (std::size_t i = 0; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], kvikio::test::MisbehavingServer::byte(100 + i)) << i;
  }
  auto const spent = kvikio::statistics::counters().since(before);
  EXPECT_EQ(spent.remote_size_probes, 1U);
  EXPECT_GT(spent.remote_size_probing.count(), 0);
  EXPECT_GE(spent.http_connections, 1U);
  EXPECT_EQ(spent.http_retries, 1U);
  EXPECT_GT(spent.http_retry_backoff.count(), 0);
  // Opened with its size: no probe.
  auto const sized = kvikio::statistics::counters();
  (void)kvikio::RemoteHandle::open(
    server.url("ok/obj"), kvikio::RemoteEndpointType::HTTP, std::nullopt, 100000);
  EXPECT_EQ(kvikio::statistics::counters().since(sized).remote_size_probes, 0U);
}

// The observer must not call back into the library; a monitor that tries is refused, and so is
// one that (un)registers from a callback.
TEST_F(Observations, CallbacksCannotCallBackIntoKvikIO)
{
  struct Reentrant : kvikio::Monitor {
    kvikio::FileHandle* file{};
    std::atomic<int> refused{0};
    void on_start(Observation const&) noexcept override {}
    void on_finish(Observation const&) noexcept override
    {
      std::uint8_t b{};
      try {
        (void)file->pread(&b, 1, 0).get();
      } catch (std::runtime_error const&) {
        ++refused;
      }
      try {
        kvikio::unregister_monitor(1);
      } catch (std::runtime_error const&) {
        ++refused;
      }
    }
  } monitor;
  kvikio::FileHandle f{path_, "r"};
  monitor.file  = &f;
  auto const id = kvikio::register_monitor(&monitor);
  std::uint8_t b{};
  EXPECT_EQ(f.pread(&b, 1, 0).get(), 1U);
  kvikio::unregister_monitor(id);
  EXPECT_EQ(monitor.refused.load(), 2);
}

// Monitors come and go while sixteen threads read: each one registered sees only whole
// operations (every finish it counts after its own start has a start it saw, or began before
// it), unregistering returns only once its callbacks ended, and reads are never disturbed.
TEST_F(Observations, MonitorsComeAndGoUnderLoad)
{
  kvikio::FileHandle f{path_, "r"};
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 16; ++t) {
    readers.emplace_back([&, t] {
      std::vector<std::uint8_t> buf(4096);
      while (!stop) {
        std::size_t const offset = (t * 4099 + reads.load() * 13) % (content_.size() - 4096);
        if (f.pread(buf.data(), 4096, offset).get() != 4096 ||
            std::memcmp(buf.data(), content_.data() + offset, 4096) != 0) {
          ADD_FAILURE() << "a read was disturbed";
        }
        ++reads;
      }
    });
  }
  struct Counting : kvikio::Monitor {
    std::atomic<int> inside{0};
    std::atomic<std::size_t> started{0}, finished{0};
    void on_start(Observation const&) noexcept override
    {
      ++inside;
      ++started;
      --inside;
    }
    void on_finish(Observation const&) noexcept override
    {
      ++inside;
      std::this_thread::yield();
      ++finished;
      --inside;
    }
  };
  std::size_t seen = 0;
  for (int round = 0; round < 200; ++round) {
    auto monitor  = std::make_unique<Counting>();
    auto const id = kvikio::register_monitor(monitor.get());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    kvikio::unregister_monitor(id);
    EXPECT_EQ(monitor->inside.load(), 0);  // no callback still running
    seen += monitor->finished.load();
  }
  stop = true;
  for (auto& t : readers) {
    t.join();
  }
  EXPECT_GT(reads.load(), 0U);
  EXPECT_GT(seen, 0U);
}

}  // namespace
