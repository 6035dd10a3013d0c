/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The io_uring local backend on its own: it is usable on these machines' kernels (so CI tests
 * the real backend), moves bytes exactly (more pieces than the queue holds, odd sizes and
 * offsets), reports a read past the end and a bad descriptor only after every request ended,
 * and where io_uring_setup is refused, FileHandle falls back to POSIX. Device reads stage
 * through registered pool buffers (dropped when the pool frees one); injected short, interrupted
 * and failed completions, real signals during waits and a file-size limit leave exact bytes or a
 * clear error. The whole FileHandle and stream-ordered suites run on this backend too
 * (".io_uring" in ctest).
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sys/syscall.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/utils.hpp>

#include "io/io_uring/io_uring_io.hpp"
#include "io/io_uring/test_hooks.hpp"
#include "io/local_plan.hpp"

#include "common/child_process.hpp"
#include "common/device.hpp"
#include "common/file_size_limit.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::api;
using kvikio::test::pattern;
using Fault = kvikio::detail::IoUringFault;

namespace {

using kvikio::test::poison;
constexpr std::size_t guard = 64;

class IoUring : public ::testing::Test {
 protected:
  // Requests of 64 KiB, 64 in flight: the library's shape (1 MiB) scaled down, so that the
  // file below is more pieces than the queue holds in 4 MiB rather than 69 (the sanitizer
  // builds pay for every byte a test moves).
  static constexpr std::size_t piece = 64 << 10;
  static constexpr unsigned depth    = 64;
  void SetUp() override
  {
    kvikio::detail::set_io_uring_request_shape(piece, depth);
    kvikio::detail::override_io_uring_setup(0);
    ASSERT_TRUE(kvikio::detail::io_uring_usable())
      << "io_uring is unavailable on this machine: the backend cannot be tested here";
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override
  {
    if (fd_ >= 0) { ::close(fd_); }
    kvikio::detail::override_io_uring_setup(0);
    kvikio::detail::set_io_uring_request_shape(std::size_t{1} << 20, 64);
    kvikio::detail::inject_io_uring_fault(Fault{});
    kvikio::detail::set_io_uring_registered_buffers(true);
    kvikio::detail::set_io_uring_max_workers(0);
  }
  std::byte* bytes(std::vector<std::uint8_t>& v) { return reinterpret_cast<std::byte*>(v.data()); }
  // Reads `size` bytes at `offset` into poisoned host memory; checks them and the guards.
  void expect_host_read(std::size_t size, std::size_t offset)
  {
    std::vector<std::uint8_t> buf(size + 2 * guard, poison);
    kvikio::detail::io_uring_transfer_all(true, fd_, bytes(buf) + guard, size, offset);
    ASSERT_EQ(0, std::memcmp(buf.data() + guard, content_.data() + offset, size));
    for (std::size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(buf[i], poison) << "written before the buffer";
      ASSERT_EQ(buf[guard + size + i], poison) << "written after the buffer";
    }
  }
  void write_content()
  {
    ASSERT_EQ(::pwrite(fd_, content_.data(), content_.size(), 0),
              static_cast<ssize_t>(content_.size()));
  }
  // Writes `size` bytes of a fresh pattern at `offset` through the ring; the file has them
  // there and its content elsewhere.
  void expect_write(std::size_t size, std::size_t offset, std::uint32_t seed)
  {
    auto data = pattern(size, seed);
    kvikio::detail::io_uring_transfer_all(false, fd_, bytes(data), size, offset);
    std::vector<std::uint8_t> file(content_.size());
    ASSERT_EQ(::pread(fd_, file.data(), file.size(), 0), static_cast<ssize_t>(file.size()));
    ASSERT_EQ(0, std::memcmp(file.data() + offset, data.data(), size));
    ASSERT_EQ(0, std::memcmp(file.data(), content_.data(), offset)) << "written before";
    ASSERT_EQ(
      0,
      std::memcmp(
        file.data() + offset + size, content_.data() + offset + size, file.size() - offset - size))
      << "written after";
    std::memcpy(content_.data() + offset, data.data(), size);  // the file's content now
  }
  kvikio::test::TempDir dir_;
  std::string path_ = dir_.file("data");
  int fd_{-1};
  // More pieces than the queue holds in flight, and a tail that is no whole piece.
  std::vector<std::uint8_t> content_ = pattern((depth + 5) * piece + 4099, 17);
};

TEST_F(IoUring, ReadsExactlyWhatPreadReads)
{
  write_content();
  for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{4095}}) {
    for (std::size_t size : {std::size_t{1}, std::size_t{4097}, content_.size() - 4096}) {
      std::vector<std::uint8_t> buf(size + 2 * guard, poison);
      kvikio::detail::io_uring_transfer_all(
        true, fd_, reinterpret_cast<std::byte*>(buf.data() + guard), size, offset);
      ASSERT_EQ(0, std::memcmp(buf.data() + guard, content_.data() + offset, size))
        << size << " bytes at " << offset;
      for (std::size_t i = 0; i < guard; ++i) {
        ASSERT_EQ(buf[i], poison) << "written before the buffer";
        ASSERT_EQ(buf[guard + size + i], poison) << "written after the buffer";
      }
    }
  }
}

