/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The fault matrix of the local entry points: FileHandle pread/pwrite (host and device),
 * read/write, read_async/write_async, MmapHandle pread/read (host and device), on each local
 * backend (".io_uring" in ctest), through
 *   - a driver failure at each step: every call the operation makes to the driver, failed in
 *     turn (the simulator's cudasim_fail_call, armed at run time),
 *   - a file truncated under the read,
 *   - signals delivered to every thread during the I/O (EINTR, no SA_RESTART),
 *   - writes past RLIMIT_FSIZE (EFBIG),
 * with the checks of common/fault_matrix.hpp around every case.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/mmap.hpp>

#include "common/fault_matrix.hpp"

using kvikio::test::EntryPoint;
using kvikio::test::Memory;
using kvikio::test::Outcome;
using kvikio::test::pattern;

namespace {

class FaultMatrix : public kvikio::test::FaultMatrixBase {
 protected:
  /// The local entry points, on handles of path_ opened now.
  std::vector<EntryPoint> local_entry_points()
  {
    file_ = std::make_unique<kvikio::FileHandle>(path_, "r+");
    mmap_ = std::make_unique<kvikio::MmapHandle>(path_, "r");
    std::vector<EntryPoint> out;
    for (bool const device : {false, true}) {
      out.push_back({"FileHandle::pread", device, false, [this](void* m, auto n, auto off) {
                       return file_->pread(m, n, off).get();
                     }});
      out.push_back({"FileHandle::pwrite", device, true, [this](void* m, auto n, auto off) {
                       return file_->pwrite(m, n, off).get();
                     }});
      out.push_back({"MmapHandle::pread", device, false, [this](void* m, auto n, auto off) {
                       return mmap_->pread(m, n, off).get();
                     }});
      out.push_back({"MmapHandle::read", device, false, [this](void* m, auto n, auto off) {
                       return mmap_->read(m, n, off);
                     }});
    }
    out.push_back({"FileHandle::read", true, false, [this](void* m, auto n, auto off) {
                     return file_->read(m, n, off, 0);
                   }});
    out.push_back({"FileHandle::write", true, true, [this](void* m, auto n, auto off) {
                     return file_->write(m, n, off, 0);
                   }});
    out.push_back({"FileHandle::read_async", true, false, [this](void* m, auto n, auto off) {
                     auto f = file_->read_async(m, n, static_cast<off_t>(off), 0, stream_);
                     return f.check_bytes_done();
                   }});
    out.push_back({"FileHandle::write_async", true, true, [this](void* m, auto n, auto off) {
                     auto f = file_->write_async(m, n, static_cast<off_t>(off), 0, stream_);
                     return f.check_bytes_done();
                   }});
    return out;
  }

  /// Runs `e` over [offset, offset + size) and checks the case: guards, pools, descriptors,
  /// the file outside the range (writes). Returns the outcome.
  std::unique_ptr<kvikio::FileHandle> file_;
  std::unique_ptr<kvikio::MmapHandle> mmap_;
};

// Every driver call of every device entry point, failed in turn.
TEST_F(FaultMatrix, DriverFailureAtEachStep)
{
  if (!kvikio::test::on_simulator()) {
    GTEST_SKIP() << "failing driver calls at run time needs the simulator";
  }
  every_driver_failure(local_entry_points());
}

// A read of one chunk in all (3000 bytes: less than one 4 KiB slot of the ring) takes its own
// path, one bounce buffer, one copy and one wait on the stream: every driver call of it failed in
// turn too (writes of that size as well).
class FaultMatrixOneChunk : public FaultMatrix {
 protected:
  FaultMatrixOneChunk() { size_ = 3000; }
};

TEST_F(FaultMatrixOneChunk, DriverFailureAtEachStep)
{
  if (!kvikio::test::on_simulator()) {
    GTEST_SKIP() << "failing driver calls at run time needs the simulator";
  }
  every_driver_failure(local_entry_points());
}

// The file shrinks after the handles were opened: a read of the range now past its end fails
// clearly; nothing is written outside the destination.
TEST_F(FaultMatrix, FileTruncatedUnderTheRead)
{
  for (auto const& e : local_entry_points()) {
    if (e.writes) { continue; }
    warm_up(e);
    ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(offset_ + 1000)), 0);
    auto const out = run_case(e, size_, offset_, kvikio::test::describe(e) + ", truncated");
    EXPECT_FALSE(out.bytes.has_value())
      << kvikio::test::describe(e) << ": a read past the end succeeded";
    EXPECT_FALSE(out.error.empty());
    kvikio::test::write_file(path_, content_);
    expect_recovery(e, kvikio::test::describe(e) + ", truncated");
  }
}

