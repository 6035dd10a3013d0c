/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The process lifecycle as a careless program meets it: fork() after the library ran (and while
 * it runs), exit with the pools in use. A child gets working pools, rings and transports, or a
 * clear error, never a hang or a crash; the parent goes on unaffected. Each case runs in a child
 * that is killed, and the case failed, if it does not end within its limit.
 */
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/utils.hpp>
#ifdef KVIKIO_LIBCURL_FOUND
#include <kvikio/remote_handle.hpp>

#include "common/nginx.hpp"
#include "common/poison.hpp"
#endif

#include "common/child_process.hpp"
#include "common/device.hpp"
#include "common/temp_dir.hpp"

using kvikio::FileHandle;
using kvikio::test::pattern;
using kvikio::test::TempDir;
using kvikio::test::write_file;

namespace {
// Set in a child of in_child(): see __lsan_is_turned_off below.
bool in_forked_child{false};
}  // namespace

// LeakSanitizer asks this at exit: a child of fork() holds memory of its parent's other threads
// (their thread-local objects, the pools' states left behind on purpose), which no thread of the
// child can reach. Those are fork's, not leaks of the library; the parent is checked as usual.
extern "C" int __lsan_is_turned_off() { return in_forked_child ? 1 : 0; }

namespace {

using kvikio::test::poison;
constexpr std::size_t guard = 64;

// What a child's run ended with: its exit code, or -1 if it was killed for running too long.
struct ChildEnd {
  int code;
  std::string how;
};

// Runs `body` in a child of fork() and returns how it ended. `body` returns the child's exit
// code (0: all held); an exception is code 98. The child leaves through std::exit, so the
// library's static objects are destroyed there as in any program's exit.
ChildEnd in_child(std::function<int()> const& body,
                  std::chrono::seconds limit = std::chrono::seconds{30})
{
  std::fflush(nullptr);
  pid_t const pid = ::fork();
  if (pid == 0) {
    in_forked_child = true;
    int code        = 99;
    try {
      code = body();
    } catch (std::exception const& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 98;
    }
    std::exit(code);
  }
  if (pid < 0) { return {-1, "fork failed"}; }
  int status       = 0;
  auto const until = std::chrono::steady_clock::now() + limit;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return {-1, "the child did not end within " + std::to_string(limit.count()) + " s"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  if (WIFSIGNALED(status)) {
    return {-1, "the child died of signal " + std::to_string(WTERMSIG(status))};
  }
  return {WEXITSTATUS(status), "exit code " + std::to_string(WEXITSTATUS(status))};
}

// Reads `expected.size()` bytes at `offset` of `file` into a poisoned host buffer through the
// pool (small tasks: many of them); 0 if the bytes and both guards are right, else 1..3.
int read_and_check(FileHandle& file, std::vector<std::uint8_t> const& expected, std::size_t offset)
{
  std::size_t const size = expected.size() - offset;
  std::vector<std::uint8_t> buf(size + 2 * guard, poison);
  if (file.pread(buf.data() + guard, size, offset, 64 << 10).get() != size) { return 1; }
  if (!std::equal(expected.begin() + static_cast<std::ptrdiff_t>(offset),
                  expected.end(),
                  buf.begin() + guard)) {
    return 2;
  }
  for (std::size_t i = 0; i < guard; ++i) {
    if (buf[i] != poison || buf[guard + size + i] != poison) { return 3; }
  }
  return 0;
}

class Fork : public ::testing::Test {
 protected:
  void SetUp() override
  {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "ThreadSanitizer cannot run threads in a child of a multi-threaded fork() "
                    "(it dies there, die_after_fork); the Release and ASan builds run these";
#endif
    content_ = pattern(4 << 20, 45);
    write_file(path_, content_);
  }
  TempDir dir_;
  std::string path_ = dir_.file("data");
  std::vector<std::uint8_t> content_;
};

}  // namespace

// The child of a process whose pool ran reads through that pool (the parent's handle and a new
// one), resizes it and exits; the parent's pool still works afterwards.
TEST_F(Fork, ChildReadsThroughThePoolItsParentUsed)
{
  FileHandle file{path_, "r"};
  ASSERT_EQ(read_and_check(file, content_, 0), 0);
  auto const end = in_child([&] {
    if (int const e = read_and_check(file, content_, 3); e != 0) { return 10 + e; }
    FileHandle again{path_, "r"};
    if (int const e = read_and_check(again, content_, 0); e != 0) { return 20 + e; }
    kvikio::defaults::set_thread_pool_nthreads(kvikio::defaults::thread_pool_nthreads() + 2);
    if (int const e = read_and_check(again, content_, 5); e != 0) { return 30 + e; }
    return 0;
  });
  EXPECT_EQ(end.code, 0) << end.how << " (1x: the inherited handle, 2x: a new one, 3x: resized)";
  EXPECT_EQ(read_and_check(file, content_, 7), 0);
}

// fork() while other threads keep the pool busy: whatever lock a worker held at the fork, the
// child's reads complete.
TEST_F(Fork, WhileOtherThreadsRead)
{
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator (GCC 12's libasan) keeps its own lock across "
                  "fork(): a child of a process whose threads allocate can deadlock in malloc, "
                  "inside the sanitizer (seen: a child's pool thread waiting in "
                  "SizeClassAllocator64::GetFromAllocator); the Release build runs it";
#endif
  FileHandle file{path_, "r"};
  std::atomic<bool> stop{false};
  std::atomic<int> parent_errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      while (!stop.load()) {
        if (read_and_check(file, content_, static_cast<std::size_t>(t)) != 0) { ++parent_errors; }
      }
    });
  }
  for (int i = 0; i < 10; ++i) {
    auto const end = in_child([&] {
      FileHandle mine{path_, "r"};
      return read_and_check(mine, content_, static_cast<std::size_t>(i));
    });
    EXPECT_EQ(end.code, 0) << "fork " << i << ": " << end.how;
  }
  stop = true;
  for (auto& r : readers) {
    r.join();
  }
  EXPECT_EQ(parent_errors.load(), 0);
}