// Requests of an odd size, three at a time: many refills of the queue, pieces that straddle
// pages; and a shape that cannot be is refused.
TEST_F(IoUring, SmallRequestsAndAShallowQueue)
{
  write_content();
  kvikio::detail::set_io_uring_request_shape(5000, 3);
  std::size_t const size = 3 * 1000 * 1000 + 7;
  std::vector<std::uint8_t> buf(size + 2 * guard, poison);
  kvikio::detail::io_uring_transfer_all(
    true, fd_, reinterpret_cast<std::byte*>(buf.data() + guard), size, 11);
  ASSERT_EQ(0, std::memcmp(buf.data() + guard, content_.data() + 11, size));
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(buf[i], poison);
    ASSERT_EQ(buf[guard + size + i], poison);
  }
  EXPECT_THROW(kvikio::detail::set_io_uring_request_shape(0, 3), std::invalid_argument);
  EXPECT_THROW(kvikio::detail::set_io_uring_request_shape(std::size_t{4} << 30, 3),
               std::invalid_argument);
  EXPECT_THROW(kvikio::detail::set_io_uring_request_shape(4096, 0), std::invalid_argument);
  EXPECT_THROW(
    kvikio::detail::set_io_uring_request_shape(4096, kvikio::detail::io_uring_max_depth + 1),
    std::invalid_argument);
}

// Through an O_DIRECT descriptor (requests issued inline, not by kernel workers): page-aligned
// memory, offsets and sizes, the bytes of the file.
TEST_F(IoUring, DirectDescriptor)
{
  write_content();
  ASSERT_EQ(::fsync(fd_), 0);
  int const direct = ::open(path_.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (direct < 0) { GTEST_SKIP() << "the temp directory's file system refuses O_DIRECT"; }
  std::size_t const size = 5 * kvikio::detail::io_uring_piece_size() + 3 * 4096;
  void* mem              = std::aligned_alloc(4096, size);
  ASSERT_NE(mem, nullptr);
  std::memset(mem, poison, size);
  kvikio::detail::io_uring_transfer_all(
    true, direct, static_cast<std::byte*>(mem), size, 2 * 4096, false);
  EXPECT_EQ(0, std::memcmp(mem, content_.data() + 2 * 4096, size));
  std::free(mem);
  ::close(direct);
}

TEST_F(IoUring, WritesAreInTheFileWhenItReturns)
{
  kvikio::detail::io_uring_transfer_all(
    false, fd_, reinterpret_cast<std::byte*>(content_.data()), content_.size(), 3);
  std::vector<std::uint8_t> back(content_.size());
  ASSERT_EQ(::pread(fd_, back.data(), back.size(), 3), static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, content_);
}

TEST_F(IoUring, ReadPastTheEndIsAnOutOfRangeError)
{
  write_content();
  std::vector<std::uint8_t> buf(4 * kvikio::detail::io_uring_piece_size());
  try {
    kvikio::detail::io_uring_transfer_all(
      true, fd_, reinterpret_cast<std::byte*>(buf.data()), buf.size(), content_.size() - 1000);
    FAIL() << "a read past the end succeeded";
  } catch (kvikio::detail::EndOfFileError const& e) {
    EXPECT_NE(std::string{e.what()}.find("past the end"), std::string::npos) << e.what();
  }
  // The ring is whole: the next transfer works.
  kvikio::detail::io_uring_transfer_all(
    true, fd_, reinterpret_cast<std::byte*>(buf.data()), 1000, content_.size() - 1000);
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + content_.size() - 1000, 1000));
}

TEST_F(IoUring, BadDescriptorIsASystemError)
{
  // Not a closed descriptor's number: the thread's ring may be set up on it and reuse it.
  int const closed = 1 << 20;
  ASSERT_EQ(::fcntl(closed, F_GETFD), -1);
  std::vector<std::uint8_t> buf(3 * kvikio::detail::io_uring_piece_size());
  try {
    kvikio::detail::io_uring_transfer_all(
      true, closed, reinterpret_cast<std::byte*>(buf.data()), buf.size(), 0);
    FAIL() << "a read from a closed descriptor succeeded";
  } catch (kvikio::GenericSystemError const& e) {
    EXPECT_EQ(e.code().value(), EBADF) << e.what();
  }
}