// SIGUSR1 to every thread of the process, every 50 µs, during the I/O, with a handler that does
// not restart system calls: every transfer still moves exactly its bytes.
std::atomic<std::size_t> signals_caught{0};
void count_signal(int) { signals_caught.fetch_add(1, std::memory_order_relaxed); }

TEST_F(FaultMatrix, SignalsDuringTheIo)
{
  struct sigaction action {};
  action.sa_handler = count_signal;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR1, &action, nullptr), 0);
  std::atomic<bool> done{false};
  std::thread sender{[&] {
    pid_t const pid = ::getpid();
    while (!done.load()) {
      if (DIR* dir = ::opendir("/proc/self/task"); dir != nullptr) {
        while (auto* entry = ::readdir(dir)) {
          if (entry->d_name[0] == '.') { continue; }
          (void)::syscall(SYS_tgkill, pid, std::atoi(entry->d_name), SIGUSR1);
        }
        ::closedir(dir);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }};
  for (auto const& e : local_entry_points()) {
    warm_up(e);
    for (int round = 0; round < 5; ++round) {
      auto const out = run_case(e, size_, offset_, kvikio::test::describe(e) + ", under signals");
      EXPECT_TRUE(out.bytes.has_value())
        << kvikio::test::describe(e) << " under signals: " << out.error;
    }
  }
  done.store(true);
  sender.join();
  // Ignored from now on, not back to the default (termination): a signal may still be pending
  // on a thread that blocks it.
  ::signal(SIGUSR1, SIG_IGN);
  EXPECT_GT(signals_caught.load(), 0U) << "no signal landed";
}

// A write past RLIMIT_FSIZE (SIGXFSZ ignored) fails with EFBIG named, never reports success,
// and writes nothing outside its range.
TEST_F(FaultMatrix, WritePastTheFileSizeLimit)
{
  for (auto const& e : local_entry_points()) {
    if (!e.writes) { continue; }
    warm_up(e);
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    auto* const old_handler = ::signal(SIGXFSZ, SIG_IGN);
    // The write starts 1000 bytes past the file's end; the limit falls in its middle.
    std::size_t const end = content_.size();
    rlimit limited        = old;
    limited.rlim_cur      = end + 1000 + size_ / 2;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    Outcome out;
    {
      Memory mem{e.device, size_};
      mem.fill(pattern(size_, 97));
      out = kvikio::test::run_bounded([&] { return e.run(mem.ptr(), size_, end + 1000); },
                                      kvikio::test::describe(e) + ", past RLIMIT_FSIZE",
                                      ctx_);
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
    EXPECT_FALSE(out.bytes.has_value())
      << kvikio::test::describe(e) << ": a write past the limit succeeded";
    EXPECT_NE(out.error.find("File too large"), std::string::npos)
      << kvikio::test::describe(e) << ": the error does not say EFBIG: " << out.error;
    auto const after = kvikio::test::read_file(path_);
    EXPECT_TRUE(std::equal(content_.begin(), content_.end(), after.begin()))
      << kvikio::test::describe(e) << ": bytes before the write changed";
    kvikio::test::write_file(path_, content_);
    auto& buffers = kvikio::BounceBufferPool<>::instance();
    EXPECT_EQ(buffers.bytes_on_loan(), 0U);
    expect_descriptors(kvikio::test::describe(e) + ", past RLIMIT_FSIZE");
    expect_recovery(e, kvikio::test::describe(e) + ", past RLIMIT_FSIZE");
  }
}

}  // namespace
