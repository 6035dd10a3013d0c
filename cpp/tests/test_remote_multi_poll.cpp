/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What only the multi-poll transport has: many preads sharing one reactor, isolation of a
 * failed transfer, shutdown with transfers in flight (and process exit), settings read at each
 * pread, the per-handle choice of transport, no use of the thread pool. The shared remote suite
 * (test_remote_reads/http/faults/endpoints) runs for this transport too (".multi_poll").
 */
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/address_space.hpp"
#include "common/busy_pool.hpp"
#include "common/child_process.hpp"
#include "common/device.hpp"
#include "common/nginx.hpp"
#include "common/poison.hpp"
#include "common/test_servers.hpp"
#include "common/thread_names.hpp"
#include "remote/multi_poll.hpp"

using kvikio::RemoteBackendType;
using kvikio::RemoteEndpointType;
using kvikio::RemoteHandle;
using kvikio::test::MisbehavingServer;
using kvikio::test::pattern;

namespace {

using kvikio::test::poison;

class MultiPoll : public ::testing::Test {
 protected:
  void SetUp() override
  {
    kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
    kvikio::test::write_file(nginx_.root() + "/object.bin", content_);
  }
  RemoteHandle open() { return RemoteHandle::open(nginx_.url("object.bin")); }
  kvikio::test::Nginx nginx_;
  std::vector<std::uint8_t> content_ = pattern((4 << 20) + 321, 71);
};

TEST_F(MultiPoll, ManyConcurrentPreadsShareOneReactor)
{
  kvikio::defaults::set_remote_io_num_reactors(1);
  kvikio::defaults::set_remote_max_connections(8);
  auto handle = open();
  // 8 threads x 4 preads, each of several chunks, all in flight on one reactor at once.
  std::vector<std::thread> threads;
  std::vector<std::string> failures(8);
  for (unsigned t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::vector<std::uint8_t>> bufs(4);
      std::vector<std::future<std::size_t>> futures;
      for (unsigned i = 0; i < 4; ++i) {
        std::size_t const offset = (t * 4 + i) * 4099;
        bufs[i].assign(300000, poison);
        futures.push_back(handle.pread(bufs[i].data(), bufs[i].size(), offset, 64 << 10));
      }
      for (unsigned i = 0; i < 4; ++i) {
        std::size_t const offset = (t * 4 + i) * 4099;
        if (futures[i].get() != bufs[i].size() ||
            std::memcmp(bufs[i].data(), content_.data() + offset, bufs[i].size()) != 0) {
          failures[t] += "pread " + std::to_string(i) + " of thread " + std::to_string(t) + "; ";
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  for (auto const& f : failures) {
    EXPECT_TRUE(f.empty()) << f;
  }
  EXPECT_EQ(kvikio::detail::MultiPollTransport::instance().num_reactors(), 1U);
}

TEST_F(MultiPoll, ReactorThreadsAreNamed)
{
  kvikio::defaults::set_remote_io_num_reactors(2);
  auto handle = open();
  std::vector<std::uint8_t> buf(1 << 20, poison);
  EXPECT_EQ(handle.pread(buf.data(), buf.size(), 0, 64 << 10).get(), buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data(), buf.size()));
  EXPECT_EQ(kvikio::test::unnamed_threads(), std::vector<std::string>{});
  EXPECT_GE(kvikio::test::threads_named("kvikio-poll-"), 1U);
}

TEST(MultiPollFaults, OneFailedTransferFailsOnlyItsOwnPread)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  kvikio::defaults::set_remote_io_num_reactors(2);
  std::size_t const size = 200000;
  MisbehavingServer server{size};
  auto good = RemoteHandle::open(server.url("ok/a"), RemoteEndpointType::HTTP, std::nullopt, size);
  auto bad =
    RemoteHandle::open(server.url("reset/b"), RemoteEndpointType::HTTP, std::nullopt, size);
  std::vector<std::vector<std::uint8_t>> bufs(6, std::vector<std::uint8_t>(size, poison));
  std::vector<std::future<std::size_t>> futures;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    futures.push_back((i == 3 ? bad : good).pread(bufs[i].data(), size, 0, 32 << 10));
  }
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    if (i == 3) {
      EXPECT_THROW(futures[i].get(), std::runtime_error);
      continue;
    }
    ASSERT_EQ(futures[i].get(), size);
    for (std::size_t j = 0; j < size; ++j) {
      ASSERT_EQ(bufs[i][j], MisbehavingServer::byte(j)) << "pread " << i << " at " << j;
    }
  }
}