// FileHandle with KVIKIO_LOCAL_IO_BACKEND=io_uring where io_uring_setup is refused: the probe
// says so (one warning) and reads and writes go through POSIX.
TEST_F(IoUring, RefusedSetupFallsBackToPosix)
{
  kvikio::detail::override_io_uring_setup(EPERM);
  EXPECT_FALSE(kvikio::detail::io_uring_usable());
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::IO_URING);
  {
    kvikio::FileHandle f{path_, "r+"};
    EXPECT_EQ(f.pwrite(content_.data(), content_.size(), 0).get(), content_.size());
    std::vector<std::uint8_t> back(content_.size(), poison);
    EXPECT_EQ(f.pread(back.data(), back.size(), 0).get(), back.size());
    EXPECT_EQ(back, content_);
  }
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
}

// A ring refused for want of descriptors (or memory) sends that call to posix but is not
// remembered: once descriptors are free again, io_uring serves the process and the thread.
TEST_F(IoUring, ARingRefusedForNowIsTriedAgain)
{
  for (int refusal : {EMFILE, ENFILE, ENOMEM}) {
    kvikio::detail::override_io_uring_setup(refusal);
    EXPECT_FALSE(kvikio::detail::io_uring_usable()) << refusal;
    kvikio::detail::override_io_uring_setup(0, false);  // the probe is not forgotten by hand
    EXPECT_TRUE(kvikio::detail::io_uring_usable()) << refusal;
  }
}

// `auto` reads through io_uring while the pool has at most half as many threads as there are
// cores and is not backlogged, and the read is more than one io_uring request; writes never.
TEST_F(IoUring, AutoChoosesIoUringForLargeReadsOfSmallPools)
{
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::AUTO);
  unsigned const cores    = std::max(1U, std::thread::hardware_concurrency());
  std::size_t const piece = kvikio::detail::io_uring_piece_size();
  std::size_t const large = piece + 1;
  kvikio::defaults::set_thread_pool_nthreads(cores);
  EXPECT_FALSE(kvikio::detail::io_uring_selected(true, large)) << "as many threads as cores";
  EXPECT_FALSE(kvikio::detail::io_uring_selected(false, large));
  if (cores >= 2) {
    kvikio::defaults::set_thread_pool_nthreads(cores / 2);
    EXPECT_TRUE(kvikio::detail::io_uring_selected(true, large)) << cores / 2 << " of " << cores;
    EXPECT_FALSE(kvikio::detail::io_uring_selected(true, large, cores / 2, true)) << "backlogged";
    EXPECT_FALSE(kvikio::detail::io_uring_selected(false, large));
    EXPECT_FALSE(kvikio::detail::io_uring_selected(true, piece)) << "one request";
    EXPECT_FALSE(kvikio::detail::io_uring_selected(true, 4096)) << "one small request";
  }
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::IO_URING);  // asked: any size
  kvikio::defaults::set_thread_pool_nthreads(cores);
  EXPECT_TRUE(kvikio::detail::io_uring_selected(true, large));
  EXPECT_TRUE(kvikio::detail::io_uring_selected(true, large, cores, true)) << "backlogged";
  EXPECT_TRUE(kvikio::detail::io_uring_selected(false, large));
  EXPECT_TRUE(kvikio::detail::io_uring_selected(true, 4096));
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  EXPECT_FALSE(kvikio::detail::io_uring_selected(true, large));
}

