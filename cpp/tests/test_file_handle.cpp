/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * FileHandle: open flags, round trips between files and host or device memory over awkward
 * sizes and offsets, thread counts and O_DIRECT, and every kind of bad input. Files are checked
 * with plain POSIX calls; destinations are poisoned and their surroundings guarded.
 */
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/posix_io.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/utils.hpp>

#include "io/io_uring/io_uring_io.hpp"
#include "io/local_plan.hpp"
#include "io/staging/device_staging.hpp"

#include "common/busy_pool.hpp"
#include "common/device.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"

using kvikio::FileHandle;
using kvikio::test::api;
using kvikio::test::pattern;
using kvikio::test::read_file;
using kvikio::test::TempDir;
using kvikio::test::write_file;

namespace {

using kvikio::test::guard;
using kvikio::test::poison;

// Sizes that straddle pages and tasks (task size 64 KiB in these tests).
std::vector<std::size_t> awkward_sizes()
{
  std::size_t const page = kvikio::get_page_size();
  std::size_t const task = 64 << 10;
  return {0, 1, page - 1, page + 1, task - 1, task, task + 1, 3 * task + 5};
}

TEST(FileHandleOpen, Flags)
{
  TempDir dir;
  auto const path = dir.file("f");
  {
    FileHandle w{path, "w"};
    EXPECT_FALSE(w.closed());
    EXPECT_EQ(w.fd_open_flags() & O_ACCMODE, O_WRONLY);
    EXPECT_NE(::fcntl(w.fd(), F_GETFD) & FD_CLOEXEC, 0);
    EXPECT_EQ(w.nbytes(), 0U);
  }
  write_file(path, pattern(100, 1));
  {
    FileHandle r{path, "r"};
    EXPECT_EQ(r.fd_open_flags() & O_ACCMODE, O_RDONLY);
    EXPECT_EQ(r.nbytes(), 100U);
    if (r.is_direct_io_supported()) { EXPECT_NE(r.fd_open_flags(true) & O_DIRECT, 0); }
  }
  {
    FileHandle rw{path, "r+"};
    EXPECT_EQ(rw.fd_open_flags() & O_ACCMODE, O_RDWR);
    EXPECT_EQ(rw.nbytes(), 100U);  // r+ keeps the content
  }
  {
    FileHandle wp{path, "w+"};
    EXPECT_EQ(wp.fd_open_flags() & O_ACCMODE, O_RDWR);
    EXPECT_EQ(wp.nbytes(), 0U);  // w+ truncates
  }
  for (auto bad : {"a", "a+", "x", "", "W", "+r"}) {
    EXPECT_THROW((FileHandle{path, bad}), std::invalid_argument) << bad;
  }
  // Upstream reads the first character and an optional '+' only; the rest is ignored.
  EXPECT_EQ((FileHandle{path, "rb"}).fd_open_flags() & O_ACCMODE, O_RDONLY);
  EXPECT_EQ((FileHandle{path, "r+b"}).fd_open_flags() & O_ACCMODE, O_RDWR);
  try {
    FileHandle missing{dir.file("missing"), "r"};
    FAIL();
  } catch (kvikio::GenericSystemError const& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string{e.what()}.find("missing"), std::string::npos) << e.what();
  }
}

TEST(FileHandleOpen, CloseAndMove)
{
  TempDir dir;
  FileHandle a{dir.file("f"), "w"};
  int const fd = a.fd();
  FileHandle b{std::move(a)};
  EXPECT_TRUE(a.closed());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(b.fd(), fd);
  b.close();
  EXPECT_TRUE(b.closed());
  EXPECT_EQ(b.fd(), -1);
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);  // really closed
  b.close();                            // twice is fine
  std::vector<char> buf(10);
  EXPECT_THROW(b.pread(buf.data(), 10).get(), kvikio::CUfileException);
  EXPECT_EQ(b.nbytes(), 0U);  // upstream: a closed handle has no bytes
}

TEST(FileHandleOpen, CompatModeOffWithoutCufileSaysWhy)
{
  if (kvikio::detail::is_cufile_usable()) {
    GTEST_SKIP() << "cuFile is usable here, so OFF succeeds";
  }
  TempDir dir;
  try {
    FileHandle f{dir.file("f"), "w", FileHandle::m644, kvikio::CompatMode::OFF};
    FAIL() << "compat mode OFF without cuFile was accepted";
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("compat mode is OFF"), std::string::npos) << e.what();
    // Every place the setting comes from is named, not only the variable.
    EXPECT_NE(std::string{e.what()}.find("defaults::set_compat_mode()"), std::string::npos)
      << e.what();
  }
  FileHandle automatic{dir.file("g"), "w", FileHandle::m644, kvikio::CompatMode::AUTO};
  EXPECT_TRUE(automatic.get_compat_mode_manager().is_compat_mode_preferred());
  EXPECT_THROW((void)automatic.handle(), kvikio::CUfileException);
  FileHandle on{dir.file("h"), "w", FileHandle::m644, kvikio::CompatMode::ON};
  EXPECT_TRUE(on.get_compat_mode_manager().is_compat_mode_preferred());
  EXPECT_EQ(on.get_compat_mode_manager().compat_mode_requested(), kvikio::CompatMode::ON);
}

// A property set is the property got, from any DriverProperties (cuFile without nvidia-fs goes on
// reporting its starting values).
TEST(CufileDriver, PropertiesReadBackWhatWasSet)
{
  if (!kvikio::detail::is_cufile_usable()) {
    GTEST_SKIP() << "needs a usable cuFile: " << kvikio::detail::cufile_unusable_reason();
  }
  kvikio::DriverProperties props;
  auto const threshold = props.get_nvfs_poll_thresh_size();
  for (std::size_t const kb : {std::size_t{1024}, std::size_t{2048}, threshold}) {
    props.set_nvfs_poll_thresh_size(kb);
    EXPECT_EQ(props.get_nvfs_poll_thresh_size(), kb);
    EXPECT_EQ(kvikio::DriverProperties{}.get_nvfs_poll_thresh_size(), kb);
  }
  auto const mode = props.get_nvfs_poll_mode();
  props.set_nvfs_poll_mode(!mode);
  EXPECT_EQ(kvikio::DriverProperties{}.get_nvfs_poll_mode(), !mode);
  props.set_nvfs_poll_mode(mode);
  EXPECT_EQ(props.get_nvfs_poll_mode(), mode);
  auto const cache = props.get_max_device_cache_size();
  props.set_max_device_cache_size(cache + 2048);
  EXPECT_EQ(props.get_max_device_cache_size(), cache + 2048);
  props.set_max_device_cache_size(cache);
  EXPECT_EQ(props.get_max_device_cache_size(), cache);
}