// A device read in the child of a process that used the device ends, with the bytes or with an
// error (a real driver refuses a context made before the fork), and never hangs.
TEST_F(Fork, DeviceReadInAChildEnds)
{
  if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
  auto const ctx = kvikio::get_primary_cuda_context(0);
  kvikio::test::api().CtxPushCurrent(ctx);
  {
    kvikio::test::DeviceBuffer dev{content_.size()};
    FileHandle file{path_, "r"};
    ASSERT_EQ(file.pread(dev.get(), content_.size(), 0, 1 << 20).get(), content_.size());
    auto const end = in_child([&] {
      try {
        std::size_t const n = file.pread(dev.get(), content_.size(), 0, 1 << 20).get();
        std::vector<std::uint8_t> back(content_.size());
        KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
        return n == content_.size() && back == content_ ? 0 : 1;
      } catch (std::exception const& e) {
        std::fprintf(stderr, "child, device read refused: %s\n", e.what());
        return 0;
      }
    });
    EXPECT_EQ(end.code, 0) << end.how;
  }
  CUcontext popped{};
  kvikio::test::api().CtxPopCurrent(&popped);
}

// Stream-ordered reads in children forked while the parent's threads read in stream order (each
// on its own stream, so that the rings, their counters and the staging pinned ahead may be in
// use, their locks held, at the fork): the child's reads, on a stream of its parent's and on one
// of its own, end with the bytes or with an error (a real driver refuses CUDA in such a child),
// never a hang or a crash; the parent's reads go on with the right bytes.
TEST_F(Fork, StreamOrderedReadsInAChildEnd)
{
  if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator keeps its own lock across fork() (see "
                  "Fork.WhileOtherThreadsRead); the Release build runs it";
#endif
  kvikio::PushAndPopContext const current{kvikio::get_primary_cuda_context(0)};
  FileHandle file{path_, "r"};
  std::size_t const size = content_.size();
  // One stream-ordered read of the whole file into `dev` on `stream`, its bytes compared; 0 if
  // right, 1 if the read failed, 2 if the bytes are wrong.
  auto read_on = [&](CUstream stream, kvikio::test::DeviceBuffer const& dev) {
    auto done = file.read_async(dev.get(), size, 0, 0, stream);
    if (done.check_bytes_done() != size) { return 1; }
    std::vector<std::uint8_t> back(size);
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, size));
    return back == content_ ? 0 : 2;
  };
  kvikio::test::Stream const inherited;
  kvikio::test::DeviceBuffer const dev{size};
  ASSERT_EQ(read_on(inherited.handle, dev), 0);
  std::atomic<bool> stop{false};
  std::atomic<int> parent_errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      kvikio::PushAndPopContext const ctx{kvikio::get_primary_cuda_context(0)};
      kvikio::test::Stream const own;
      kvikio::test::DeviceBuffer const mine{size};
      while (!stop.load()) {
        if (read_on(own.handle, mine) != 0) { ++parent_errors; }
      }
    });
  }
  for (int i = 0; i < 8; ++i) {
    auto const end = in_child(
      [&] {
        int code = 0;
        for (int which = 0; which < 2; ++which) {
          try {
            if (which == 0) {
              code |= read_on(inherited.handle, dev) == 2 ? 1 : 0;
            } else {
              kvikio::test::Stream const fresh;
              code |= read_on(fresh.handle, dev) == 2 ? 2 : 0;
            }
          } catch (std::exception const& e) {
            std::fprintf(stderr, "child, stream-ordered read refused: %s\n", e.what());
          }
        }
        return code;
      },
      std::chrono::seconds{20});
    EXPECT_EQ(end.code, 0) << "fork " << i << ": " << end.how
                           << " (1: wrong bytes on the parent's stream, 2: on a new one)";
  }
  stop = true;
  for (auto& r : readers) {
    r.join();
  }
  EXPECT_EQ(parent_errors.load(), 0);
  EXPECT_EQ(read_on(inherited.handle, dev), 0);
}

