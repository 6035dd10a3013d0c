/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What the fault-matrix tests share (test_fault_matrix: local entry points; and
 * test_remote_fault_matrix: remote ones): memory with poisoned guards, operations bounded in
 * time, the simulator's run-time failure injection, and a fixture whose run_case() checks each
 * case: a clear error (or, where the fault was absorbed, the right bytes), nothing written outside
 * the destination, the bounce buffers and events back in their pools, no descriptor left open,
 * no operation left hanging, and the next operation succeeding.
 */
#pragma once

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/event.hpp>

#include "device.hpp"
#include "parallel/stream_ordered.hpp"
#include "parallel/stream_workers.hpp"
#include "poison.hpp"
#include "temp_dir.hpp"

namespace kvikio::test {

// ---------------------------------------------------------------------------------------------
// What the test checks around every case.

/// Each open descriptor of this process with what it points to ("3", "/tmp/x"); one that closes
/// while it is listed (the signal sender's listing of /proc/self/task) is left out.
inline std::vector<std::pair<std::string, std::string>> descriptor_targets()
{
  std::vector<std::pair<std::string, std::string>> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) { return out; }
  while (auto* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') { continue; }
    std::string const link = std::string{"/proc/self/fd/"} + entry->d_name;
    char target[256]{};
    ssize_t const len = ::readlink(link.c_str(), target, sizeof(target) - 1);
    if (len <= 0) { continue; }
    out.emplace_back(entry->d_name, std::string{target, static_cast<std::size_t>(len)});
  }
  ::closedir(dir);
  return out;
}

/// Files mapped executable into this process: the test program and the shared objects it runs
/// (libkvikio, the sanitizer runtimes, libc, ...), which a sanitizer's symbolizer opens at will.
inline std::set<std::string> code_files()
{
  std::set<std::string> out;
  std::ifstream maps{"/proc/self/maps"};
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields{line};
    std::string range, perms, offset, device, inode, path;
    fields >> range >> perms >> offset >> device >> inode >> path;
    if (perms.size() > 2 && perms[2] == 'x' && path.rfind('/', 0) == 0) { out.insert(path); }
  }
  return out;
}

/// Open descriptors of this process, but for the test's own listings of /proc (this one, and
/// the signal sender's of /proc/self/task) and sockets: libcurl keeps connections open for
/// reuse, as many as its threads' handles have made (not a leak: a cache, bounded); the real
/// driver's device files; the files of the code mapped into the process (ThreadSanitizer opens
/// the test program, libkvikio or its own runtime to symbolize a report that a suppression then
/// drops); io_uring rings, which io_uring_rings() counts; and the core count that glibc reads
/// from /sys/devices/system/cpu (open for a moment, in whichever thread first allocates memory or
/// asks for it: a stream-ordered worker's first free can come after its operation reported);
/// and the NUMA nodes online, which pinning a staging block reads (open for a moment, on
/// whichever thread pins: the block pinned ahead at a process's first opening, or a stream's
/// full ring, is pinned on a thread of its own while the test goes on).
inline std::vector<std::string> open_descriptors()
{
  auto const code = code_files();
  std::vector<std::string> out;
  for (auto const& [fd, to] : descriptor_targets()) {
    if (code.count(to) != 0) { continue; }
    if (to.rfind("/proc/", 0) == 0 || to.rfind("socket:", 0) == 0) { continue; }
    if (to.rfind("/sys/devices/system/cpu/", 0) == 0) { continue; }
    if (to == "/sys/devices/system/node/online") { continue; }
    if (to.rfind("/dev/nvidia", 0) == 0) { continue; }  // the real driver's own, opened at will
    if (to == "anon_inode:[io_uring]") { continue; }    // per thread, at its first use: below
    out.push_back(fd + " -> " + to);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// io_uring rings open: one per thread that did local I/O on that backend, made at the thread's
/// first use and kept while it lives.
inline std::size_t io_uring_rings()
{
  auto const all = descriptor_targets();
  return static_cast<std::size_t>(std::count_if(
    all.begin(), all.end(), [](auto const& d) { return d.second == "anon_inode:[io_uring]"; }));
}

/// Memory an entry point reads into or writes from: host or device, with poisoned guards.
class Memory {
 public:
  Memory(bool device, std::size_t size) : device_{device}, size_{size}
  {
    if (device_) {
      dev_ = std::make_unique<DeviceBuffer>(size + 2 * guard);
    } else {
      host_.resize(size + 2 * guard);
    }
    fill({});
  }
  [[nodiscard]] void* ptr() const
  {
    return device_ ? static_cast<void*>(static_cast<std::uint8_t*>(dev_->get()) + guard)
                   : static_cast<void*>(const_cast<std::uint8_t*>(host_.data()) + guard);
  }
  /// Poisons everything, then puts `inside` at ptr().
  void fill(std::vector<std::uint8_t> const& inside)
  {
    std::vector<std::uint8_t> all(size_ + 2 * guard, poison);
    std::copy(inside.begin(), inside.end(), all.begin() + guard);
    if (device_) {
      KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev_->ptr, all.data(), all.size()));
      KVIKIO_CUDA_DRIVER_TRY(api().CtxSynchronize());  // a pageable source lands later
    } else {
      host_ = all;
    }
  }
  /// Everything, guards included.
  [[nodiscard]] std::vector<std::uint8_t> all() const
  {
    if (!device_) { return host_; }
    std::vector<std::uint8_t> out(size_ + 2 * guard);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(out.data(), dev_->ptr, out.size()));
    return out;
  }
  /// Whether the guards are untouched (and, if given, the inside equals `expected`).
  [[nodiscard]] std::string check(std::vector<std::uint8_t> const* expected) const
  {
    auto const bytes = all();
    for (std::size_t i = 0; i < guard; ++i) {
      if (bytes[i] != poison) { return "written before the destination"; }
      if (bytes[guard + size_ + i] != poison) { return "written after the destination"; }
    }
    if (expected != nullptr &&
        !std::equal(expected->begin(), expected->end(), bytes.begin() + guard)) {
      return "wrong bytes";
    }
    return "";
  }

 private:
  bool device_;
  std::size_t size_;
  std::unique_ptr<DeviceBuffer> dev_;
  std::vector<std::uint8_t> host_;
};