TEST(FileHandleErrors, BadInput)
{
  TempDir dir;
  auto const path = dir.file("f");
  write_file(path, pattern(4096, 2));
  FileHandle r{path, "r"};
  std::vector<std::uint8_t> buf(8192, poison);
  EXPECT_THROW(r.pread(nullptr, 10).get(), std::invalid_argument);
  EXPECT_THROW(r.pread(buf.data(), 10, SIZE_MAX - 5).get(), std::overflow_error);
  EXPECT_THROW(r.pread(buf.data(), 10, 0, 0).get(), std::invalid_argument);  // task size 0
  EXPECT_THROW(r.pread(buf.data(), 10, 0, 4096, 0, true, nullptr).get(), kvikio::CUfileException);
  EXPECT_EQ(r.pread(nullptr, 0).get(), 0U);  // nothing to do is fine
  // Writing through a read-only handle.
  try {
    (void)r.pwrite(buf.data(), 10).get();
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("Operation not permitted"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("\"r\""), std::string::npos) << e.what();
  }
}

TEST(FileHandleErrors, ReadPastEndNamesOffsetSizeAndFileSize)
{
  TempDir dir;
  auto const path = dir.file("f");
  write_file(path, pattern(1000, 3));
  FileHandle r{path, "r"};
  std::vector<std::uint8_t> buf(2000, poison);
  try {
    (void)r.pread(buf.data(), 200, 900).get();
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("POSIX error on pread: EOF"), std::string::npos)
      << e.what();
    std::string const what = e.what();
    EXPECT_NE(what.find("offset 900"), std::string::npos) << what;
    EXPECT_NE(what.find("1000 bytes"), std::string::npos) << what;
  }
  // The 100 bytes that exist were read; nothing beyond the request was touched.
  auto const expected = pattern(1000, 3);
  EXPECT_EQ(0, std::memcmp(buf.data(), expected.data() + 900, 100));
  for (std::size_t i = 200; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], poison) << i;
  }
}

// Round trips over sizes and offsets, parameterised by memory kind, threads and O_DIRECT.
using RoundTripParam = std::tuple<bool /*device*/, unsigned /*threads*/, bool /*direct*/>;

class RoundTrip : public kvikio::test::OnDevice,
                  public ::testing::WithParamInterface<RoundTripParam> {
 protected:
  void SetUp() override
  {
    auto const [device, threads, direct] = GetParam();
    if (device) {
      OnDevice::SetUp();
      if (IsSkipped()) { return; }
    }
    kvikio::defaults::set_thread_pool_nthreads(threads);
    kvikio::defaults::set_auto_direct_io_read(direct);
    kvikio::defaults::set_auto_direct_io_write(direct);
  }
  void TearDown() override
  {
    if (std::get<0>(GetParam())) { OnDevice::TearDown(); }
  }

  // A destination of `size` bytes with guards, in the memory kind under test.
  struct Destination {
    bool device;
    std::size_t size;
    std::vector<std::uint8_t> host;
    std::unique_ptr<kvikio::test::DeviceBuffer> dev;
    Destination(bool device_, std::size_t size_) : device{device_}, size{size_}
    {
      if (device) {
        dev = std::make_unique<kvikio::test::DeviceBuffer>(size + 2 * guard);
        std::vector<std::uint8_t> fill(size + 2 * guard, poison);
        KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev->ptr, fill.data(), fill.size()));
      } else {
        host.assign(size + 2 * guard, poison);
      }
    }
    void* data(std::size_t offset = 0)
    {
      return device ? static_cast<void*>(static_cast<char*>(dev->get()) + guard + offset)
                    : static_cast<void*>(host.data() + guard + offset);
    }
    std::vector<std::uint8_t> contents()  // guards included
    {
      if (!device) { return host; }
      std::vector<std::uint8_t> out(size + 2 * guard);
      KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(out.data(), dev->ptr, out.size()));
      return out;
    }
    void fill(std::vector<std::uint8_t> const& bytes, std::size_t offset)
    {
      if (bytes.empty()) { return; }
      if (device) {
        KVIKIO_CUDA_DRIVER_TRY(
          api().MemcpyHtoD(dev->ptr + guard + offset, bytes.data(), bytes.size()));
      } else {
        std::memcpy(host.data() + guard + offset, bytes.data(), bytes.size());
      }
    }
  };
};

TEST_P(RoundTrip, PreadIntoPoisonedDestination)
{
  bool const device      = std::get<0>(GetParam());
  std::size_t const task = 64 << 10;
  TempDir dir;
  auto const path    = dir.file("f");
  auto const content = pattern(4 * task + 4096, 4);
  write_file(path, content);
  FileHandle f{path, "r"};
  for (std::size_t size : awkward_sizes()) {
    for (std::size_t file_offset : {std::size_t{0}, std::size_t{7}, kvikio::get_page_size()}) {
      for (std::size_t buf_offset : {std::size_t{0}, std::size_t{3}}) {
        SCOPED_TRACE("size " + std::to_string(size) + " file offset " +
                     std::to_string(file_offset) + " buffer offset " + std::to_string(buf_offset));
        Destination dst{device, size + buf_offset};
        auto future =
          f.pread(dst.data(buf_offset), size, file_offset, task, /*gds_threshold=*/4096);
        ASSERT_EQ(future.get(), size);
        auto const got = dst.contents();
        for (std::size_t i = 0; i < guard + buf_offset; ++i) {
          ASSERT_EQ(got[i], poison) << "byte before the destination was written: " << i;
        }
        ASSERT_EQ(0,
                  std::memcmp(got.data() + guard + buf_offset, content.data() + file_offset, size));
        for (std::size_t i = guard + buf_offset + size; i < got.size(); ++i) {
          ASSERT_EQ(got[i], poison) << "byte after the destination was written: " << i;
        }
      }
    }
  }
}