#ifdef KVIKIO_LIBCURL_FOUND
// Both remote transports in the child of a process that read through them: the child's reads get
// the right bytes over connections of its own.
TEST_F(Fork, ChildReadsOverHttpAfterItsParent)
{
  kvikio::test::Nginx nginx;
  write_file(nginx.root() + "/data", content_);
  auto const url   = nginx.url("data");
  auto read_remote = [&](kvikio::RemoteBackendType backend) {
    kvikio::defaults::set_remote_backend(backend);
    auto handle = kvikio::RemoteHandle::open(url, kvikio::RemoteEndpointType::HTTP);
    std::vector<std::uint8_t> buf(content_.size() + 2 * guard, poison);
    if (handle.pread(buf.data() + guard, content_.size(), 0, 256 << 10).get() != content_.size() ||
        !std::equal(content_.begin(), content_.end(), buf.begin() + guard) ||
        buf[guard - 1] != poison || buf[guard + content_.size()] != poison) {
      return 1;
    }
    return 0;
  };
  auto const before = kvikio::defaults::remote_backend();
  ASSERT_EQ(read_remote(kvikio::RemoteBackendType::LIBCURL_EASY), 0);
  ASSERT_EQ(read_remote(kvikio::RemoteBackendType::LIBCURL_MULTI_POLL), 0);
  auto const end = in_child([&] {
    return read_remote(kvikio::RemoteBackendType::LIBCURL_EASY) * 10 +
           read_remote(kvikio::RemoteBackendType::LIBCURL_MULTI_POLL);
  });
  EXPECT_EQ(end.code, 0) << end.how << " (10: easy handles, 1: multi-poll)";
  EXPECT_EQ(read_remote(kvikio::RemoteBackendType::LIBCURL_MULTI_POLL), 0);
  kvikio::defaults::set_remote_backend(before);
}
#endif