/// An operation's outcome: the bytes it reported, or the error it threw.
struct Outcome {
  std::optional<std::size_t> bytes;
  std::string error;
};

/// Runs `op` on another thread and waits at most a minute: a hang aborts the process (ctest
/// reports it), naming the case, instead of waiting for the ctest timeout.
/// `before` and `after` run on that thread right around `op` (with `ctx` current), so that a
/// driver failure armed by them meets `op`'s calls only.
inline Outcome run_bounded(std::function<std::size_t()> op,
                           std::string const& what,
                           CUcontext ctx,
                           std::function<void()> before = {},
                           std::function<void()> after  = {})
{
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto result  = promise->get_future();
  std::thread worker{[promise, op = std::move(op), ctx, before, after] {
    Outcome out;
    try {
      kvikio::PushAndPopContext const context{ctx};
      if (before) { before(); }
      try {
        out.bytes = op();
      } catch (std::exception const& e) {
        out.error = e.what();
        if (out.error.empty()) { out.error = "(an exception without a message)"; }
      }
      if (after) { after(); }
    } catch (std::exception const& e) {
      out.error = std::string{"the test's own context push failed: "} + e.what();
    }
    promise->set_value(out);
  }};
  if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "HANG: %s did not end within 60 s\n", what.c_str());
    std::abort();
  }
  worker.join();  // its thread-local state (an io_uring ring) is gone before the counting
  return result.get();
}

// ---------------------------------------------------------------------------------------------
// The simulator's run-time failure injection.

/// The driver calls `op` makes: (entry point, number of calls).
inline std::vector<std::pair<std::string, std::size_t>> driver_calls_of(
  std::function<std::size_t()> op, CUcontext ctx)
{
  auto const trace = simulator_hook<TraceCalls>("cudasim_trace_calls");
  auto const out   = run_bounded(
    std::move(op), "a traced run", ctx, [trace] { trace(1); }, [trace] { trace(0); });
  EXPECT_TRUE(out.bytes.has_value()) << "the traced run failed: " << out.error;
  auto const calls = traced_driver_calls();
  return {calls.begin(), calls.end()};
}