TEST_P(RoundTrip, PwriteThenReadBackWithPosix)
{
  bool const device      = std::get<0>(GetParam());
  std::size_t const task = 64 << 10;
  TempDir dir;
  for (std::size_t size : awkward_sizes()) {
    for (std::size_t file_offset : {std::size_t{0}, std::size_t{5}, kvikio::get_page_size() * 2}) {
      SCOPED_TRACE("size " + std::to_string(size) + " file offset " + std::to_string(file_offset));
      std::string name = "w";  // (appended, not concatenated: GCC 12 warns falsely on the latter)
      name.append(std::to_string(size)).append("_").append(std::to_string(file_offset));
      auto const path    = dir.file(name);
      auto const content = pattern(size, static_cast<std::uint32_t>(size + file_offset));
      Destination src{device, size};
      src.fill(content, 0);
      // A file with a prefix that must survive, written with "r+".
      auto const prefix = pattern(file_offset, 99);
      write_file(path, prefix);
      FileHandle f{path, "r+"};
      ASSERT_EQ(f.pwrite(src.data(), size, file_offset, task, 4096).get(), size);
      EXPECT_EQ(f.nbytes(), file_offset + size);
      f.close();
      auto const on_disk = read_file(path);
      ASSERT_EQ(on_disk.size(), file_offset + size);
      ASSERT_TRUE(std::equal(prefix.begin(), prefix.end(), on_disk.begin()));
      ASSERT_TRUE(std::equal(content.begin(),
                             content.end(),
                             on_disk.begin() + static_cast<std::ptrdiff_t>(file_offset)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(MemoryThreadsDirect,
                         RoundTrip,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(1U, 4U),
                                            ::testing::Bool()),
                         [](auto const& info) {
                           return std::string{std::get<0>(info.param) ? "device" : "host"} + "_" +
                                  std::to_string(std::get<1>(info.param)) + "threads_" +
                                  (std::get<2>(info.param) ? "direct" : "buffered");
                         });

TEST(FileHandleDirect, DirectDescriptorOnDiskBackedFiles)
{
  TempDir dir;
  FileHandle f{dir.file("f"), "w"};
  if (!f.is_direct_io_supported()) {
    GTEST_SKIP() << "the temp directory's file system refuses O_DIRECT (tmpfs does)";
  }
  EXPECT_GE(f.fd(true), 0);
  EXPECT_NE(f.fd(true), f.fd());
}

// Upstream's detail::posix_host_io, which its tests call: every split (unaligned head, whole pages
// from aligned and unaligned buffers, short tail), reads and writes, with and without an O_DIRECT
// descriptor, against plain pread; partial transfers stop after one piece; a bad descriptor and a
// read past the end fail in upstream's words.
TEST(PosixHostIo, UpstreamsEntryPoint)
{
  using kvikio::detail::IOOperationType;
  using kvikio::detail::PartialIO;
  using kvikio::detail::posix_host_io;
  TempDir dir;
  auto const path        = dir.file("f");
  std::size_t const page = kvikio::get_page_size();
  auto content           = pattern(6 * page + 123, 21);
  write_file(path, content);
  int const fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  int const fd_direct = ::open(path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  std::vector<int> direct_fds{-1};
  if (fd_direct >= 0) { direct_fds.push_back(fd_direct); }
  struct Case {
    std::size_t offset, size, misalign;
  };
  std::vector<Case> const cases{{0, 5 * page, 0},
                                {1, 5 * page, 0},
                                {page, 3 * page, 0},
                                {page, 3 * page, 1},
                                {7, 5 * page + 100, 3},
                                {2 * page, page - 1, 0}};
  auto* base = static_cast<std::uint8_t*>(std::aligned_alloc(page, 9 * page));
  ASSERT_NE(base, nullptr);
  for (int const direct : direct_fds) {
    for (auto const& c : cases) {
      std::memset(base, poison, 9 * page);
      std::uint8_t* dst = base + page + c.misalign;
      EXPECT_EQ(
        (posix_host_io<IOOperationType::READ, PartialIO::NO>(fd, dst, c.size, c.offset, direct)),
        static_cast<ssize_t>(c.size));
      EXPECT_EQ(std::memcmp(dst, content.data() + c.offset, c.size), 0)
        << "direct " << direct << " offset " << c.offset << " size " << c.size;
      for (std::uint8_t* p = base; p < dst; ++p) {
        ASSERT_EQ(*p, poison) << "written before the destination";
      }
      for (std::uint8_t* p = dst + c.size; p < base + 9 * page; ++p) {
        ASSERT_EQ(*p, poison) << "written after the destination";
      }
    }
    // One piece only: the unaligned head when direct, everything asked for otherwise.
    std::size_t const got =
      posix_host_io<IOOperationType::READ, PartialIO::YES>(fd, base + page, 3 * page, 1, direct);
    EXPECT_EQ(got, direct == -1 ? 3 * page : page - 1);
    EXPECT_EQ(std::memcmp(base + page, content.data() + 1, got), 0);
    // Writes, read back with plain pread.
    auto const fresh = pattern(4 * page + 10, direct == -1 ? 22 : 23);
    std::memcpy(base + page + 5, fresh.data(), fresh.size());
    EXPECT_EQ((posix_host_io<IOOperationType::WRITE, PartialIO::NO>(
                fd, base + page + 5, fresh.size(), 3, direct)),
              static_cast<ssize_t>(fresh.size()));
    std::memcpy(content.data() + 3, fresh.data(), fresh.size());
    EXPECT_EQ(read_file(path), content);
  }
  std::free(base);
  std::vector<std::uint8_t> buf(page + 1);
  try {
    (void)posix_host_io<IOOperationType::READ, PartialIO::YES>(fd, buf.data() + 1, page, 0, -2);
    ADD_FAILURE() << "a bad O_DIRECT descriptor was accepted";
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("POSIX error: Operation not permitted"), std::string::npos)
      << e.what();
  }
  try {
    (void)posix_host_io<IOOperationType::READ, PartialIO::NO>(
      fd, buf.data(), 100, content.size() - 50);
    ADD_FAILURE() << "a read past the end was accepted";
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("POSIX error on pread: EOF"), std::string::npos)
      << e.what();
  }
  if (fd_direct >= 0) { ::close(fd_direct); }
  ::close(fd);
}

TEST(FileHandleThreads, ManyConcurrentCallersOnOneHandle)
{
  TempDir dir;
  auto const path     = dir.file("f");
  std::size_t const n = 1 << 20;
  auto const content  = pattern(n, 8);
  write_file(path, content);
  kvikio::defaults::set_thread_pool_nthreads(8);
  FileHandle f{path, "r"};
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t) {
    callers.emplace_back([&, t] {
      std::vector<std::uint8_t> buf(n / 2, poison);
      std::size_t const offset = static_cast<std::size_t>(t) * 4097;
      if (f.pread(buf.data(), buf.size(), offset, 16 << 10).get() != buf.size() ||
          std::memcmp(buf.data(), content.data() + offset, buf.size()) != 0) {
        ++wrong;
      }
    });
  }
  for (auto& c : callers) {
    c.join();
  }
  EXPECT_EQ(wrong.load(), 0);
}

TEST(FileHandleThreads, PerBlockDevicePool)
{
  TempDir dir;
  auto const path    = dir.file("f");
  auto const content = pattern(300000, 9);
  write_file(path, content);
  kvikio::defaults::set_thread_pool_per_block_device(true);
  FileHandle f{path, "r"};
  std::vector<std::uint8_t> buf(content.size(), poison);
  EXPECT_EQ(f.pread(buf.data(), buf.size(), 0, 4096).get(), buf.size());
  EXPECT_EQ(buf, content);
  kvikio::defaults::set_thread_pool_per_block_device(false);
}

using kvikio::test::OnDevice;

// Work queued earlier on the legacy default stream lands before a device read's bytes (and
// before a device write reads its source), whatever sync_default_stream says, as the non-async
// CUDA API's does: a slow host function and then a fill of poison on the legacy stream, then the
// read - which would be overwritten by the fill if its copy did not wait for it.
TEST_F(OnDevice, DeviceTransfersAreOrderedAfterTheLegacyDefaultStream)
{
  TempDir dir;
  auto const path     = dir.file("f");
  std::size_t const n = 200000;
  auto const content  = pattern(n, 12);
  write_file(path, content);
  FileHandle f{path, "r+"};
  kvikio::test::DeviceBuffer dev{n};
  auto const slow_fill = [&](unsigned char byte) {
    KVIKIO_CUDA_DRIVER_TRY(api().LaunchHostFunc(
      CU_STREAM_LEGACY,
      [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); },
      nullptr));
    KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8Async(dev.ptr, byte, n, CU_STREAM_LEGACY));
  };
  for (bool const sync : {true, false}) {
    for (std::size_t const threshold : {std::size_t{0}, n + 1}) {  // in tasks; on this thread
      slow_fill(poison);
      ASSERT_EQ(f.pread(dev.get(), n, 0, 64 << 10, threshold, sync).get(), n);
      std::vector<std::uint8_t> back(n);
      KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, n));
      EXPECT_EQ(back, content) << "read, sync_default_stream " << sync << ", threshold "
                               << threshold;
      // A write of bytes the legacy stream fills first: the file gets the fill.
      slow_fill(0x5A);
      ASSERT_EQ(f.pwrite(dev.get(), n, 0, 64 << 10, threshold, sync).get(), n);
      auto const disk = read_file(path);
      EXPECT_TRUE(std::all_of(disk.begin(), disk.end(), [](auto b) { return b == 0x5A; }))
        << "write, sync_default_stream " << sync << ", threshold " << threshold;
      write_file(path, content);
    }
  }
}