// The process-wide objects the library builds at first use (the settings and their pool, the
// backends, libcurl's handles, the caches) are detail::BuiltOnce. A child forked while another
// thread builds one builds its own instead of waiting forever for a thread it does not have;
// the parent's build ends as usual and is the parent's object.
// A process with two copies of the library (an application's and a Python extension's own):
// each copy's fork handlers lock only its own state, so fork() returns. In a child process, so
// that a hung fork() ends by the alarm and fails the test rather than hanging it.
TEST(TwoLibraryCopies, DISABLED_ForkWithASecondCopyLoaded)
{
  ::alarm(30);
  TempDir dir;
  std::string const copy = dir.file("libkvikio_second_copy.so");
  std::filesystem::copy_file(KVIKIO_LIBRARY_FILE, copy);
  void* second = ::dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(second, nullptr) << ::dlerror();
  // Each copy keeps its own settings: the second's pool size is not the one set in this copy.
  kvikio::defaults::set_thread_pool_nthreads(7);
  using Getter            = unsigned int (*)();
  auto const its_nthreads = reinterpret_cast<Getter>(::dlsym(
    second, "_ZN6kvikio8defaults20thread_pool_nthreadsEv"));  // defaults::thread_pool_nthreads
  ASSERT_NE(its_nthreads, nullptr) << ::dlerror();
  EXPECT_EQ(kvikio::defaults::thread_pool_nthreads(), 7U);
  EXPECT_NE(its_nthreads(), 7U);
  pid_t const pid = ::fork();
  if (pid == 0) { ::_exit(0); }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(TwoLibraryCopies, ForkReturns)
{
  // Two copies of one library define the same globals: AddressSanitizer's check of that (an ODR
  // violation in one program) does not apply to copies loaded on purpose.
  char const* const asan    = std::getenv("ASAN_OPTIONS");
  std::string const options = std::string{"ASAN_OPTIONS="} +
                              (asan != nullptr ? std::string{asan} + ":" : "") +
                              "detect_odr_violation=0";
  EXPECT_EQ(
    kvikio::test::run_child_test("TwoLibraryCopies.DISABLED_ForkWithASecondCopyLoaded", {options}),
    0);
}

TEST(BuiltOnce, AChildForkedDuringABuildBuildsItsOwn)
{
  static kvikio::detail::BuiltOnce<int> object;
  std::atomic<bool> building{false};
  std::atomic<bool> go_on{false};
  std::thread builder{[&] {
    (void)object.get([&] {
      building = true;
      while (!go_on) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
      }
      return new int{1};
    });
  }};
  while (!building) {
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  auto const end = in_child([] { return object.get([] { return new int{2}; }) == 2 ? 0 : 1; },
                            std::chrono::seconds{10});
  go_on          = true;
  builder.join();
  EXPECT_EQ(end.code, 0) << end.how << " (1: the child got another object than its own)";
  EXPECT_EQ(object.get([] { return new int{3}; }), 1);
}

// Threads that ask while one builds wait for that build and get its object; nothing is built
// twice.
TEST(BuiltOnce, CallersDuringABuildGetItsObject)
{
  static kvikio::detail::BuiltOnce<int> object;
  std::atomic<int> builds{0};
  std::vector<std::thread> callers;
  std::vector<int*> got(8, nullptr);
  for (std::size_t i = 0; i < got.size(); ++i) {
    callers.emplace_back([&, i] {
      got[i] = &object.get([&] {
        ++builds;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
        return new int{static_cast<int>(40 + i)};
      });
    });
  }
  for (auto& t : callers) {
    t.join();
  }
  EXPECT_EQ(builds.load(), 1);
  for (int* p : got) {
    EXPECT_EQ(p, got[0]);
  }
  EXPECT_GE(*got[0], 40);
}

// A build that throws leaves nothing built: the call throws, and the next call builds.
TEST(BuiltOnce, AFailedBuildIsTriedAgain)
{
  static kvikio::detail::BuiltOnce<int> object;
  EXPECT_THROW((void)object.get([]() -> int* { throw std::runtime_error("no"); }),
               std::runtime_error);
  EXPECT_EQ(object.get([] { return new int{7}; }), 7);
  EXPECT_EQ(object.get([] { return new int{8}; }), 7);
}