// The choice counts the threads of every pool of the process: the pool of the call (which may
// be larger or smaller than `thread_pool_nthreads`) and every other pool alive (a program that
// feeds several GPUs runs a pool for each, and their threads share the cores with the call's).
// Device memory of a file cuFile serves goes to cuFile whatever the setting.
TEST_F(IoUring, AutoCountsEveryPoolOfTheProcess)
{
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::AUTO);
  unsigned const cores      = std::max(1U, std::thread::hardware_concurrency());
  std::size_t const threads = kvikio::defaults::thread_pool_nthreads();
  std::size_t const large   = kvikio::detail::io_uring_piece_size() * 3;
  // The mover the plan of a call on `pool` picks.
  auto const mover = [](bool reading,
                        bool host_memory,
                        std::size_t size,
                        kvikio::ThreadPool const& pool,
                        kvikio::detail::LocalFile file) {
    file.pool_threads = pool.get_thread_count();
    return std::string{
      kvikio::detail::plan_local_transfer(reading, host_memory, size, 1 << 20, 0, pool, file)
        .mover_name()};
  };
  kvikio::detail::LocalFile const staged;  // no cuFile handle
  kvikio::defaults::set_thread_pool_nthreads(1);
  {
    kvikio::ThreadPool const large_pool{cores};
    EXPECT_EQ(mover(true, true, large, large_pool, staged), "posix") << cores << " threads";
    EXPECT_EQ(mover(true, false, large, large_pool, staged), "posix");
  }
  auto const& pool = kvikio::defaults::thread_pool();
  if (cores >= 2) {  // the default pool alone, one thread: half of two cores
    EXPECT_EQ(mover(true, true, large, pool, staged), "io_uring") << "a pool of one";
    EXPECT_EQ(mover(true, false, large, pool, staged), "io_uring");
    EXPECT_EQ(mover(true, false, 4096, pool, staged), "posix") << "4 KiB";
    {
      // Another pool of half the cores: with the call's, more than half the cores.
      kvikio::ThreadPool const other{std::max(1U, cores / 2)};
      EXPECT_EQ(mover(true, true, large, pool, staged), "posix")
        << "beside a pool of " << other.get_thread_count();
      EXPECT_EQ(mover(true, false, large, pool, staged), "posix");
      EXPECT_FALSE(kvikio::detail::io_uring_selected(true, large, 1));
      EXPECT_EQ(kvikio::detail::threads_sharing_the_cores(1), 1 + other.get_thread_count());
    }
    EXPECT_EQ(mover(true, false, large, pool, staged), "io_uring") << "the other pool is gone";
  }
  EXPECT_EQ(mover(false, true, large, pool, staged), "posix") << "writes";
  kvikio::detail::LocalFile served;  // a file cuFile serves: any non-null handle says so
  int handle    = 0;
  served.cufile = &handle;
  EXPECT_EQ(mover(true, false, 4096, pool, served), "cufile");
  EXPECT_EQ(mover(true, true, 4096, pool, served), "posix") << "host memory never goes to cuFile";
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  EXPECT_EQ(mover(true, true, large, pool, staged), "posix");
  kvikio::defaults::set_thread_pool_nthreads(threads);
}

// The process's probe succeeded, but a new thread's ring cannot be set up: that thread's reads
// go through POSIX, with the bytes of the file.
TEST_F(IoUring, ThreadWithoutARingUsesPosix)
{
  write_content();
  kvikio::detail::override_io_uring_setup(ENOMEM, false);
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::IO_URING);
  bool usable = true;
  std::vector<std::uint8_t> back(content_.size(), poison);
  std::thread{[&] {
    usable = kvikio::detail::io_uring_usable();
    kvikio::FileHandle f{path_, "r"};
    (void)f.pread(back.data(), back.size(), 0, back.size(), 1 << 30).get();  // on this thread
  }}.join();
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  EXPECT_FALSE(usable);
  EXPECT_EQ(back, content_);
}

// io_uring rings open in this process (one per thread that used one, kept while it lives).
std::size_t rings_open()
{
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent const* e = ::readdir(d)) {
      std::string const link = std::string{"/proc/self/fd/"} + e->d_name;
      char target[256]       = {};
      if (::readlink(link.c_str(), target, sizeof(target) - 1) > 0 &&
          std::string{target} == "anon_inode:[io_uring]") {
        ++n;
      }
    }
    ::closedir(d);
  }
  return n;
}

// With `auto`, a read of one request goes by pread(2) on the thread that does it (a ring would
// add a kernel worker's round trip); a read of several requests makes that thread's ring. The
// bytes are right either way.
TEST_F(IoUring, AutoReadsOfOneRequestMakeNoRing)
{
  unsigned const cores = std::max(1U, std::thread::hardware_concurrency());
  if (cores < 2) { GTEST_SKIP() << "auto never chooses io_uring with one core"; }
  write_content();
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::AUTO);
  kvikio::defaults::set_thread_pool_nthreads(1);
  std::size_t rings_before = 0, rings_after_small = 0, rings_after_large = 0;
  std::vector<std::uint8_t> small(piece + 2 * guard, poison), large(3 * piece, poison);
  std::thread{[&] {  // reads on this thread (below the threshold), which has no ring yet
    kvikio::FileHandle f{path_, "r"};
    rings_before = rings_open();
    (void)f.pread(small.data() + guard, piece, 4099, piece, 1 << 30).get();
    rings_after_small = rings_open();
    (void)f.pread(large.data(), large.size(), 77, piece, 1 << 30).get();
    rings_after_large = rings_open();
  }}
    .join();
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  EXPECT_EQ(rings_after_small, rings_before) << "a read of one request made a ring";
  EXPECT_EQ(rings_after_large, rings_before + 1) << "a read of three requests made no ring";
  EXPECT_EQ(0, std::memcmp(small.data() + guard, content_.data() + 4099, piece));
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(small[i], poison) << "written before the buffer";
    ASSERT_EQ(small[guard + piece + i], poison) << "written after the buffer";
  }
  EXPECT_EQ(0, std::memcmp(large.data(), content_.data() + 77, large.size()));
}