// Holds the device copies of every stream behind a host function on the legacy default stream
// (the staged backends' streams are blocking ones) until release(); released at the latest when
// it goes out of scope, so that a failing test does not hang.
class CopyGate {
 public:
  CopyGate()
  {
    KVIKIO_CUDA_DRIVER_TRY(api().LaunchHostFunc(
      CU_STREAM_LEGACY,
      [](void* open) {
        while (!static_cast<std::atomic<bool>*>(open)->load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      },
      &open_));
  }
  ~CopyGate()
  {
    release();
    EXPECT_EQ(api().StreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
  }
  CopyGate(CopyGate const&)            = delete;
  CopyGate& operator=(CopyGate const&) = delete;
  void release() { open_ = true; }

 private:
  std::atomic<bool> open_{false};
};

// Polls until `done()` holds, for at most 20 s; returns whether it held.
template <typename Done>
bool eventually(Done done)
{
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) { return false; }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// One pool worker whose staging ring has 4 slots of 1 MiB: reads up to 1 MiB overlap their
// copies, and 8 reads of 20000 bytes fill a slot.
void one_worker_with_one_mib_slots()
{
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::defaults::set_task_size(4 << 20);
  kvikio::defaults::set_bounce_buffer_size(16 << 20);
  kvikio::defaults::set_num_bounce_buffers(4);
}

// Whether none of `futures` is ready yet.
bool none_ready(std::vector<std::future<std::size_t>> const& futures)
{
  return std::none_of(futures.begin(), futures.end(), [](auto const& fut) {
    return fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
}

// Whether the `n` bytes at `at + guard` are those at `expected`, and the bytes around them (a
// guard before, poison up to `at + stride` after) still poison.
::testing::AssertionResult guarded_bytes(std::uint8_t const* at,
                                         std::size_t n,
                                         std::size_t stride,
                                         std::uint8_t const* expected)
{
  auto const poisoned = [](auto b) { return b == poison; };
  if (!std::equal(at + guard, at + guard + n, expected)) {
    return ::testing::AssertionFailure() << "wrong bytes";
  }
  if (!std::all_of(at, at + guard, poisoned)) {
    return ::testing::AssertionFailure() << "written before the destination";
  }
  if (!std::all_of(at + guard + n, at + stride, poisoned)) {
    return ::testing::AssertionFailure() << "written after the destination";
  }
  return ::testing::AssertionSuccess();
}

// While the pool is backlogged (as many tasks queued as it has threads), a host read of up to one
// task by system calls runs on the calling thread: its future is ready when pread returns, even
// with the only worker held. Without a backlog, or for more than one task, or through io_uring
// (named in the setting: its queue is the pool's threads'), the read waits for the pool; so does a
// write (one pool thread keeps writes in order). Bytes and guards checked at, below and above the
// task size.
TEST(FileHandleThreads, HostReadsRunOnTheCallerWhileThePoolIsBacklogged)
{
  TempDir dir;
  auto const path        = dir.file("f");
  std::size_t const task = 64 << 10;
  std::size_t const n    = 4 * task;
  auto const content     = pattern(n, 31);
  write_file(path, content);
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::defaults::set_task_size(task);
  auto& pool = kvikio::defaults::thread_pool();
  FileHandle f{path, "r+"};
  bool const by_io_uring   = kvikio::detail::io_uring_selected(true, task, 1, true);
  std::size_t const stride = 2 * task + 2 * guard;
  std::vector<std::uint8_t> bufs(4 * stride, poison);
  auto* const queued_dst = bufs.data();  // waits for the pool: no backlog yet
  auto* const inline_dst = bufs.data() + stride;
  auto* const under_dst  = bufs.data() + 2 * stride;
  auto* const over_dst   = bufs.data() + 3 * stride;  // two tasks: never on the caller
  auto const fresh       = pattern(task, 32);
  std::future<std::size_t> queued, on_caller, under, over, written;
  {
    kvikio::test::BusyPool busy;
    ASSERT_TRUE(eventually([&] { return pool.get_tasks_running() == 1; }));
    EXPECT_FALSE(pool.is_backlogged());
    queued = f.pread(queued_dst + guard, task, 5, task, 4096);
    EXPECT_EQ(queued.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "a read ran on the caller although the pool had no backlog";
    EXPECT_TRUE(pool.is_backlogged());
    on_caller        = f.pread(inline_dst + guard, task, 7, task, 4096);
    under            = f.pread(under_dst + guard, task - 1, 100, task, 4096);
    over             = f.pread(over_dst + guard, task + 1, 3, task, 4096);
    written          = f.pwrite(fresh.data(), fresh.size(), 3 * task, task, 4096);
    auto const ready = [](auto const& fut) {
      return fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    };
    EXPECT_EQ(ready(on_caller), !by_io_uring)
      << "a read of one task did not run on the caller while the pool was backlogged";
    EXPECT_EQ(ready(under), !by_io_uring);
    EXPECT_FALSE(ready(over)) << "a read of two tasks ran on the caller";
    EXPECT_FALSE(ready(written)) << "a write ran on the caller";
    EXPECT_FALSE(ready(queued));
  }
  EXPECT_EQ(queued.get(), task);
  EXPECT_EQ(on_caller.get(), task);
  EXPECT_EQ(under.get(), task - 1);
  EXPECT_EQ(over.get(), task + 1);
  EXPECT_EQ(written.get(), task);
  EXPECT_TRUE(guarded_bytes(queued_dst, task, stride, content.data() + 5));
  EXPECT_TRUE(guarded_bytes(inline_dst, task, stride, content.data() + 7));
  EXPECT_TRUE(guarded_bytes(under_dst, task - 1, stride, content.data() + 100));
  EXPECT_TRUE(guarded_bytes(over_dst, task + 1, stride, content.data() + 3));
  EXPECT_TRUE(eventually([&] { return !pool.is_backlogged(); }));
  auto const after = read_file(path);
  EXPECT_TRUE(std::equal(fresh.begin(), fresh.end(), after.begin() + 3 * task));
  EXPECT_TRUE(std::equal(content.begin(), content.begin() + 3 * task, after.begin()));
}

// A transfer done on the calling thread (small, or a read while the pool is backlogged) reports
// its error through its future, as a pool task does: pread itself returns.
TEST(FileHandleThreads, ATransferOnTheCallerFailsThroughItsFuture)
{
  TempDir dir;
  auto const path = dir.file("f");
  write_file(path, pattern(1 << 20, 33));
  FileHandle f{path, "r"};
  ASSERT_EQ(::truncate(path.c_str(), 1000), 0);  // the handle still takes the file for 1 MiB
  std::vector<std::uint8_t> buf(4096, poison);
  std::future<std::size_t> read;
  ASSERT_NO_THROW(read = f.pread(buf.data(), buf.size(), 500000, 1 << 20, 1 << 20));
  EXPECT_THROW(read.get(), kvikio::CUfileException);
}

// A device read of at most one staging slot leaves its copy in flight on the pool worker, which
// goes on to the next read: with the copies held up, a one-thread pool still takes every queued
// read. No future is ready before its bytes are in device memory; each is ready afterwards
// without anyone calling get(), and the pinned buffer is back in the pool by then.
TEST_F(OnDevice, SmallDeviceReadsGoOnWhileTheirCopiesRun)
{
  TempDir dir;
  auto const path         = dir.file("f");
  std::size_t const size  = 50000;  // above the 16 KiB threshold: through the pool
  std::size_t const reads = 3;      // fewer than the ring's slots (4)
  auto const content      = pattern(1 << 20, 31);
  write_file(path, content);
  kvikio::defaults::set_thread_pool_nthreads(1);
  ASSERT_GE(kvikio::detail::overlapped_read_limit(), size);
  FileHandle f{path, "r"};
  std::size_t const stride = size + 2 * guard;
  kvikio::test::DeviceBuffer dev{reads * stride};
  std::vector<std::uint8_t> const poisoned(dev.size, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, poisoned.data(), dev.size));
  auto& pool = kvikio::BounceBufferPool<>::instance();
  // One read first, so that the pool holds the buffer the worker's ring takes.
  ASSERT_EQ(f.pread(static_cast<char*>(dev.get()) + guard, size, 0).get(), size);
  std::size_t const free_before = pool.num_free_buffers();
  std::vector<std::future<std::size_t>> futures;
  {
    CopyGate gate;
    for (std::size_t i = 0; i < reads; ++i) {
      futures.push_back(
        f.pread(static_cast<char*>(dev.get()) + i * stride + guard, size, 1000 * i + 7));
    }
    EXPECT_TRUE(eventually([] { return kvikio::defaults::thread_pool().get_tasks_queued() == 0; }))
      << "the worker waited for a copy before taking the next read";
    EXPECT_TRUE(none_ready(futures)) << "a future is ready before its copy ran";
    gate.release();
    for (auto& fut : futures) {
      EXPECT_TRUE(eventually(
        [&] { return fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }))
        << "a future is not made ready until get()";
    }
  }
  EXPECT_EQ(pool.num_free_buffers(), free_before) << "the worker's ring kept its buffer";
  std::vector<std::uint8_t> back(dev.size);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, dev.size));
  for (std::size_t i = 0; i < reads; ++i) {
    ASSERT_EQ(futures[i].get(), size);
    EXPECT_TRUE(guarded_bytes(back.data() + i * stride, size, stride, &content[1000 * i + 7]))
      << "read " << i;
  }
}

// A task of another kind that waits for an overlapped read's future on the same one-thread pool
// (the worker is the one that must finish that read) does not deadlock: the worker finishes
// what it left before starting such a task.
TEST_F(OnDevice, ATaskWaitingForAnOverlappedReadOnItsWorkerEnds)
{
  TempDir dir;
  auto const path        = dir.file("f");
  std::size_t const size = 40000;
  auto const content     = pattern(size + 100, 32);
  write_file(path, content);
  kvikio::defaults::set_thread_pool_nthreads(1);
  FileHandle f{path, "r"};
  kvikio::test::DeviceBuffer dev{size};
  std::future<std::size_t> waited;
  {
    CopyGate gate;
    auto read = f.pread(dev.get(), size, 100);
    waited    = kvikio::defaults::thread_pool().submit_task([&read] { return read.get(); });
    EXPECT_TRUE(eventually([] { return kvikio::defaults::thread_pool().get_tasks_queued() == 0; }));
    gate.release();
    ASSERT_EQ(waited.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the task waiting for the read on the read's own worker never ended";
  }
  EXPECT_EQ(waited.get(), size);
  std::vector<std::uint8_t> back(size);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, size));
  EXPECT_TRUE(std::equal(back.begin(), back.end(), content.begin() + 100));
}

// Many device reads in flight from several callers on several workers, of sizes at and around
// the largest one a worker leaves in flight (one slot: 16 KiB with these settings) and far
// below it, at unaligned offsets: every byte right, nothing written around a destination.
TEST_F(OnDevice, ManyOverlappedReadsInFlightAroundTheSlotSize)
{
  TempDir dir;
  auto const path    = dir.file("f");
  auto const content = pattern(3 << 20, 33);
  write_file(path, content);
  kvikio::defaults::set_thread_pool_nthreads(3);
  kvikio::defaults::set_task_size(64 << 10);
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  std::size_t const limit = kvikio::detail::overlapped_read_limit();
  ASSERT_EQ(limit, 16U << 10);
  FileHandle f{path, "r"};
  std::vector<std::size_t> const sizes{limit - 1, limit, limit + 1, 4097, 1, 3 * limit + 5};
  std::size_t const callers = 4, in_flight = 8, per_caller = 24;
  std::size_t const stride = 3 * limit + 5 + 2 * guard;
  kvikio::test::DeviceBuffer dev{callers * per_caller * stride};
  std::vector<std::uint8_t> const poisoned(dev.size, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, poisoned.data(), dev.size));
  auto const offset_of = [&](std::size_t read) { return (read * 7919 * 13) % (2 << 20) + 3; };
  auto const size_of   = [&](std::size_t read) { return sizes[read % sizes.size()]; };
  std::vector<std::thread> threads;
  std::atomic<std::size_t> wrong_counts{0};
  for (std::size_t c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      kvikio::PushAndPopContext const context{ctx_};
      std::vector<std::future<std::size_t>> pending;
      std::vector<std::size_t> expected;
      for (std::size_t i = 0; i < per_caller; ++i) {
        std::size_t const read = c * per_caller + i;
        if (pending.size() == in_flight) {
          if (pending.front().get() != expected.front()) { ++wrong_counts; }
          pending.erase(pending.begin());
          expected.erase(expected.begin());
        }
        // gds_threshold 0: every size goes through the pool.
        pending.push_back(f.pread(static_cast<char*>(dev.get()) + read * stride + guard,
                                  size_of(read),
                                  offset_of(read),
                                  kvikio::defaults::task_size(),
                                  0));
        expected.push_back(size_of(read));
      }
      for (std::size_t i = 0; i < pending.size(); ++i) {
        if (pending[i].get() != expected[i]) { ++wrong_counts; }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(wrong_counts, 0U);
  std::vector<std::uint8_t> back(dev.size);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, dev.size));
  for (std::size_t read = 0; read < callers * per_caller; ++read) {
    ASSERT_TRUE(
      guarded_bytes(back.data() + read * stride, size_of(read), stride, &content[offset_of(read)]))
      << "read " << read << ": " << size_of(read) << " bytes at " << offset_of(read);
  }
}