TEST(MultiPollFaults, ShutdownWithTransfersInFlightFailsThemAndTheNextPreadWorks)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  kvikio::defaults::set_remote_io_num_reactors(1);
  kvikio::defaults::set_remote_max_connections(2);  // 2 chunks in flight, 5 still queued
  std::size_t const size = 100000;
  MisbehavingServer server{size};
  auto stalled =
    RemoteHandle::open(server.url("stall/x"), RemoteEndpointType::HTTP, std::nullopt, size);
  std::vector<std::uint8_t> buf(size, poison);
  auto future = stalled.pread(buf.data(), size, 0, 16 << 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the requests go out
  kvikio::detail::MultiPollTransport::instance().shutdown();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)), std::future_status::ready)
    << "shutdown() returned before failing what was in flight";
  try {
    (void)future.get();
    FAIL() << "a read cut by shutdown succeeded";
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("shut down"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kvikio::detail::MultiPollTransport::instance().num_reactors(), 0U);
  auto ok = RemoteHandle::open(server.url("ok/x"), RemoteEndpointType::HTTP, std::nullopt, size);
  ASSERT_EQ(ok.pread(buf.data(), size, 0, 16 << 10).get(), size);
  EXPECT_EQ(buf[size - 1], MisbehavingServer::byte(size - 1));
}

// PER_CHUNK: a reactor takes the next chunk when it has room, so chunks do not wait behind a
// reactor whose transfer stalls (the server sends headers, then nothing for 30 s) while another
// reactor is free. (Chunks dealt to the reactors in turn would leave half of the second pread's
// behind the stall.)
TEST(MultiPollFaults, AStalledReactorLeavesTheNextChunksToAnother)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  kvikio::defaults::set_remote_io_num_reactors(2);
  kvikio::defaults::set_remote_max_connections(1);
  kvikio::defaults::set_remote_io_reactor_dispatch(kvikio::RemoteReactorDispatch::PER_CHUNK);
  std::size_t const size = 80000;
  MisbehavingServer server{size};
  auto stalled =
    RemoteHandle::open(server.url("stall/z"), RemoteEndpointType::HTTP, std::nullopt, size);
  auto ok = RemoteHandle::open(server.url("ok/z"), RemoteEndpointType::HTTP, std::nullopt, size);
  // Declared after the handles, so destroyed before them: on a failed assertion below, the
  // stalled read is ended at once instead of keeping the handle's destructor waiting (it waits
  // for its reads) until the HTTP timeout.
  struct ShutdownAtExit {
    ShutdownAtExit()                                 = default;
    ShutdownAtExit(ShutdownAtExit const&)            = delete;
    ShutdownAtExit& operator=(ShutdownAtExit const&) = delete;
    ~ShutdownAtExit() { kvikio::detail::MultiPollTransport::instance().shutdown(); }
  } const shutdown_at_exit;
  std::vector<std::uint8_t> stalled_buf(1000, poison);
  auto held = stalled.pread(stalled_buf.data(), stalled_buf.size(), 0, 1000);
  std::vector<std::uint8_t> buf(size + 64, poison);
  auto future = ok.pread(buf.data() + 32, size, 0, 10000);  // 8 chunks
  ASSERT_EQ(future.wait_for(std::chrono::seconds(15)), std::future_status::ready)
    << "chunks waited behind the stalled transfer";
  ASSERT_EQ(future.get(), size);
  for (std::size_t j = 0; j < size; ++j) {
    ASSERT_EQ(buf[32 + j], MisbehavingServer::byte(j)) << "at " << j;
  }
  for (std::size_t j = 0; j < 32; ++j) {
    ASSERT_EQ(buf[j], poison);
    ASSERT_EQ(buf[32 + size + j], poison);
  }
  EXPECT_EQ(held.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  kvikio::detail::MultiPollTransport::instance().shutdown();  // ends the stalled read
  EXPECT_THROW(held.get(), std::runtime_error);
}