/// Which of `count` calls of one entry point to fail: every one up to 12; beyond that (polling
/// and per-slot calls repeat the same code: 100s of cuEventQuery under jitter) the first 8, the
/// middle and the last 2.
inline std::vector<std::size_t> steps(std::size_t count)
{
  std::vector<std::size_t> out;
  for (std::size_t n = 1; n <= count; ++n) {
    if (count <= 12 || n <= 8 || n == count / 2 || n + 1 >= count) { out.push_back(n); }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The entry points.

/// One public entry point: moves `size` bytes between `mem` and the file at `offset`.
struct EntryPoint {
  std::string name;
  bool device;  // device memory (else host)
  bool writes;  // memory to file (else file to memory)
  std::function<std::size_t(void* mem, std::size_t size, std::size_t offset)> run;
};

inline std::string describe(EntryPoint const& e)
{
  return e.name + (e.device ? " (device)" : " (host)");
}

/// What every case of the matrix shares: a file, settings that make transfers a dozen chunks,
/// and the checks around each case.
class FaultMatrixBase : public OnDevice {
 protected:
  void SetUp() override
  {
    OnDevice::SetUp();
    if (IsSkipped()) { return; }
    kvikio::defaults::set_compat_mode(kvikio::CompatMode::ON);
    kvikio::defaults::set_thread_pool_nthreads(2);
    kvikio::defaults::set_task_size(16 << 10);
    kvikio::defaults::set_bounce_buffer_size(bounce_);
    kvikio::defaults::set_num_bounce_buffers(4);  // 4 KiB slots: a read is a dozen chunks
    write_file(path_, content_);
    KVIKIO_CUDA_DRIVER_TRY(api().StreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  }
  void TearDown() override
  {
    if (stream_ != nullptr) { EXPECT_EQ(api().StreamDestroy(stream_), CUDA_SUCCESS); }
    OnDevice::TearDown();
  }

  /// `arm` and `disarm` (a driver failure) go right around the operation, so that the test's
  /// own driver calls never meet the failure.
  Outcome run_case(EntryPoint const& e,
                   std::size_t size,
                   std::size_t offset,
                   std::string const& what,
                   std::function<void()> const& arm    = {},
                   std::function<void()> const& disarm = {})
  {
    Outcome out;
    {
      Memory mem{e.device, size};
      auto const fresh = pattern(size, 99);
      if (e.writes) { mem.fill(fresh); }
      auto const before_file = read_file(path_);
      out = run_bounded([&] { return e.run(mem.ptr(), size, offset); }, what, ctx_, arm, disarm);
      if (e.writes) {
        auto const after = read_file(path_);
        EXPECT_TRUE(after.size() == before_file.size() &&
                    std::equal(after.begin(), after.begin() + offset, before_file.begin()) &&
                    std::equal(after.begin() + offset + size,
                               after.end(),
                               before_file.begin() + offset + size))
          << what << ": the file changed outside the range written";
        if (out.bytes.has_value()) {
          EXPECT_TRUE(std::equal(fresh.begin(), fresh.end(), after.begin() + offset))
            << what << ": a write that succeeded left other bytes";
        }
        write_file(path_, content_);  // as it was, for the next case
      } else {
        std::vector<std::uint8_t> const expected(content_.begin() + offset,
                                                 content_.begin() + offset + size);
        EXPECT_EQ(mem.check(out.bytes.has_value() ? &expected : nullptr), "") << what;
      }
    }
    if (out.bytes.has_value()) { EXPECT_EQ(*out.bytes, size) << what; }
    auto& buffers = kvikio::BounceBufferPool<>::instance();
    EXPECT_EQ(buffers.bytes_on_loan(), 0U) << what << ": a bounce buffer is still on loan";
    // (The test's own device memory is a descriptor under the simulator: counted without it.)
    expect_descriptors(what);
    return out;
  }

  /// No descriptor more or fewer than after the warm-up (the message lists the difference).
  void expect_descriptors(std::string const& what) const
  {
    auto const now = open_descriptors();
    std::vector<std::string> opened, closed;
    std::set_difference(
      now.begin(), now.end(), descriptors_.begin(), descriptors_.end(), std::back_inserter(opened));
    std::set_difference(
      descriptors_.begin(), descriptors_.end(), now.begin(), now.end(), std::back_inserter(closed));
    std::string list;
    for (auto const& d : opened) {
      list += " +" + d;
    }
    for (auto const& d : closed) {
      list += " -" + d;
    }
    EXPECT_EQ(list, "") << what << ": descriptors left open (+) or closed (-)";
    // Rings: at most one per thread that may do local I/O (the pool's, the stream-ordered
    // workers, this one); one per operation would be a leak.
    std::size_t const threads = kvikio::defaults::thread_pool().get_thread_count() +
                                kvikio::detail::stream_worker_count() + 1;
    EXPECT_LE(io_uring_rings(), threads) << what << ": more io_uring rings than threads";
  }

  /// The next operation works, and the events are back in the pool.
  void expect_recovery(EntryPoint const& e, std::string const& what)
  {
    auto const out = run_case(e, size_, offset_, what + ", then the next operation");
    EXPECT_TRUE(out.bytes.has_value()) << what << ": the next operation failed: " << out.error;
    // Every event is back (more may exist: rings of more threads ran at once than before).
    EXPECT_GE(kvikio::EventPool::instance().num_free_events(ctx_), events_)
      << what << ": events were not returned";
  }

  /// A first run of `e`, after which the pools and descriptors are what later cases return to.
  /// (What a first run creates to keep, an io_uring ring or a connection, is not a leak.)
  void warm_up(EntryPoint const& e)
  {
    {
      Memory mem{e.device, size_};
      auto const out = run_bounded(
        [&] { return e.run(mem.ptr(), size_, offset_); }, describe(e) + ", warm-up", ctx_);
      ASSERT_TRUE(out.bytes.has_value()) << describe(e) << ", warm-up: " << out.error;
      write_file(path_, content_);
    }
    // Staging pinned on threads of their own (what the process's first opening pins ahead, a
    // stream's full ring) is done: its driver calls are not counted or failed as the cases'.
    kvikio::detail::wait_for_staging_pinning();
    descriptors_ = open_descriptors();
    events_      = kvikio::EventPool::instance().num_free_events(ctx_);
  }

  /// Every driver call of each entry point of `entries`, failed in turn (CUDA_ERROR_LAUNCH_FAILED;
  /// steps() says which of repeated calls): the error names it, or (where the failure is
  /// absorbed) the bytes are right; then the usual checks of a case. Host memory too: finding out
  /// what a pointer is asks the driver.
  void every_driver_failure(std::vector<EntryPoint> const& entries)
  {
    auto const fail = simulator_hook<FailCall>("cudasim_fail_call");
    ASSERT_NE(fail, nullptr);
    std::size_t cases = 0, absorbed = 0;
    for (auto const& e : entries) {
      warm_up(e);
      std::vector<std::pair<std::string, std::size_t>> calls;
      {
        Memory probe{e.device, size_};
        if (e.writes) { probe.fill(pattern(size_, 99)); }
        calls = driver_calls_of([&] { return e.run(probe.ptr(), size_, offset_); }, ctx_);
        write_file(path_, content_);
      }
      if (e.device) { ASSERT_FALSE(calls.empty()) << describe(e) << " made no driver call"; }
      for (auto const& [entry, count] : calls) {
        for (std::size_t const nth : steps(count)) {
          std::string const what = describe(e) + ", call " + std::to_string(nth) + " of " + entry;
          bool never_reached     = false;
          auto const out         = run_case(
            e,
            size_,
            offset_,
            what,
            [&, entry = entry, nth] { (void)fail(entry.c_str(), nth, CUDA_ERROR_LAUNCH_FAILED); },
            [&] { never_reached = fail(nullptr, 0, 0) != 0; });
          ++cases;
          if (!out.bytes.has_value()) {
            EXPECT_NE(out.error.find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos)
              << what << ": an unclear error: " << out.error;
          } else if (!never_reached) {
            ++absorbed;
          }
          expect_recovery(e, what);
        }
      }
    }
    std::printf(
      "%zu driver failures injected, %zu absorbed with the right bytes\n", cases, absorbed);
  }

  // Sizes small enough for the sanitizer builds, which pay for every byte a case moves, and
  // large enough for a dozen chunks and every slot of the ring.
  static constexpr std::size_t bounce_       = 16 << 10;
  static constexpr std::size_t default_size_ = (50 << 10) + 333;
  static constexpr std::size_t offset_       = 4099;
  /// The file's length (and the remote object's): the longest range of a case, its offset, a
  /// tail.
  static constexpr std::size_t file_size_ = default_size_ + offset_ + 5000;
  std::size_t size_                       = default_size_;  // a fixture may read less
  TempDir dir_;
  std::string path_                  = dir_.file("data");
  std::vector<std::uint8_t> content_ = pattern(file_size_, 98);
  CUstream stream_{};
  std::vector<std::string> descriptors_;
  std::size_t events_{};
};

}  // namespace kvikio::test