// Kernel workers of the rings of thread `tid` ("iou-wrk-<tid>" among this process's threads).
std::size_t kernel_workers_of(pid_t tid)
{
  std::string const name = "iou-wrk-" + std::to_string(tid);
  std::size_t count      = 0;
  for (auto const& task : std::filesystem::directory_iterator{"/proc/self/task"}) {
    std::ifstream comm{task.path() / "comm"};
    std::string line;
    if (std::getline(comm, line) && line == name) { ++count; }
  }
  return count;
}

// A bound on kernel workers reaches the ring: a thread keeping 64 requests in flight gets no
// more workers than asked for, and moves the same bytes.
TEST_F(IoUring, KernelWorkersAreBounded)
{
  write_content();
  kvikio::detail::set_io_uring_max_workers(2);
  std::size_t workers = 0;
  std::thread{[&] {
    expect_host_read(content_.size(), 0);
    workers = kernel_workers_of(static_cast<pid_t>(::syscall(SYS_gettid)));
  }}.join();
  kvikio::detail::set_io_uring_max_workers(0);
  EXPECT_GE(workers, 1U) << "no kernel worker ran the buffered requests";
  EXPECT_LE(workers, 2U);
  expect_host_read(content_.size(), 0);
}

// By default each ring's kernel workers are its thread's share of the cores: with as many pool
// threads as cores, one worker per ring, however many requests a thread keeps in flight.
TEST_F(IoUring, KernelWorkersShareTheCoresByDefault)
{
  write_content();
  unsigned const cores      = std::max(1U, std::thread::hardware_concurrency());
  std::size_t const threads = kvikio::defaults::thread_pool_nthreads();
  kvikio::defaults::set_thread_pool_nthreads(cores);
  std::size_t workers = 0;
  std::thread{[&] {
    expect_host_read(content_.size(), 0);
    workers = kernel_workers_of(static_cast<pid_t>(::syscall(SYS_gettid)));
  }}.join();
  kvikio::defaults::set_thread_pool_nthreads(threads);
  EXPECT_GE(workers, 1U) << "no kernel worker ran the buffered requests";
  EXPECT_LE(workers, 1U) << cores << " pool threads on " << cores << " cores";
}

// Device transfers: the current context of device 0 (the simulator in CI), a small staging so
// that a transfer spans several pool buffers and wraps round them many times.
class IoUringDevice : public IoUring {
 protected:
  void SetUp() override
  {
    IoUring::SetUp();
    if (!kvikio::is_cuda_available()) {
      GTEST_SKIP() << "no CUDA device: " << kvikio::detail::cuda_unavailable_reason();
    }
    context_.emplace(kvikio::get_primary_cuda_context(0));
    kvikio::defaults::set_thread_pool_nthreads(1);  // the whole shape's bytes for one thread
    kvikio::defaults::set_bounce_buffer_size(64 << 10);
    kvikio::defaults::set_num_bounce_buffers(3);
    kvikio::detail::set_io_uring_request_shape(5000, 16);  // 80000 bytes: two 64 KiB buffers
  }
  void TearDown() override
  {
    context_.reset();
    IoUring::TearDown();
  }
  // Reads `size` bytes at `offset` into poisoned device memory; checks them and the guards.
  void expect_device_read(std::size_t size, std::size_t offset)
  {
    kvikio::test::DeviceBuffer dev{size + 2 * guard};
    ASSERT_EQ(api().MemsetD8(dev.ptr, poison, dev.size), CUDA_SUCCESS);
    EXPECT_EQ(kvikio::detail::io_uring_read_to_device(fd_, dev.ptr + guard, size, offset, nullptr),
              size);
    std::vector<std::uint8_t> back(dev.size);
    ASSERT_EQ(api().MemcpyDtoH(back.data(), dev.ptr, dev.size), CUDA_SUCCESS);
    ASSERT_EQ(0, std::memcmp(back.data() + guard, content_.data() + offset, size));
    for (std::size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(back[i], poison) << "written before the destination";
      ASSERT_EQ(back[guard + size + i], poison) << "written after the destination";
    }
  }
  std::optional<kvikio::PushAndPopContext> context_;
};