// 11 device reads of 20000 bytes (above the 16 KiB threshold, 5 pages of a 1 MiB slot each)
// queued behind a task that holds the only pool worker, their copies held up on the device until
// the worker has taken every read; `before_release` runs just before the worker is let go, while
// the driver's calls are counted. Checks that no future is ready before the copies ran, and
// every read's bytes and surroundings; returns the driver calls counted.
std::map<std::string, std::size_t> queued_reads_behind_a_held_worker(
  std::function<void()> const& before_release)
{
  auto const trace = kvikio::test::simulator_hook<kvikio::test::TraceCalls>("cudasim_trace_calls");
  TempDir dir;
  auto const path         = dir.file("f");
  std::size_t const size  = 20000;
  std::size_t const reads = 11;
  auto const content      = pattern(1 << 20, 34);
  write_file(path, content);
  one_worker_with_one_mib_slots();
  EXPECT_EQ(kvikio::detail::overlapped_read_limit(), 1U << 20);
  auto& pool = kvikio::defaults::thread_pool();
  FileHandle f{path, "r"};
  std::size_t const stride = size + 2 * guard;
  kvikio::test::DeviceBuffer dev{reads * stride};
  std::vector<std::uint8_t> const poisoned(dev.size, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, poisoned.data(), dev.size));
  // One read first: the worker's stream and the slot's event exist before the count starts.
  EXPECT_EQ(f.pread(static_cast<char*>(dev.get()) + guard, size, 0).get(), size);
  std::vector<std::future<std::size_t>> futures;
  {
    CopyGate gate;
    std::promise<void> go;
    auto held    = go.get_future().share();
    auto blocker = pool.submit_task([held] { held.wait(); });
    for (std::size_t i = 0; i < reads; ++i) {
      futures.push_back(
        f.pread(static_cast<char*>(dev.get()) + i * stride + guard, size, 3000 * i + 11));
    }
    trace(1);
    before_release();
    go.set_value();
    blocker.get();
    EXPECT_TRUE(eventually([&] { return pool.get_tasks_total() == 0; }))
      << "the worker did not take every queued read while the copies were held up";
    EXPECT_TRUE(none_ready(futures)) << "a future is ready before its copy ran";
  }
  for (auto& fut : futures) {
    EXPECT_EQ(fut.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "a read whose copy was held back never ended";
  }
  trace(0);  // every copy has started: its future is ready
  for (auto& fut : futures) {
    if (fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      EXPECT_EQ(fut.get(), size);
    }
  }
  std::vector<std::uint8_t> back(dev.size);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, dev.size));
  for (std::size_t i = 0; i < reads; ++i) {
    EXPECT_TRUE(guarded_bytes(back.data() + i * stride, size, stride, &content[3000 * i + 11]))
      << "read " << i;
  }
  return kvikio::test::traced_driver_calls();
}