// A process that exits with reads in flight neither hangs nor crashes.
TEST(MultiPollFaults, ExitWithTransfersInFlight)
{
  std::size_t const size = 100000;
  MisbehavingServer server{size};
  pid_t const child = ::fork();
  if (child == 0) {
    kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
    static std::vector<std::uint8_t> buf(size);
    static auto stalled =
      RemoteHandle::open(server.url("stall/y"), RemoteEndpointType::HTTP, std::nullopt, size);
    static auto future = stalled.pread(buf.data(), size, 0, 16 << 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::exit(0);
  }
  ASSERT_GT(child, 0);
  int status       = 0;
  auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      FAIL() << "the process did not exit within 20 s with a read in flight";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Run in a child (below), with the address space capped: reactors whose threads cannot start are
// an error that says which thread, which limits and which setting, not a bare EAGAIN.
TEST_F(MultiPoll, DISABLED_ReactorThreadsTheSystemRefuses)
{
  kvikio::defaults::set_remote_io_num_reactors(256);
  auto handle      = open();
  rlimit const old = kvikio::test::cap_address_space();
  std::vector<std::uint8_t> buf(content_.size());
  std::string what;
  try {
    (void)handle.pread(buf.data(), buf.size(), 0, 64 << 10).get();
  } catch (std::system_error const& e) {
    what = e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_NE(what.find("reactor thread"), std::string::npos) << "message: " << what;
  EXPECT_NE(what.find("KVIKIO_REMOTE_IO_NUM_REACTORS"), std::string::npos) << "message: " << what;
  kvikio::detail::MultiPollTransport::instance().shutdown();
}

TEST(MultiPollLimits, ReactorThreadsTheSystemRefusesAreNamed)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's runtime reserves terabytes of address space, so capping it "
                  "(how this test makes thread creation fail) breaks the runtime; the Release "
                  "build runs it";
#else
  EXPECT_EQ(kvikio::test::run_child_test("DISABLED_ReactorThreadsTheSystemRefuses", {}), 0);
#endif
}

TEST_F(MultiPoll, SettingsAreReadAtEachPread)
{
  auto handle = open();  // built with the defaults of SetUp
  kvikio::defaults::set_remote_io_num_reactors(3);
  kvikio::defaults::set_remote_max_connections(2);
  kvikio::defaults::set_http_max_attempts(1);
  std::vector<std::uint8_t> buf(content_.size(), poison);
  ASSERT_EQ(handle.pread(buf.data(), buf.size(), 0, 100000).get(), buf.size());
  EXPECT_EQ(buf, content_);
  EXPECT_EQ(kvikio::detail::MultiPollTransport::instance().num_reactors(), 3U);
  kvikio::defaults::set_remote_io_max_concurrent_requests(1);  // overrides the per-reactor value
  buf.assign(buf.size(), poison);
  ASSERT_EQ(handle.pread(buf.data(), buf.size(), 0, 1 << 20).get(), buf.size());
  EXPECT_EQ(buf, content_);
}

// The thread pool's only thread is busy: a multi-poll pread of 64 chunks still completes, so it
// used no pool thread. The easy transport, chosen for one handle, waits for the pool.
TEST_F(MultiPoll, UsesNoPoolThreadAndTheChoiceIsPerHandle)
{
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::test::BusyPool busy;
  auto handle = open();
  std::vector<std::uint8_t> buf(64 * 65536, poison);
  auto multi = handle.pread(buf.data(), buf.size(), 7, 65536);
  ASSERT_EQ(multi.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  ASSERT_EQ(multi.get(), buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + 7, buf.size()));

  auto easy = open();
  easy.set_remote_backend(RemoteBackendType::LIBCURL_EASY);
  EXPECT_EQ(easy.remote_backend(), RemoteBackendType::LIBCURL_EASY);
  auto queued = easy.pread(buf.data(), 1000, 0, 1000);
  EXPECT_EQ(queued.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
    << "the easy transport ran without a pool thread";
  busy.release();
  EXPECT_EQ(queued.get(), 1000U);
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data(), 1000));
}

// The reactor's epoll set keeps a connection that libcurl put back in its cache (the next
// transfer usually wants it again). A server that closes every connection after its response
// makes each transfer open a new socket, often under the number of one just closed: every
// transfer must still be watched (a socket number the set forgot is added again). A transfer
// left unwatched still ends, when libcurl looks at its socket at one of its own timeouts: the
// 256 transfers then take minutes instead of about a second.
TEST(MultiPollConnections, EveryResponseClosesItsConnection)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  kvikio::defaults::set_remote_io_num_reactors(1);
  kvikio::defaults::set_remote_max_connections(4);
  kvikio::test::Nginx nginx{"keepalive_timeout 0;"};
  auto const content = pattern((1 << 20) + 77, 72);
  kvikio::test::write_file(nginx.root() + "/object.bin", content);
  auto handle = RemoteHandle::open(nginx.url("object.bin"));
  std::vector<std::uint8_t> buf(content.size() - 1000, poison);
  auto future = handle.pread(buf.data(), buf.size(), 1000, 4 << 10);  // 256 transfers
  if (future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    kvikio::detail::MultiPollTransport::instance().shutdown();  // ends them, for the handle
    FAIL() << "transfers on new sockets were not watched";
  }
  ASSERT_EQ(future.get(), buf.size());
  EXPECT_EQ(0, std::memcmp(buf.data(), content.data() + 1000, buf.size()));
}