// The pool's threads cannot set up rings (the process's probe succeeded, and the calling thread
// has one): io_uring is still chosen, and each pool thread moves its share by system calls, into
// host and into device memory, with the file's bytes.
TEST_F(IoUringDevice, PoolThreadsWithoutRingsUseSystemCalls)
{
  write_content();
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::IO_URING);
  kvikio::detail::override_io_uring_setup(ENOMEM, false);  // rings of threads that have none
  kvikio::defaults::set_thread_pool_nthreads(2);           // new threads: no rings
  kvikio::FileHandle f{path_, "r"};
  std::vector<std::uint8_t> host(content_.size() + 2 * guard, poison);
  EXPECT_EQ(f.pread(host.data() + guard, content_.size(), 0, 64 << 10).get(), content_.size());
  kvikio::test::DeviceBuffer dev{content_.size() + 2 * guard};
  ASSERT_EQ(api().MemsetD8(dev.ptr, poison, dev.size), CUDA_SUCCESS);
  EXPECT_EQ(f.pread(reinterpret_cast<void*>(dev.ptr + guard), content_.size(), 0, 64 << 10).get(),
            content_.size());
  std::vector<std::uint8_t> back(dev.size);
  ASSERT_EQ(api().MemcpyDtoH(back.data(), dev.ptr, dev.size), CUDA_SUCCESS);
  kvikio::detail::override_io_uring_setup(0, false);
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  for (auto const* buf : {&host, &back}) {
    ASSERT_EQ(0, std::memcmp(buf->data() + guard, content_.data(), content_.size()));
    for (std::size_t i = 0; i < guard; ++i) {
      ASSERT_EQ((*buf)[i], poison) << "written before the destination";
      ASSERT_EQ((*buf)[guard + content_.size() + i], poison) << "written after the destination";
    }
  }
}

TEST_F(IoUringDevice, StagingOfSeveralRegisteredBuffers)
{
  write_content();
  ASSERT_EQ(kvikio::detail::io_uring_staging_buffers(), 2U);
  EXPECT_EQ(kvikio::detail::io_uring_staging_buffers(0, 5000), 1U) << "no more than it takes";
  kvikio::defaults::set_thread_pool_nthreads(2);  // 40000 bytes each: one buffer
  EXPECT_EQ(kvikio::detail::io_uring_staging_buffers(), 1U);
  kvikio::defaults::set_thread_pool_nthreads(1);
  expect_device_read(1000 * 1000 + 4099, 7);
  EXPECT_EQ(kvikio::detail::io_uring_registered_buffer_count(), 2U)
    << "the staging buffers were not registered with this thread's ring";
  expect_write(1000 * 1000 + 4099, 11, 5);
  expect_device_read(content_.size(), 0);
  // A whole slot, a piece, a byte.
  expect_device_read(16 << 10, 4096);
  expect_device_read(5000, 3);
  expect_write(1, 100, 6);
  // Plain requests (registration off) move the same bytes.
  kvikio::detail::set_io_uring_registered_buffers(false);
  expect_device_read(777 * 1000, 12345);
  expect_write(777 * 1000, 1, 8);
}

// Once the pool frees a buffer, a new one may take its address while the registration still
// holds the old pages: the thread's table is emptied first, or reads land in freed memory.
TEST_F(IoUringDevice, RegistrationsAreDroppedWhenThePoolFreesABuffer)
{
  write_content();
  auto& pool = kvikio::BounceBufferPool<>::instance();
  for (int round = 0; round < 4; ++round) {
    expect_device_read(300 * 1000 + round, static_cast<std::size_t>(round) * 4096 + 1);
    EXPECT_EQ(kvikio::detail::io_uring_registered_buffer_count(), 2U);
    EXPECT_EQ(pool.clear(), 2 * pool.buffer_size());  // both staging buffers freed (bytes)
  }
}

// Injected completions the kernel seldom gives on regular files: short transfers, interrupted
// and would-block requests are redone for the rest, so every path still moves exact bytes.
TEST_F(IoUringDevice, ShortAndInterruptedCompletionsAreRedone)
{
  write_content();
  for (auto kind : {Fault::Kind::short_transfer, Fault::Kind::eintr, Fault::Kind::eagain}) {
    SCOPED_TRACE(static_cast<int>(kind));
    kvikio::detail::inject_io_uring_fault(Fault{kind, 3, 0});
    expect_host_read(content_.size() - 9, 9);
    expect_write(600 * 1000 + 3, 4097, 40 + static_cast<unsigned>(kind));
    expect_host_read(content_.size(), 0);
    expect_device_read(900 * 1000 + 1, 5);
  }
  kvikio::detail::inject_io_uring_fault(Fault{});
  expect_host_read(content_.size(), 0);
}