// Device reads queued one behind another on a worker start their copies together: one
// cuMemcpyBatchAsync for up to 8 reads packed into a slot, not a copy call per read (the driver
// issues single copies at a fixed cost each). The first read's copy starts at once (nothing of
// the worker's in flight), the next 8 go in one batch once the slot is full, the last 2 in one
// when the worker runs out of reads.
TEST_F(OnDevice, QueuedSmallDeviceReadsStartTheirCopiesTogether)
{
  if (kvikio::test::simulator_hook<kvikio::test::TraceCalls>("cudasim_trace_calls") == nullptr) {
    GTEST_SKIP() << "counts the driver's calls, which only the simulator can";
  }
  auto calls = queued_reads_behind_a_held_worker([] {});
  EXPECT_EQ(calls["cuMemcpyHtoDAsync"], 1U) << "only the first read's copy goes alone";
  EXPECT_EQ(calls["cuMemcpyBatchAsync"], 2U) << "the other reads' copies did not go in two batches";
}

// A batch the driver refuses is tried copy by copy: a read fails only if its own copy does
// (here none does, and every byte lands).
TEST_F(OnDevice, ARefusedBatchOfReadsIsCopiedReadByRead)
{
  auto const fail = kvikio::test::simulator_hook<kvikio::test::FailCall>("cudasim_fail_call");
  if (fail == nullptr) {
    GTEST_SKIP() << "makes the driver refuse a call, which only the simulator can";
  }
  auto calls = queued_reads_behind_a_held_worker(
    [fail] { fail("cuMemcpyBatchAsync", 1, CUDA_ERROR_INVALID_VALUE); });
  fail(nullptr, 0, 0);
  EXPECT_EQ(calls["cuMemcpyBatchAsync"], 2U);
  EXPECT_EQ(calls["cuMemcpyHtoDAsync"], 9U)
    << "the refused batch's 8 copies were not retried alone";
}

// close() racing device reads whose copies a worker holds back: close() waits for the reads
// still queued (they read through the handle's descriptor) but not for copies the device has
// yet to run, whose bytes are already staged. Another file opened meanwhile (it may take the
// closed descriptor's number) is read by the same worker, its read packed beside the held-back
// ones: every read returns its own file's bytes, nothing lands around a destination, and the
// pinned buffer goes back to the pool.
TEST_F(OnDevice, CloseRacingHeldBackDeviceReadsLosesAndCrossesNothing)
{
  TempDir dir;
  auto const path_a       = dir.file("a");
  auto const path_b       = dir.file("b");
  std::size_t const size  = 20000;  // above the 16 KiB threshold; 5 pages of a 1 MiB slot
  std::size_t const reads = 11;     // more than one slot's 8
  auto const a            = pattern(1 << 20, 35);
  auto const b            = pattern(1 << 20, 36);
  write_file(path_a, a);
  write_file(path_b, b);
  one_worker_with_one_mib_slots();
  ASSERT_EQ(kvikio::detail::overlapped_read_limit(), 1U << 20);
  auto& workers            = kvikio::defaults::thread_pool();
  auto& buffers            = kvikio::BounceBufferPool<>::instance();
  std::size_t const stride = size + 2 * guard;
  kvikio::test::DeviceBuffer dev{(reads + 1) * stride};  // the last place is b's
  std::vector<std::uint8_t> const poisoned(dev.size, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, poisoned.data(), dev.size));
  auto const at = [&](std::size_t i) { return static_cast<char*>(dev.get()) + i * stride + guard; };
  FileHandle f{path_a, "r"};
  // One read first, so that the pool holds the buffer the worker's ring takes.
  ASSERT_EQ(f.pread(at(0), size, 0).get(), size);
  std::size_t const free_before = buffers.num_free_buffers();
  auto const offset_of          = [](std::size_t i) { return 3000 * i + 11; };
  std::vector<std::future<std::size_t>> futures;
  std::future<std::size_t> of_b;
  {
    CopyGate gate;
    std::promise<void> go;
    auto held    = go.get_future().share();
    auto blocker = workers.submit_task([held] { held.wait(); });
    for (std::size_t i = 0; i < reads; ++i) {
      futures.push_back(f.pread(at(i), size, offset_of(i)));
    }
    auto closing = std::async(std::launch::async, [&] { f.close(); });
    EXPECT_EQ(closing.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "close() returned while reads through the handle were still queued";
    go.set_value();
    blocker.get();
    ASSERT_EQ(closing.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "close() waited for copies the device had not run";
    closing.get();
    FileHandle g{path_b, "r"};
    of_b = g.pread(at(reads), size, 777);
    EXPECT_TRUE(eventually([&] { return workers.get_tasks_total() == 0; }))
      << "the worker did not take the other file's read while copies were held back";
    EXPECT_TRUE(none_ready(futures)) << "a future is ready before its copy ran";
  }
  for (auto& fut : futures) {
    ASSERT_EQ(fut.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "a read whose handle was closed never ended";
    EXPECT_EQ(fut.get(), size);
  }
  EXPECT_EQ(of_b.get(), size);
  EXPECT_TRUE(eventually([&] { return buffers.num_free_buffers() == free_before; }))
    << "the worker's ring kept its pinned buffer";
  std::vector<std::uint8_t> back(dev.size);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, dev.size));
  for (std::size_t i = 0; i < reads; ++i) {
    EXPECT_TRUE(guarded_bytes(back.data() + i * stride, size, stride, &a[offset_of(i)]))
      << "read " << i << " of the closed handle";
  }
  EXPECT_TRUE(guarded_bytes(back.data() + reads * stride, size, stride, &b[777]))
    << "the other file's read";
}

