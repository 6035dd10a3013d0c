/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The library used as a careless or hostile caller would, by category: paths, modes, sizes and
 * offsets, settings, lifetimes. Each case says what must happen. The lifetime cases race
 * close(), moves and pool resizes against running reads; they run in every build, ThreadSanitizer
 * included, and repeat enough to fail on code that closes a descriptor under a read.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <future>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include "common/address_space.hpp"
#include "common/child_process.hpp"
#include "common/device.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::pattern;
using kvikio::test::read_file;
using kvikio::test::TempDir;
using kvikio::test::write_file;
using namespace std::string_literals;

namespace {

// The errno of the std::system_error `f` throws (0 if it throws none, -1 for another type).
template <typename F>
int errno_of(F&& f)
{
  try {
    f();
  } catch (std::system_error const& e) {
    return e.code().value();
  } catch (...) {
    return -1;
  }
  return 0;
}

template <typename F>
std::string invalid_argument_of(F&& f)
{
  try {
    f();
  } catch (std::invalid_argument const& e) {
    return e.what();
  } catch (std::exception const& e) {
    return "another exception: "s + e.what();
  }
  return "no exception";
}

// ---------------------------------------------------------------------------------------------
// Paths

// A NUL cuts the C string the kernel sees: "x\0zzz" would open, and with "w" empty, "x".
TEST(HostilePaths, EmbeddedNulIsRefusedAndNoFileIsTouched)
{
  TempDir dir;
  auto const path  = dir.file("x");
  auto const bytes = pattern(4096, 1);
  write_file(path, bytes);
  auto const hostile = path + "\0zzz"s;
  for (char const* flags : {"r", "r+", "w", "w+"}) {
    auto const what = invalid_argument_of([&] { kvikio::FileHandle f{hostile, flags}; });
    EXPECT_NE(what.find("embedded null byte"), std::string::npos) << what;
    EXPECT_NE(what.find(path + "\\0zzz"), std::string::npos) << "the whole path, shown: " << what;
  }
  EXPECT_NE(invalid_argument_of([&] { kvikio::MmapHandle m{hostile}; }).find("embedded null"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([&] { (void)kvikio::get_file_size(hostile); }).find("null byte"),
            std::string::npos);
  EXPECT_EQ(read_file(path), bytes) << "the file before the NUL was opened";
}

// A directory opens with open(2) but reads nothing: refused at open, as Python's open() does.
TEST(HostilePaths, DirectoryIsRefusedAtOpen)
{
  TempDir dir;
  std::filesystem::create_directory(dir.file("d"));
  EXPECT_EQ(errno_of([&] { kvikio::FileHandle f{dir.file("d"), "r"}; }), EISDIR);
  EXPECT_EQ(errno_of([&] { kvikio::FileHandle f{dir.file("d"), "w"}; }), EISDIR);
  EXPECT_EQ(errno_of([&] { kvikio::MmapHandle m{dir.file("d")}; }), EISDIR);
}

// Opening a FIFO for reading waits for a writer: never wait, refuse (ESPIPE: no offsets).
TEST(HostilePaths, FifoIsRefusedWithoutWaiting)
{
  TempDir dir;
  auto const fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(errno_of([&] { kvikio::FileHandle f{fifo, "r"}; }), ESPIPE);
  EXPECT_EQ(errno_of([&] { kvikio::FileHandle f{fifo, "r+"}; }), ESPIPE);
  EXPECT_EQ(errno_of([&] { kvikio::MmapHandle m{fifo}; }), ESPIPE);
}

TEST(HostilePaths, CharacterDeviceIsRefused)
{
  EXPECT_EQ(errno_of([] { kvikio::FileHandle f{"/dev/null", "r"}; }), ESPIPE);
  EXPECT_EQ(errno_of([] { kvikio::FileHandle f{"/dev/zero", "w"}; }), ESPIPE);
}

TEST(HostilePaths, MissingFileAndOverlongNameNameThePath)
{
  TempDir dir;
  auto const missing = dir.file("missing");
  try {
    kvikio::FileHandle f{missing, "r"};
    ADD_FAILURE() << "opened a missing file";
  } catch (std::system_error const& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string{e.what()}.find(missing), std::string::npos) << e.what();
  }
  EXPECT_EQ(errno_of([&] {
              kvikio::FileHandle f{dir.file(std::string(300, 'n')), "w"};
            }),
            ENAMETOOLONG);
}

// ---------------------------------------------------------------------------------------------
// Modes

TEST(HostileModes, OnlyTheFourModesAndPythonsBAreAccepted)
{
  TempDir dir;
  auto const path = dir.file("m");
  write_file(path, pattern(64, 2));
  for (auto const* bad : {"", "rw+", "rw", "wr", "r++", "rbb", "x", "rx", "+", "R", " r", "a"}) {
    EXPECT_NE(invalid_argument_of([&] {
                kvikio::FileHandle f{path, bad};
              }).find("flag"),
              std::string::npos)
      << "mode \"" << bad << "\"";
  }
  for (auto const* good : {"r", "rb", "r+", "r+b", "rb+"}) {
    kvikio::FileHandle f{path, good};
    EXPECT_EQ(f.nbytes(), 64U) << good;
  }
  // "rw+" was read-only before, failing only at the first write: nothing was written.
  EXPECT_EQ(read_file(path), pattern(64, 2));
}

// ---------------------------------------------------------------------------------------------
// Sizes and offsets

TEST(HostileOffsets, WrappingPastEndAndNullAreRefusedWithoutTouchingTheBuffer)
{
  TempDir dir;
  auto const path = dir.file("o");
  write_file(path, pattern(8192, 3));
  kvikio::FileHandle f{path, "r"};
  std::vector<std::uint8_t> buf(4096, 0xA5);
  auto const max = std::numeric_limits<std::size_t>::max();
  EXPECT_THROW(f.pread(buf.data(), 16, max - 8).get(), std::overflow_error);
  EXPECT_THROW(f.pread(buf.data(), max, 1).get(), std::overflow_error);
  EXPECT_THROW(f.pread(buf.data(), 16, std::size_t{1} << 63).get(), std::overflow_error);
  EXPECT_THROW(f.pread(nullptr, 16, 0).get(), std::invalid_argument);
  EXPECT_THROW(f.pread(buf.data(), 16, 0, 0).get(), std::invalid_argument);  // task size 0
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](auto b) { return b == 0xA5; }))
    << "a refused read wrote into the buffer";
  // Past the end: an error (the bytes before the end may have landed in the buffer).
  EXPECT_THROW(f.pread(buf.data(), 16, 8190).get(), std::exception);
  EXPECT_EQ(f.pread(buf.data(), 0, 1 << 20).get(), 0U) << "0 bytes anywhere is no error";
}

