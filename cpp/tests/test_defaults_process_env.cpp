/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Run by ctest with an environment set (cpp/tests/CMakeLists.txt): the process-wide settings
 * read it at first use. Run without that environment these tests fail.
 */
#include <string>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>

TEST(ProcessEnvironment, ValidValuesAreRead)
{
  EXPECT_EQ(kvikio::defaults::task_size(), 12345U);
  EXPECT_EQ(kvikio::defaults::thread_pool_nthreads(), 3U);
  EXPECT_EQ(kvikio::defaults::thread_pool().get_thread_count(), 3U);
  EXPECT_EQ(kvikio::defaults::remote_backend(), kvikio::RemoteBackendType::LIBCURL_MULTI_POLL);
  EXPECT_EQ(kvikio::defaults::compat_mode(), kvikio::CompatMode::ON);
}

TEST(ProcessEnvironment, InvalidValueThrowsAtFirstUse)
{
  for (int attempt = 0; attempt < 2; ++attempt) {  // and keeps throwing
    try {
      (void)kvikio::defaults::task_size();
      FAIL() << "KVIKIO_GDS_THRESHOLD=-5 was accepted";
    } catch (std::invalid_argument const& e) {
      EXPECT_NE(std::string{e.what()}.find("KVIKIO_GDS_THRESHOLD=-5"), std::string::npos)
        << e.what();
    }
  }
}