// Connections idle in libcurl's cache that the server closes (keepalive timeout) make their
// sockets readable: the reactor takes them out of its set instead of waking for them again and
// again (a busy reactor would show as CPU time while nothing is read), and the next read opens
// new connections.
TEST(MultiPollConnections, IdleConnectionsTheServerClosesCostNothing)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  kvikio::defaults::set_remote_io_num_reactors(1);
  kvikio::defaults::set_remote_max_connections(4);
  kvikio::test::Nginx nginx{"keepalive_timeout 1s;"};
  auto const content = pattern(300000, 73);
  kvikio::test::write_file(nginx.root() + "/object.bin", content);
  auto handle = RemoteHandle::open(nginx.url("object.bin"));
  std::vector<std::uint8_t> buf(content.size(), poison);
  ASSERT_EQ(handle.pread(buf.data(), buf.size(), 0, 50000).get(), buf.size());
  EXPECT_EQ(buf, content);

  auto const cpu_seconds = [] {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  };
  double const before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // nginx closes them after 1 s
  // A reactor woken again and again by the closed sockets takes a core's worth of this time.
  EXPECT_LT(cpu_seconds() - before, 0.5) << "the process was busy while nothing was read";

  buf.assign(buf.size(), poison);
  ASSERT_EQ(handle.pread(buf.data(), buf.size(), 0, 50000).get(), buf.size());
  EXPECT_EQ(buf, content);
}

// A device transfer takes its pinned memory when the first bytes of the body arrive: while the
// server sends headers and then nothing, the pool lends no buffer and allocates none (so
// transfers connect without waiting for pinned memory, and a stalled one holds none).
class DeviceSink : public kvikio::test::OnDevice {};

