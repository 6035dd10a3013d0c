/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * File sizes and page-cache helpers.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <kvikio/file_utils.hpp>

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
  EXPECT_THROW(kvikio::get_file_size(dir.file("missing")), kvikio::GenericSystemError);
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

}  // namespace