// A future the caller keeps after its read is done holds no claim on the handle: close()
// returns (reads of one task into host and device memory, and of several).
TEST_F(OnDevice, CloseDoesNotWaitForFuturesTheCallerKeeps)
{
  TempDir dir;
  auto const path     = dir.file("f");
  std::size_t const n = 100000;
  write_file(path, pattern(n, 13));
  FileHandle f{path, "r"};
  std::vector<std::uint8_t> host(n);
  kvikio::test::DeviceBuffer dev{n};
  std::vector<std::future<std::size_t>> kept;
  kept.push_back(f.pread(host.data(), n, 0, n, 0));  // one task, through the pool
  kept.push_back(f.pread(dev.get(), n, 0, n, 0));
  kept.push_back(f.pread(host.data(), n, 0, n / 4, 0));  // several
  for (auto& k : kept) {
    k.wait();
  }
  auto closing = std::async(std::launch::async, [&] { f.close(); });
  EXPECT_EQ(closing.wait_for(std::chrono::seconds(30)), std::future_status::ready)
    << "close() waits for futures that are done";
  kept.clear();  // lets a close() that waits for them return
  closing.get();
  EXPECT_TRUE(f.closed());
}

TEST_F(OnDevice, ReadAndWriteAsync)
{
  {
    TempDir dir;
    auto const path     = dir.file("f");
    std::size_t const n = 100000;
    auto const content  = pattern(n, 10);
    write_file(path, content);
    kvikio::test::DeviceBuffer dev{n};
    kvikio::test::Stream stream;
    FileHandle f{path, "r+"};
    auto future = f.read_async(dev.get(), n, 0, 0, stream.handle);
    EXPECT_EQ(future.check_bytes_done(), n);
    std::vector<std::uint8_t> back(n, poison);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, n));
    EXPECT_EQ(back, content);
    auto wfuture = f.write_async(dev.get(), 1000, static_cast<off_t>(n), 0, stream.handle);
    EXPECT_EQ(wfuture.check_bytes_done(), 1000U);
    EXPECT_EQ(f.nbytes(), n + 1000);
    f.close();
    auto const disk = read_file(path);
    EXPECT_EQ(0, std::memcmp(disk.data() + n, content.data(), 1000));
  }
}

TEST_F(OnDevice, BounceBufferPoolReturnsAndResizes)
{
  auto& pool = kvikio::BounceBufferPool<>::instance();
  pool.clear();
  kvikio::defaults::set_bounce_buffer_size(1 << 17);
  {
    auto a = pool.get();
    auto b = pool.get();
    EXPECT_EQ(a.size(), 1U << 17);
    EXPECT_NE(a.get(), b.get());
    EXPECT_EQ(pool.num_free_buffers(), 0U);
  }
  EXPECT_EQ(pool.num_free_buffers(), 2U);
  {
    auto c = pool.get();  // reused
    EXPECT_EQ(pool.num_free_buffers(), 1U);
  }
  kvikio::defaults::set_bounce_buffer_size(1 << 16);
  {
    auto d = pool.get();  // the old ones no longer fit and are freed
    EXPECT_EQ(d.size(), 1U << 16);
    EXPECT_EQ(pool.num_free_buffers(), 0U);
  }
  EXPECT_EQ(pool.clear(), pool.buffer_size());  // one buffer, in bytes
}

// A device read of one chunk on the calling thread (smaller than gds_threshold) stages through
// the smallest of the pool's buffers that holds it, not a whole bounce buffer: every thread that
// reads a small chunk would otherwise pin one. Bytes and guards at a page and around it.
TEST_F(OnDevice, OneChunkDeviceReadsHoldOnlyTheirSize)
{
  kvikio::defaults::set_bounce_buffer_size(16 << 20);
  TempDir dir;
  auto const path        = dir.file("f");
  std::size_t const page = kvikio::get_page_size();
  auto const content     = pattern(4 * page, 37);
  write_file(path, content);
  FileHandle f{path, "r"};
  auto& pool = kvikio::BounceBufferPool<>::instance();
  pool.clear();
  for (std::size_t const n : {page - 1, page, page + 1, 3 * page}) {
    kvikio::test::DeviceBuffer dev{n + 2 * guard};
    std::vector<std::uint8_t> back(n + 2 * guard, poison);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, back.data(), back.size()));
    KVIKIO_CUDA_DRIVER_TRY(api().CtxSynchronize());
    auto* const dst = static_cast<char*>(dev.get()) + guard;
    ASSERT_EQ(f.pread(dst, n, 11, 1 << 20, 1 << 20).get(), n);  // below gds_threshold
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
    ASSERT_EQ(0, std::memcmp(back.data() + guard, content.data() + 11, n)) << n;
    for (std::size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(back[i], poison) << "written before the destination";
      ASSERT_EQ(back[guard + n + i], poison) << "written after the destination";
    }
  }
  EXPECT_EQ(pool.bytes_on_loan(), 0U);
  if (kvikio::detail::io_uring_selected(true, page, kvikio::defaults::thread_pool_nthreads())) {
    return;  // io_uring named in the setting: its own staging, registered once per buffer
  }
  EXPECT_EQ(pool.num_free_buffers(), 0U) << "a small read took a whole bounce buffer";
  EXPECT_EQ(pool.pinned_bytes(), pool.part_pool_for(1).pinned_bytes());  // 64 KiB parts only
  EXPECT_GT(pool.pinned_bytes(), 0U);
}