// ---------------------------------------------------------------------------------------------
// Settings: every integer setter at and past its bounds (detail::bounds, docs/settings.md),
// leaving the old value after a refusal.

template <typename Get, typename Set>
void expect_bounds(char const* name, Get get, Set set, std::uint64_t min, std::uint64_t max)
{
  auto const before = get();
  set(min);
  EXPECT_EQ(static_cast<std::uint64_t>(get()), min) << name;
  if (min > 0) {
    set(before);
    EXPECT_THROW(set(min - 1), std::invalid_argument) << name << " below " << min;
    EXPECT_EQ(get(), before) << name << ": a refused value changed the setting";
  }
  if (max < kvikio::detail::bounds::unbounded) {
    set(max);
    EXPECT_EQ(static_cast<std::uint64_t>(get()), max) << name;
    set(before);
    EXPECT_THROW(set(max + 1), std::invalid_argument) << name << " above " << max;
    EXPECT_EQ(get(), before) << name << ": a refused value changed the setting";
  }
  set(before);
}

TEST(HostileSettings, EverySetterAtAndPastItsBounds)
{
  using kvikio::defaults;
  namespace b = kvikio::detail::bounds;
#define KVIKIO_BOUNDS(name, type)                                        \
  expect_bounds(                                                         \
    #name,                                                               \
    [] { return defaults::name(); },                                     \
    [](std::uint64_t v) { defaults::set_##name(static_cast<type>(v)); }, \
    b::name.min,                                                         \
    b::name.max)
  KVIKIO_BOUNDS(thread_pool_nthreads, unsigned int);
  KVIKIO_BOUNDS(task_size, std::size_t);
  KVIKIO_BOUNDS(gds_threshold, std::size_t);
  KVIKIO_BOUNDS(bounce_buffer_size, std::size_t);
  KVIKIO_BOUNDS(num_bounce_buffers, std::size_t);
  KVIKIO_BOUNDS(http_max_attempts, std::size_t);
  KVIKIO_BOUNDS(http_timeout, long);
  KVIKIO_BOUNDS(remote_max_connections, std::size_t);
  KVIKIO_BOUNDS(remote_io_num_reactors, unsigned int);
  KVIKIO_BOUNDS(remote_io_max_concurrent_requests, std::size_t);
  KVIKIO_BOUNDS(event_pool_max_per_context, std::size_t);
  KVIKIO_BOUNDS(ipc_export_cache_size, std::size_t);
  KVIKIO_BOUNDS(ipc_open_cache_size, std::size_t);
#undef KVIKIO_BOUNDS
  EXPECT_THROW(defaults::set_http_timeout(-1), std::invalid_argument);
  auto const codes = defaults::http_status_codes();
  EXPECT_THROW(defaults::set_http_status_codes({}), std::invalid_argument);
  EXPECT_THROW(defaults::set_http_status_codes({503, 600}), std::invalid_argument);
  EXPECT_EQ(defaults::http_status_codes(), codes);
}

// The getter reports only sizes that were set, never the 0 of a pool between its old and new
// threads; reads started during the resizes all succeed, with the right bytes.
TEST(HostileSettings, NumThreadsGetterDuringResizesSeesOnlySetValues)
{
  TempDir dir;
  auto const path  = dir.file("r");
  auto const bytes = pattern(1 << 20, 4);
  write_file(path, bytes);
  kvikio::defaults::set_num_threads(1);
  std::atomic<bool> done{false};
  std::thread resizer{[&] {
    for (unsigned i = 0; !done; ++i) {
      kvikio::defaults::set_num_threads(i % 2 == 0 ? 4 : 1);
    }
  }};
  std::atomic<std::size_t> bad_reads{0};
  std::thread reader{[&] {
    kvikio::FileHandle f{path, "r"};
    std::vector<std::uint8_t> buf(64 << 10);
    std::mt19937_64 rng{5};
    while (!done) {
      std::size_t const offset = rng() % (bytes.size() - buf.size());
      try {
        auto const n = f.pread(buf.data(), buf.size(), offset, 16 << 10, 0).get();
        if (n != buf.size() || !std::equal(buf.begin(), buf.end(), bytes.begin() + offset)) {
          ++bad_reads;
        }
      } catch (std::exception const&) {
        ++bad_reads;
      }
    }
  }};
  std::size_t unset = 0;
  for (std::size_t i = 0; i < 1'000'000; ++i) {
    auto const n = kvikio::defaults::num_threads();
    if (n != 1 && n != 4) { ++unset; }
  }
  done = true;
  resizer.join();
  reader.join();
  kvikio::defaults::set_num_threads(1);
  EXPECT_EQ(unset, 0U) << "the getter reported sizes nobody set";
  EXPECT_EQ(bad_reads.load(), 0U) << "reads during resizes failed or returned wrong bytes";
}

// Run in a child (below): a resize the system cannot give threads for fails whole, and the pool
// keeps its threads. Address space is capped so that thread stacks run out after a few.
TEST(HostileSettings, DISABLED_ResizeThatCannotStartItsThreadsKeepsThePool)
{
  kvikio::defaults::set_num_threads(3);
  rlimit const old = kvikio::test::cap_address_space();
  int code         = 0;
  try {
    kvikio::defaults::set_num_threads(4096);
  } catch (std::system_error const& e) {
    code = e.code().value();
    EXPECT_NE(std::string{e.what()}.find("4096"), std::string::npos) << e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_EQ(code, EAGAIN) << "the resize did not fail as the cap should make it";
  EXPECT_EQ(kvikio::defaults::num_threads(), 3U) << "a failed resize changed the pool's size";
  auto f = kvikio::defaults::thread_pool().submit_task([] { return 7; });
  EXPECT_EQ(f.get(), 7) << "the pool runs no tasks after a failed resize";
}

// Run in a child (below) with KVIKIO_NTHREADS=4096 and the address space capped before the
// library's first call: the size is refused, yet the library works with one thread, and a size
// that fits can be set (every call failed before, the setter included).
TEST(HostileSettings, DISABLED_AnEnvironmentPoolSizeTheSystemRefusesLeavesOneThread)
{
  rlimit const old      = kvikio::test::cap_address_space();
  std::size_t task_size = 0;
  EXPECT_NO_THROW(task_size = kvikio::defaults::task_size());
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_GT(task_size, 0U);
  EXPECT_EQ(kvikio::defaults::num_threads(), 1U);
  EXPECT_NO_THROW(kvikio::defaults::set_num_threads(3));
  EXPECT_EQ(kvikio::defaults::num_threads(), 3U);
  auto f = kvikio::defaults::thread_pool().submit_task([] { return 7; });
  EXPECT_EQ(f.get(), 7);
}

// The two cases above, each in a child of its own (a capped address space, a fresh library).
TEST(HostileSettings, RefusedThreadsLeaveAWorkingPool)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's runtime reserves terabytes of address space, so capping it "
                  "(how this test makes thread creation fail) breaks the runtime; the Release "
                  "build runs it";
#else
  EXPECT_EQ(
    kvikio::test::run_child_test("DISABLED_ResizeThatCannotStartItsThreadsKeepsThePool", {}), 0);
  EXPECT_EQ(
    kvikio::test::run_child_test("DISABLED_AnEnvironmentPoolSizeTheSystemRefusesLeavesOneThread",
                                 {"KVIKIO_NTHREADS=4096"}),
    0);
#endif
}

// ---------------------------------------------------------------------------------------------
// Lifetimes

// Reads queued on the pool when close() runs, while another thread keeps opening another file
// (which gets the descriptor numbers close() frees): each read returns its own file's bytes or
// an error, never another file's bytes as a success.
TEST(HostileLifetimes, ReadsRacingCloseNeverReturnAnotherFilesBytes)
{
  TempDir dir;
  auto const path_a = dir.file("a");
  auto const path_b = dir.file("b");
  auto const a      = pattern(1 << 20, 6);
  write_file(path_a, a);
  write_file(path_b, pattern(1 << 20, 7));
  kvikio::ThreadPool pool{4};
  std::atomic<bool> done{false};
  std::thread reopener{[&] {
    while (!done) {
      int const fd = ::open(path_b.c_str(), O_RDONLY | O_CLOEXEC);
      std::this_thread::yield();
      if (fd >= 0) { ::close(fd); }
    }
  }};
  constexpr std::size_t reads_per_round = 16;
  constexpr std::size_t read_size       = 16 << 10;
  std::size_t reads = 0, succeeded = 0, wrong = 0;
  std::mt19937_64 rng{8};
  while (reads < 10'000) {
    std::vector<std::vector<std::uint8_t>> bufs(reads_per_round,
                                                std::vector<std::uint8_t>(read_size));
    std::vector<std::size_t> offsets;
    std::vector<std::future<std::size_t>> futures;
    {
      kvikio::FileHandle f{path_a, "r"};
      for (auto& buf : bufs) {
        offsets.push_back(rng() % (a.size() - read_size));
        futures.push_back(f.pread(buf.data(), read_size, offsets.back(), 4 << 10, 0, false, &pool));
      }
      f.close();  // with most tasks still queued
    }
    for (std::size_t i = 0; i < futures.size(); ++i, ++reads) {
      try {
        if (futures[i].get() != read_size) {
          ++wrong;
          continue;
        }
      } catch (std::exception const&) {
        continue;  // an error is an allowed outcome
      }
      ++succeeded;
      if (!std::equal(bufs[i].begin(), bufs[i].end(), a.begin() + offsets[i])) { ++wrong; }
    }
  }
  done = true;
  reopener.join();
  EXPECT_EQ(wrong, 0U) << "of " << reads << " reads, " << wrong
                       << " succeeded with bytes that are not the file's";
  // close() waits for the reads it was given, so all of them succeed.
  EXPECT_EQ(succeeded, reads);
}

// A read started after close() began is refused, naming the handle as closed.
TEST(HostileLifetimes, ClosedHandleRefusesEveryOperation)
{
  TempDir dir;
  auto const path = dir.file("c");
  write_file(path, pattern(4096, 9));
  kvikio::FileHandle f{path, "r+"};
  f.close();
  std::vector<std::uint8_t> buf(16);
  for (auto const& op : std::vector<std::function<void()>>{
         [&] { (void)f.pread(buf.data(), 16).get(); },
         [&] { (void)f.pwrite(buf.data(), 16).get(); },
         [&] { (void)f.read(buf.data(), 16, 0, 0); },
       }) {
    try {
      op();
      ADD_FAILURE() << "a closed handle ran an operation";
    } catch (std::runtime_error const& e) {
      EXPECT_NE(std::string{e.what()}.find("closed"), std::string::npos) << e.what();
    }
  }
  f.close();  // a second close does nothing
  EXPECT_TRUE(f.closed());
}

// The handle destroyed or moved while its reads run: the reads finish on the file, with its bytes.
TEST(HostileLifetimes, HandleDestroyedOrMovedUnderRunningReads)
{
  TempDir dir;
  auto const path  = dir.file("d");
  auto const bytes = pattern(1 << 20, 10);
  write_file(path, bytes);
  kvikio::ThreadPool pool{2};
  for (int round = 0; round < 50; ++round) {
    std::vector<std::uint8_t> first(bytes.size()), second(bytes.size());
    std::future<std::size_t> a, b;
    {
      kvikio::FileHandle f{path, "r"};
      a = f.pread(first.data(), first.size(), 0, 64 << 10, 0, false, &pool);
      kvikio::FileHandle moved{std::move(f)};
      b = moved.pread(second.data(), second.size(), 0, 64 << 10, 0, false, &pool);
    }  // both handles destroyed here, with tasks queued
    EXPECT_EQ(a.get(), bytes.size());
    EXPECT_EQ(b.get(), bytes.size());
    ASSERT_EQ(first, bytes) << "round " << round;
    ASSERT_EQ(second, bytes) << "round " << round;
  }
}

// The same rule for mappings: no unmap under a running read (that read would fault).
TEST(HostileLifetimes, MmapReadsRacingCloseNeverFault)
{
  TempDir dir;
  auto const path  = dir.file("m");
  auto const bytes = pattern(1 << 20, 11);
  write_file(path, bytes);
  kvikio::ThreadPool pool{4};
  std::size_t failed = 0;
  for (int round = 0; round < 200; ++round) {
    std::vector<std::uint8_t> buf(bytes.size());
    std::future<std::size_t> future;
    std::thread closer;
    {
      kvikio::MmapHandle m{path};
      future = m.pread(buf.data(), buf.size(), 0, 16 << 10, &pool);
      closer = std::thread{[&] { m.close(); }};
      closer.join();
      EXPECT_THROW((void)m.read(buf.data(), 16, 0), std::runtime_error);
    }
    try {
      EXPECT_EQ(future.get(), bytes.size());
      ASSERT_EQ(buf, bytes) << "round " << round;
    } catch (std::runtime_error const&) {
      ++failed;
    }
  }
  EXPECT_EQ(failed, 0U) << "close() waits for the reads it was given";
}

}  // namespace