// Every request cancelled by the kernel, as when it cannot start an io-wq worker for as long as
// a limit on threads holds: the pieces are moved by this thread's system calls instead of being
// submitted again forever (that hung every read).
TEST_F(IoUringDevice, RequestsTheKernelCancelsAreDoneByTheThread)
{
  write_content();
  kvikio::detail::inject_io_uring_fault(Fault{Fault::Kind::cancelled, 1, 0});
  expect_host_read(content_.size() - 9, 9);
  expect_write(600 * 1000 + 3, 4097, 77);
  expect_host_read(content_.size(), 0);
  expect_device_read(900 * 1000 + 1, 5);
  kvikio::detail::inject_io_uring_fault(Fault{});
  expect_host_read(content_.size(), 0);
}

// A request that fails: a system error naming the errno, thrown once nothing is in flight;
// nothing lands outside the destination, staging returns to the pool, the next transfer works.
TEST_F(IoUringDevice, FailedRequestIsAClearErrorAndTheNextTransferWorks)
{
  write_content();
  auto& pool = kvikio::BounceBufferPool<>::instance();
  expect_device_read(content_.size(), 0);  // the pool holds the staging of a transfer this size
  std::size_t const free_buffers = pool.num_free_buffers();
  auto expect_eio                = [](auto&& transfer) {
    try {
      transfer();
      FAIL() << "a transfer with a failed request succeeded";
    } catch (kvikio::GenericSystemError const& e) {
      EXPECT_EQ(e.code().value(), EIO) << e.what();
      EXPECT_NE(std::string{e.what()}.find("io_uring"), std::string::npos) << e.what();
    }
  };
  kvikio::detail::inject_io_uring_fault(Fault{Fault::Kind::error, 7, EIO});
  std::vector<std::uint8_t> host(content_.size() + 2 * guard, poison);
  expect_eio([&] {
    kvikio::detail::io_uring_transfer_all(true, fd_, bytes(host) + guard, content_.size(), 0);
  });
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(host[i], poison);
    ASSERT_EQ(host[guard + content_.size() + i], poison);
  }
  kvikio::test::DeviceBuffer dev{content_.size()};
  expect_eio(
    [&] { kvikio::detail::io_uring_read_to_device(fd_, dev.ptr, content_.size(), 0, nullptr); });
  expect_eio([&] {
    kvikio::detail::io_uring_transfer_all(false, fd_, bytes(content_), content_.size(), 0);
  });
  EXPECT_EQ(pool.num_free_buffers(), free_buffers) << "staging was not given back";
  kvikio::detail::inject_io_uring_fault(Fault{});
  write_content();  // whatever the failed write left
  expect_host_read(content_.size(), 0);
  expect_device_read(content_.size(), 0);
  expect_write(70 * 1000, 3, 9);
}

std::atomic<unsigned> signals_caught{0};
extern "C" void count_signal(int) { signals_caught.fetch_add(1); }