TEST_F(DeviceSink, NoPinnedMemoryBeforeTheFirstByte)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  std::size_t const size = 100000;
  MisbehavingServer server{size};
  auto stalled =
    RemoteHandle::open(server.url("stall/d"), RemoteEndpointType::HTTP, std::nullopt, size);
  auto ok = RemoteHandle::open(server.url("ok/d"), RemoteEndpointType::HTTP, std::nullopt, size);
  kvikio::test::DeviceBuffer dev{size};
  ASSERT_EQ(ok.pread(dev.get(), size, 0, size / 4).get(), size);  // the pool has buffers now
  auto& pool = kvikio::BounceBufferPool<>::instance();
  auto& part = pool.part_pool_for(size / 4);  // where a range of size / 4 takes its staging
  std::size_t const pinned    = pool.pinned_bytes();
  std::size_t const available = part.num_free_buffers();
  ASSERT_GT(available, 0U);

  auto held = stalled.pread(dev.get(), size, 0, size / 4);  // 4 transfers, all stalled
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(held.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  EXPECT_EQ(pool.bytes_on_loan(), 0U) << "a stalled transfer took a bounce buffer";
  EXPECT_EQ(part.num_free_buffers(), available);
  EXPECT_EQ(pool.pinned_bytes(), pinned) << "a stalled transfer allocated pinned memory";
  kvikio::detail::MultiPollTransport::instance().shutdown();
  EXPECT_THROW(held.get(), std::runtime_error);

  std::vector<std::uint8_t> back(size);
  ASSERT_EQ(ok.pread(dev.get(), size, 0, size / 3).get(), size);  // and the next read works
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, size));
  for (std::size_t j = 0; j < size; ++j) {
    ASSERT_EQ(back[j], MisbehavingServer::byte(j)) << "at " << j;
  }
}

// The same on the easy transport, whose pool threads connect together at the start of a pread.
// The stalled transfers end by the HTTP timeout.
TEST_F(DeviceSink, NoPinnedMemoryBeforeTheFirstByteOnTheEasyTransport)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_EASY);
  kvikio::defaults::set_thread_pool_nthreads(4);
  kvikio::defaults::set_http_timeout(2);
  kvikio::defaults::set_http_max_attempts(1);
  std::size_t const size = 100000;
  MisbehavingServer server{size};
  auto stalled =
    RemoteHandle::open(server.url("stall/e"), RemoteEndpointType::HTTP, std::nullopt, size);
  auto ok = RemoteHandle::open(server.url("ok/e"), RemoteEndpointType::HTTP, std::nullopt, size);
  kvikio::test::DeviceBuffer dev{size};
  ASSERT_EQ(ok.pread(dev.get(), size, 0, size / 4).get(), size);  // the pool has buffers now
  auto& pool = kvikio::BounceBufferPool<>::instance();
  auto& part = pool.part_pool_for(size / 4);  // where a range of size / 4 takes its staging
  std::size_t const pinned    = pool.pinned_bytes();
  std::size_t const available = part.num_free_buffers();
  ASSERT_GT(available, 0U);

  auto held = stalled.pread(dev.get(), size, 0, size / 4);  // 4 transfers on 4 pool threads
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(held.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  EXPECT_EQ(pool.bytes_on_loan(), 0U) << "a stalled transfer took a bounce buffer";
  EXPECT_EQ(part.num_free_buffers(), available);
  EXPECT_EQ(pool.pinned_bytes(), pinned) << "a stalled transfer allocated pinned memory";
  EXPECT_THROW(held.get(), std::runtime_error);  // the timeout
}

// A range smaller than a bounce buffer holds only the pinned memory it fills, a smaller buffer of
// the pool's: 32 ranges in flight at once (the reader's workload) hold 32 of those, not 32 bounce
// buffers (512 MiB by default). Both transports share the sink.
TEST_F(DeviceSink, SmallRangesHoldOnlyWhatTheyFill)
{
  std::size_t const range = 40000;
  std::size_t const n     = 32;
  kvikio::defaults::set_thread_pool_nthreads(8);
  kvikio::defaults::set_remote_max_connections(n);
  kvikio::test::Nginx server;
  auto const content = pattern(range * n + 99, 74);
  kvikio::test::write_file(server.root() + "/object.bin", content);
  kvikio::test::DeviceBuffer dev{range * n + 128};
  kvikio::BounceBufferPool<>::instance().clear();
  for (auto backend : {RemoteBackendType::LIBCURL_MULTI_POLL, RemoteBackendType::LIBCURL_EASY}) {
    kvikio::defaults::set_remote_backend(backend);
    auto handle = RemoteHandle::open(server.url("object.bin"));
    std::vector<std::uint8_t> back(range * n + 128, poison);
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyHtoD(dev.ptr, back.data(), back.size()));
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().CtxSynchronize());
    auto* dst = static_cast<char*>(dev.get()) + 64;
    ASSERT_EQ(handle.pread(dst, range * n, 99, range).get(), range * n);
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
    ASSERT_EQ(0, std::memcmp(back.data() + 64, content.data() + 99, range * n));
    for (std::size_t i = 0; i < 64; ++i) {
      ASSERT_EQ(back[i], poison);
      ASSERT_EQ(back[64 + range * n + i], poison);
    }
  }
  auto& pool = kvikio::BounceBufferPool<>::instance();
  auto& part = pool.part_pool_for(range);
  EXPECT_EQ(pool.num_free_buffers(), 0U) << "a small range took a whole bounce buffer";
  EXPECT_GT(part.num_free_buffers(), 0U) << "the ranges staged elsewhere than the part pool";
  EXPECT_EQ(pool.pinned_bytes(), part.num_free_buffers() * part.buffer_size());
  EXPECT_LE(part.num_free_buffers(), n);
}