// A device read's pool threads share its chunks (one ring slot each, taken as each thread is
// ready): every byte lands once, in its place, whatever thread took it; the buffers go back.
TEST_F(OnDevice, DeviceReadChunksAreSharedByThePoolThreads)
{
  kvikio::defaults::set_bounce_buffer_size(64 << 10);
  kvikio::defaults::set_num_bounce_buffers(4);  // 16 KiB slots: 65 chunks, and a tail
  kvikio::defaults::set_thread_pool_nthreads(8);
  TempDir dir;
  auto const path     = dir.file("f");
  std::size_t const n = (1 << 20) + 4099;
  auto const content  = pattern(n + 333, 31);
  write_file(path, content);
  FileHandle f{path, "r"};
  auto& pool = kvikio::BounceBufferPool<>::instance();
  for (std::size_t file_offset : {std::size_t{0}, std::size_t{333}}) {
    kvikio::test::DeviceBuffer dev{n + 2 * guard};
    std::vector<std::uint8_t> fill(n + 2 * guard, poison);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, fill.data(), fill.size()));
    auto* const dst = static_cast<char*>(dev.get()) + guard;
    ASSERT_EQ(f.pread(dst, n, file_offset, 16 << 10, 0).get(), n);
    std::vector<std::uint8_t> back(n + 2 * guard);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
    ASSERT_EQ(0, std::memcmp(back.data() + guard, content.data() + file_offset, n));
    for (std::size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(back[i], poison) << "written before the destination";
      ASSERT_EQ(back[guard + n + i], poison) << "written after the destination";
    }
    EXPECT_EQ(pool.bytes_on_loan(), 0U) << "a bounce buffer is still on loan";
  }
}

// While the pool is backlogged, a device read of more than one slot stages whole tasks (one
// pread and one copy each: the pool's threads overlap one another) through POSIX under `auto`
// (unless a task is larger than a bounce buffer); without a backlog, the settings' ring, through
// io_uring where `auto` takes it for a read of this size. The bytes of a read planned so land
// once, in place.
TEST_F(OnDevice, DeviceReadsWhileThePoolIsBackloggedStageWholeTasks)
{
  kvikio::defaults::set_compat_mode(kvikio::CompatMode::ON);  // staged, whatever the host has
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::AUTO);
  kvikio::defaults::set_thread_pool_nthreads(1);
  kvikio::defaults::set_num_bounce_buffers(4);
  kvikio::defaults::set_bounce_buffer_size(16 << 20);
  std::size_t const task = 64 << 10;  // slots of 16 KiB
  kvikio::defaults::set_task_size(task);
  TempDir dir;
  auto const path     = dir.file("f");
  std::size_t const n = 20 * task + 4099;  // more than one io_uring request
  ASSERT_GT(n, kvikio::detail::io_uring_piece_size());
  auto const content = pattern(n + 333, 37);
  write_file(path, content);
  FileHandle f{path, "r"};
  auto& tp = kvikio::defaults::thread_pool();
  kvikio::detail::LocalFile const file{.fd = f.fd(), .pool_threads = 1};
  auto const idle = kvikio::detail::plan_local_transfer(true, false, n, task, 0, tp, file);
  EXPECT_EQ(idle.strategy, kvikio::detail::LocalStrategy::shared_chunks);
  EXPECT_FALSE(idle.chunks.has_value()) << "no backlog: the settings' ring";
  EXPECT_EQ(idle.mover_name(),
            kvikio::detail::io_uring_selected(true, n, 1) ? "io_uring" : "posix");

  kvikio::test::DeviceBuffer dev{n + 2 * guard};
  std::vector<std::uint8_t> fill(n + 2 * guard, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, fill.data(), fill.size()));
  auto* const dst = static_cast<char*>(dev.get()) + guard;
  std::future<std::size_t> read;
  {
    kvikio::test::BusyPool busy;
    ASSERT_TRUE(eventually([&] { return tp.get_tasks_running() == 1; }));
    auto queued = tp.submit_task([] {});  // one queued task per thread: backlogged
    ASSERT_TRUE(tp.is_backlogged());
    auto const plan = kvikio::detail::plan_local_transfer(true, false, n, task, 0, tp, file);
    EXPECT_EQ(plan.strategy, kvikio::detail::LocalStrategy::shared_chunks);
    ASSERT_TRUE(plan.chunks.has_value());
    EXPECT_EQ(*plan.chunks, (kvikio::detail::StagingRingShape{1, task}));
    EXPECT_EQ(plan.mover_name(), "posix") << "a backlogged pool reads by system calls";
    kvikio::defaults::set_bounce_buffer_size(task / 2);
    auto const small_buffers =
      kvikio::detail::plan_local_transfer(true, false, n, task, 0, tp, file);
    EXPECT_FALSE(small_buffers.chunks.has_value()) << "a task larger than a bounce buffer";
    kvikio::defaults::set_bounce_buffer_size(16 << 20);
    read = f.pread(dst, n, 333, task, 0);
  }
  ASSERT_EQ(read.get(), n);
  std::vector<std::uint8_t> back(n + 2 * guard);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(0, std::memcmp(back.data() + guard, content.data() + 333, n));
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(back[i], poison) << "written before the destination";
    ASSERT_EQ(back[guard + n + i], poison) << "written after the destination";
  }
  EXPECT_EQ(kvikio::BounceBufferPool<>::instance().bytes_on_loan(), 0U);
}

}  // namespace

// A device read that reaches the end of the file leaves the bytes that exist in the destination
// and nothing past the request, as a host read does, whatever the backend, task size or
// O_DIRECT setting; the error names the end of file.
TEST_F(OnDevice, ADeviceReadPastTheEndKeepsTheBytesThatExist)
{
  TempDir dir;
  auto const path        = dir.file("f");
  std::size_t const have = (2 << 20) + 123;
  auto const content     = pattern(have + 4096, 48);
  write_file(path, content);
  std::size_t const offset = 4096;  // (2 MiB + 123) bytes exist from here
  std::size_t const ask    = 3 << 20;
  std::size_t const guard  = 4096;
  for (bool const direct : {false, true}) {
    for (std::size_t const task : {std::size_t{1} << 20, std::size_t{4} << 20}) {
      kvikio::defaults::set_auto_direct_io_read(direct);
      kvikio::test::DeviceBuffer dev{ask + guard};
      KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8(dev.ptr, poison, ask + guard));
      FileHandle f{path, "r"};
      try {
        (void)f.pread(dev.get(), ask, offset, task).get();
        ADD_FAILURE() << "a read past the end succeeded";
      } catch (kvikio::CUfileException const& e) {
        EXPECT_NE(std::string{e.what()}.find("EOF"), std::string::npos) << e.what();
      }
      std::vector<std::uint8_t> back(ask + guard);
      KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
      std::size_t first_wrong = have;
      for (std::size_t i = 0; i < have; ++i) {
        if (back[i] != content[offset + i]) {
          first_wrong = i;
          break;
        }
      }
      EXPECT_EQ(first_wrong, have)
        << "direct " << direct << ", task " << task << ": the existing bytes stop short";
      EXPECT_TRUE(std::all_of(back.begin() + have, back.end(), [](auto b) { return b == poison; }))
        << "direct " << direct << ", task " << task << ": bytes past the end were written";
    }
  }
  kvikio::defaults::set_auto_direct_io_read(false);
}