// Signals delivered to the waiting thread (a handler without SA_RESTART, so waits return
// EINTR): transfers go on and move exact bytes.
TEST_F(IoUringDevice, SignalsDuringWaits)
{
  write_content();
  struct sigaction action {};
  struct sigaction old {};
  action.sa_handler = count_signal;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &old), 0);
  signals_caught.store(0);
  std::atomic<bool> done{false};
  pthread_t const target = ::pthread_self();
  std::thread sender{[&] {
    while (!done.load()) {
      ::pthread_kill(target, SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }};
  kvikio::detail::set_io_uring_request_shape(4096, 4);  // many waits
  try {
    for (std::size_t round = 0; round < 20; ++round) {
      expect_host_read((2 << 20) - round, round);
      expect_device_read(200 * 1000, round * 3);
    }
  } catch (std::exception const& e) {
    ADD_FAILURE() << "a transfer under signals threw: " << e.what();
  }
  done.store(true);
  sender.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  EXPECT_GT(signals_caught.load(), 0U) << "no signal landed during the transfers";
}

// A write past RLIMIT_FSIZE: the kernel refuses it (EFBIG; SIGXFSZ ignored), reported as such.
TEST_F(IoUring, WritePastTheFileSizeLimitIsEFBIG)
{
  int error = 0;
  {
    kvikio::test::FileSizeLimit const limit{1 << 20};
    ASSERT_TRUE(limit.set());
    try {
      kvikio::detail::io_uring_transfer_all(false, fd_, bytes(content_), 3 << 20, 0);
    } catch (kvikio::GenericSystemError const& e) {
      error = e.code().value();
    }
  }
  EXPECT_EQ(error, EFBIG);
  std::vector<std::uint8_t> back(1 << 20);
  ASSERT_EQ(::pread(fd_, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
  EXPECT_EQ(0, std::memcmp(back.data(), content_.data(), back.size()))
    << "the bytes below the limit were not written";
}

// The default backend (`auto`) where the kernel refuses io_uring, as seccomp does in many
// containers: a child process answers io_uring_setup with EPERM or ENOSYS (a seccomp filter of
// its own), then reads and writes a file through FileHandle. It must read the file's bytes
// through POSIX and say once, at the info level, why.
TEST(IoUringFallback, AutoUsesPosixWhereSeccompRefusesIoUring)
{
  for (auto const& [err, text] : {std::pair{EPERM, "Operation not permitted"},
                                  std::pair{ENOSYS, "Function not implemented"}}) {
    kvikio::test::TempDir dir;
    auto const content = pattern((3 << 20) + 4097, 23);
    {
      std::ofstream out{dir.file("data"), std::ios::binary};
      out.write(reinterpret_cast<char const*>(content.data()),
                static_cast<std::streamsize>(content.size()));
    }
    int const status =
      kvikio::test::run_child_test("IoUringFallback.DISABLED_Child",
                                   {"KVIKIO_TEST_SECCOMP_ERRNO=" + std::to_string(err),
                                    "KVIKIO_TEST_FILE=" + dir.file("data"),
                                    "KVIKIO_LOCAL_IO_BACKEND=auto",
                                    "KVIKIO_LOG_LEVEL=INFO",
                                    "KVIKIO_LOG_FILE=" + dir.file("log")});
    EXPECT_EQ(status, 0) << "the child failed (errno " << err << ")";
    std::ifstream log{dir.file("log")};
    std::size_t lines = 0;
    for (std::string line; std::getline(log, line);) {
      if (line.find("io_uring is unavailable") == std::string::npos) { continue; }
      ++lines;
      EXPECT_NE(line.find("local I/O uses posix: io_uring is unavailable here (io_uring_setup: " +
                          std::string{text} + ")"),
                std::string::npos)
        << line;
      EXPECT_NE(line.find(" info "), std::string::npos) << line;  // not a warning
    }
    EXPECT_EQ(lines, 1U) << "one line, for errno " << err;
  }
}

TEST(IoUringFallback, DISABLED_Child)
{
  char const* const err_text = std::getenv("KVIKIO_TEST_SECCOMP_ERRNO");
  char const* const path     = std::getenv("KVIKIO_TEST_FILE");
  ASSERT_TRUE(err_text != nullptr && path != nullptr) << "run by its parent test only";
  int const err = std::atoi(err_text);
#if defined(__x86_64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_AARCH64;
#endif
  // io_uring_setup answers `err`; every other call is let through.
  sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
    BPF_STMT(BPF_RET | BPF_K,
             SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(err) & SECCOMP_RET_DATA)),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  ASSERT_EQ(::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0) << std::strerror(errno);
  // Every thread of the process, including any the runtime started already.
  ASSERT_EQ(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program), 0)
    << std::strerror(errno);
  io_uring_params params{};
  errno = 0;
  EXPECT_EQ(::syscall(__NR_io_uring_setup, 4, &params), -1);
  ASSERT_EQ(errno, err) << "the filter is not in place";

  EXPECT_EQ(kvikio::defaults::local_io_backend(), kvikio::LocalIOBackend::AUTO);
  // One thread: `auto` chooses io_uring for reads (up to half the cores), and finds it refused.
  ASSERT_GE(std::thread::hardware_concurrency(), 2U) << "auto never tries io_uring on one core";
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::FileHandle f{path, "r+"};
  std::size_t const size = f.nbytes();
  std::vector<std::uint8_t> expected(size);
  {
    std::ifstream in{path, std::ios::binary};
    in.read(reinterpret_cast<char*>(expected.data()), static_cast<std::streamsize>(size));
  }
  std::vector<std::uint8_t> back(size + 2 * guard, poison);
  EXPECT_EQ(f.pread(back.data() + guard, size, 0, 1 << 20).get(), size);
  EXPECT_EQ(0, std::memcmp(back.data() + guard, expected.data(), size));
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(back[i], poison);
    ASSERT_EQ(back[guard + size + i], poison);
  }
  EXPECT_FALSE(kvikio::detail::io_uring_usable());
  // Writes go through POSIX under auto in any case: they land.
  auto const fresh = pattern(5000, 29);
  EXPECT_EQ(f.pwrite(fresh.data(), fresh.size(), 1234).get(), fresh.size());
  std::vector<std::uint8_t> check(fresh.size(), poison);
  EXPECT_EQ(f.pread(check.data(), check.size(), 1234).get(), check.size());
  EXPECT_EQ(check, fresh);
}

}  // namespace