// Small slots and many transfers make the reactor pause transfers whose next slot is still
// being copied, and resume them; every byte must land once, in place. Under the simulator the
// copies are slowed down (CUDASIM_DELAY_US, read when the driver starts) so that pauses happen.
class SlowCopies : public kvikio::test::OnDevice {
 protected:
  void SetUp() override
  {
    ::setenv("CUDASIM_DELAY_US", "300", 1);
    OnDevice::SetUp();
  }
};

// A transfer whose last copy outlasts the reactor's watch of it (300 us copies under the
// simulator, a 50 us watch) still ends: when the watch ends, the reactor asks for the host
// function that wakes it once the copy is done. (On a GPU the copy ends within the watch.)
TEST_F(SlowCopies, AFinishedTransferWhoseCopyOutlastsTheWatchEnds)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  kvikio::test::Nginx server;
  auto const content = pattern(40000, 73);
  kvikio::test::write_file(server.root() + "/small.bin", content);
  auto handle = RemoteHandle::open(server.url("small.bin"));
  kvikio::test::DeviceBuffer dev{content.size()};
  auto read = handle.pread(dev.get(), content.size(), 0);
  ASSERT_EQ(read.wait_for(std::chrono::seconds(20)), std::future_status::ready)
    << "a transfer whose copy outlasted the watch never ended";
  EXPECT_EQ(read.get(), content.size());
  std::vector<std::uint8_t> back(content.size());
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content);
}

TEST_F(SlowCopies, MultiPollDeviceReadsPauseAndResume)
{
  kvikio::defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
  kvikio::defaults::set_bounce_buffer_size(64 << 10);
  kvikio::defaults::set_num_bounce_buffers(2);
  kvikio::defaults::set_remote_max_connections(16);
  kvikio::test::Nginx server;
  auto const content = pattern((3 << 20) + 77, 72);
  kvikio::test::write_file(server.root() + "/object.bin", content);
  auto handle = RemoteHandle::open(server.url("object.bin"));
  kvikio::test::DeviceBuffer dev{content.size() + 128};
  std::vector<std::uint8_t> fill(content.size() + 128, poison);
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyHtoD(dev.ptr, fill.data(), fill.size()));
  // From pageable memory the copy may still be in flight when MemcpyHtoD returns.
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().CtxSynchronize());
  auto* dst = static_cast<char*>(dev.get()) + 64;
  ASSERT_EQ(handle.pread(dst, content.size(), 0, 200 << 10).get(), content.size());
  std::vector<std::uint8_t> back(fill.size());
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  ASSERT_EQ(0, std::memcmp(back.data() + 64, content.data(), content.size()));
  for (std::size_t i = 0; i < 64; ++i) {
    ASSERT_EQ(back[i], poison);
    ASSERT_EQ(back[64 + content.size() + i], poison);
  }
  if (kvikio::test::on_simulator()) {
    EXPECT_GT(kvikio::detail::MultiPollTransport::instance().num_resumed(), 0U)
      << "no transfer was paused: the test did not exercise what it is for";
  }
}

}  // namespace
