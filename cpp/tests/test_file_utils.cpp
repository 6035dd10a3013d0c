/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * File sizes and page-cache helpers.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/utils.hpp>

#include "common/device.hpp"
#include "common/temp_dir.hpp"

namespace {

TEST(FileUtils, SizesAndPageCache)
{
  kvikio::test::TempDir dir;
  auto const path = dir.file("f");
  kvikio::test::write_file(path, kvikio::test::pattern(10 * 4096 + 1, 15));
  EXPECT_EQ(kvikio::get_file_size(path), 10U * 4096 + 1);
  int const fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(kvikio::get_file_size(fd), 10U * 4096 + 1);
  auto [cached, total] = kvikio::get_page_cache_info(fd);
  EXPECT_EQ(total, 11U);
  EXPECT_EQ(cached, 11U);  // just written: all in the cache
  kvikio::drop_file_page_cache(fd);
  auto [after, total2] = kvikio::get_page_cache_info(path);
  EXPECT_EQ(total2, 11U);
  struct statfs fs {};
  ASSERT_EQ(::fstatfs(fd, &fs), 0);
  if (fs.f_type != TMPFS_MAGIC) {  // tmpfs pages are the file itself: they cannot be dropped
    EXPECT_LT(after, 11U);         // the kernel may keep some, but not all of a clean file
  }
  ::close(fd);
  EXPECT_THROW((void)kvikio::get_file_size(dir.file("missing")), kvikio::GenericSystemError);
  EXPECT_THROW(kvikio::get_page_cache_info(dir.file("missing")), kvikio::GenericSystemError);
}

TEST(FileUtils, EmptyFile)
{
  kvikio::test::TempDir dir;
  auto const path = dir.file("empty");
  kvikio::test::write_file(path, {});
  auto [cached, total] = kvikio::get_page_cache_info(path);
  EXPECT_EQ(cached, 0U);
  EXPECT_EQ(total, 0U);
}

TEST(FileUtils, FileWrapperAndOpenHelpers)
{
  kvikio::test::TempDir dir;
  auto const path = dir.file("file");
  kvikio::test::write_file(path, kvikio::test::pattern(10000, 3));

  EXPECT_EQ(kvikio::open_fd_parse_flags("r", false) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(kvikio::open_fd_parse_flags("r+", false) & O_ACCMODE, O_RDWR);
  EXPECT_EQ(kvikio::open_fd_parse_flags("w", false) & (O_ACCMODE | O_CREAT | O_TRUNC),
            O_WRONLY | O_CREAT | O_TRUNC);
  EXPECT_EQ(kvikio::open_fd_parse_flags("w+", false) & (O_ACCMODE | O_CREAT | O_TRUNC),
            O_RDWR | O_CREAT | O_TRUNC);
  EXPECT_NE(kvikio::open_fd_parse_flags("r", true) & O_DIRECT, 0);
  EXPECT_NE(kvikio::open_fd_parse_flags("r", false) & O_CLOEXEC, 0);
  EXPECT_THROW((void)kvikio::open_fd_parse_flags("a", false), std::invalid_argument);
  EXPECT_THROW((void)kvikio::open_fd_parse_flags("", false), std::invalid_argument);

  int const fd = kvikio::open_fd(path, "r", false, kvikio::FileHandle::m644);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(kvikio::open_flags(fd) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(kvikio::get_file_size(fd), 10000U);
  EXPECT_EQ(kvikio::get_file_size(path), 10000U);
  ::close(fd);
  EXPECT_THROW((void)kvikio::open_fd(dir.file("missing"), "r", false, kvikio::FileHandle::m644),
               kvikio::GenericSystemError);

  kvikio::FileWrapper wrapper;
  EXPECT_FALSE(wrapper.opened());
  EXPECT_EQ(wrapper.fd(), -1);
  wrapper.open(path, "r", false, kvikio::FileHandle::m644);
  EXPECT_TRUE(wrapper.opened());
  EXPECT_EQ(kvikio::get_file_size(wrapper.fd()), 10000U);
  kvikio::FileWrapper moved{std::move(wrapper)};
  EXPECT_FALSE(wrapper.opened());  // NOLINT(bugprone-use-after-move): the moved-from state is API
  EXPECT_TRUE(moved.opened());
  moved.close();
  EXPECT_FALSE(moved.opened());
  kvikio::FileWrapper direct(path, "w", false, kvikio::FileHandle::m644);
  EXPECT_EQ(kvikio::get_file_size(path), 0U);

  kvikio::CUFileHandleWrapper cufile_handle;
  EXPECT_FALSE(cufile_handle.registered());
  cufile_handle.unregister_handle();  // not registered: nothing to do
  EXPECT_FALSE(cufile_handle.registered());
}

// A sparse file of 1 TiB with 8 KiB of data: the answer counts every page of the range, the
// cached ones among the data's, and the work is bounded by the data (a page-per-byte residency
// vector over the apparent size would hold 256 MiB).
TEST(FileUtils, PageCacheInfoOfASparseFileCostsItsData)
{
  kvikio::test::TempDir dir;
  auto const path       = dir.file("sparse");
  std::size_t const big = std::size_t{1} << 40;
  std::size_t const at  = big / 2;
  int const fd          = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  if (::ftruncate(fd, static_cast<off_t>(big)) != 0) {
    ::close(fd);
    GTEST_SKIP() << "this file system refuses a 1 TiB sparse file: nothing to test";
  }
  auto const data = kvikio::test::pattern(8192, 47);
  ASSERT_EQ(::pwrite(fd, data.data(), data.size(), static_cast<off_t>(at)), 8192);
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  auto const [cached, total] = kvikio::get_page_cache_info(fd);
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  ::close(fd);
  EXPECT_EQ(total, big / kvikio::get_page_size());
  EXPECT_EQ(cached, 8192 / kvikio::get_page_size()) << "the written pages are in the cache";
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 32L << 10) << "KiB of memory more at the peak";
}

TEST(FileUtils, PageCacheInfoAfterReadAndDrop)
{
  kvikio::test::TempDir dir;
  auto const path        = dir.file("cached");
  std::size_t const page = kvikio::get_page_size();
  kvikio::test::write_file(path, kvikio::test::pattern(64 * page + 100, 3));
  // Written pages are dirty: drop_file_page_cache syncs them first (sync_first), so they can go.
  kvikio::drop_file_page_cache(path);
  auto const [cached_before, total] = kvikio::get_page_cache_info(path);
  EXPECT_EQ(total, 65U);
  // Read the first 16 pages: they are resident afterwards.
  {
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    std::vector<char> buf(16 * page);
    ASSERT_EQ(::pread(fd, buf.data(), buf.size(), 0), static_cast<ssize_t>(buf.size()));
    auto const [cached_fd, total_fd] = kvikio::get_page_cache_info(fd);
    EXPECT_EQ(total_fd, 65U);
    EXPECT_GE(cached_fd, 16U);
    // A range: the first 8 pages are all resident.
    auto const [cached_range, total_range] = kvikio::get_page_cache_info(fd, 0, 8 * page);
    EXPECT_EQ(total_range, 8U);
    EXPECT_EQ(cached_range, 8U);
    kvikio::drop_file_page_cache(fd, 0, 0, false);
    ::close(fd);
  }
  auto const [cached_after, total_after] = kvikio::get_page_cache_info(path);
  EXPECT_EQ(total_after, 65U);
  struct statfs fs {};
  ASSERT_EQ(::statfs(path.c_str(), &fs), 0);
  if (fs.f_type != TMPFS_MAGIC) {  // tmpfs pages are the file itself: they cannot be dropped
    EXPECT_LT(cached_after, 16U);  // the kernel may keep some, but not the 16 just read
  }
  (void)cached_before;
  EXPECT_THROW((void)kvikio::get_page_cache_info(dir.file("missing")), kvikio::GenericSystemError);
}

TEST(FileUtils, DropSystemPageCacheWithoutPrivilegeReturnsFalse)
{
  // In a child without privilege (uid nobody if we are root) and without sudo on its PATH, so
  // that the test never drops the machine's page cache: both calls must say false, not throw.
  pid_t const child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) { ::_exit(3); }
    ::setenv("PATH", "/nonexistent", 1);
    int code = 0;
    try {
      if (kvikio::drop_system_page_cache(false, false)) { code = 1; }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      if (kvikio::clear_page_cache(false, false)) { code = 1; }
#pragma GCC diagnostic pop
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: dropped without privilege, 2: threw, 3: setuid failed";
}

TEST(FileUtils, BlockDeviceInfo)
{
  kvikio::test::TempDir dir;
  auto const path = dir.file("f");
  kvikio::test::write_file(path, kvikio::test::pattern(10, 3));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  std::string const sysfs =
    "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  if (::access(sysfs.c_str(), F_OK) != 0) {
    // tmpfs or overlayfs: no block device, which upstream reports as a system error.
    EXPECT_THROW((void)kvikio::get_block_device_info(path), kvikio::GenericSystemError);
  } else {
    auto const info = kvikio::get_block_device_info(path);
    // The whole disk (or NVMe controller): its own dev file names it.
    EXPECT_EQ(info.id, makedev(info.major, info.minor));
    EXPECT_FALSE(info.name.empty());
    EXPECT_EQ(info.name.find('/'), std::string::npos);
    auto const again = kvikio::get_block_device_info(path);
    EXPECT_EQ(again.id, info.id);
  }
  EXPECT_THROW((void)kvikio::get_block_device_info(dir.file("missing")),
               kvikio::GenericSystemError);
}

}  // namespace
