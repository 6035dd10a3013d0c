/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * A program that never makes a CUDA context: opening a file does not load the CUDA driver, and
 * nothing is pinned ahead for stream-ordered calls (that is done only where the process has a
 * context current when it opens a file). Reading into host memory asks the driver what the
 * memory is, which loads it; a file opened after that still pins nothing. ctest puts the
 * simulator on LD_LIBRARY_PATH, so a load of "libcuda.so.1" would succeed and be seen.
 *
 * And the first opening in a process with a context current (each test is a process of its own):
 * a primary context gets a block pinned ahead, a context the program made gets none.
 */
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/compat_mode.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/shim/cuda.hpp>

#include "common/device.hpp"
#include "common/temp_dir.hpp"
#include "parallel/stream_ordered.hpp"

namespace {

bool driver_in_process()
{
  void* const handle = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) { return false; }
  ::dlclose(handle);
  return true;
}

TEST(HostOnlyProcess, OpeningAFileLoadsNoDriverAndPinsNothing)
{
  ASSERT_FALSE(driver_in_process()) << "the driver was loaded before the test";
  kvikio::test::TempDir const dir;
  std::string const path = dir.file("data");
  auto const content     = kvikio::test::pattern((1 << 20) + 3, 61);
  kvikio::test::write_file(path, content);
  auto open = [&] {
    return kvikio::FileHandle{path, "r", kvikio::FileHandle::m644, kvikio::CompatMode::ON};
  };
  {
    auto file = open();
    EXPECT_FALSE(driver_in_process()) << "opening a file loaded the CUDA driver";
    EXPECT_EQ(kvikio::detail::current_context_where_cuda_is_in_use(), nullptr);
    EXPECT_FALSE(driver_in_process()) << "asking whether CUDA is in use loaded the driver";
    std::vector<std::uint8_t> back(content.size() + 2, 0xA5);
    EXPECT_EQ(file.pread(back.data() + 1, content.size()).get(), content.size());
    EXPECT_EQ(back.front(), 0xA5);
    EXPECT_EQ(back.back(), 0xA5);
    EXPECT_TRUE(std::equal(content.begin(), content.end(), back.begin() + 1));
  }
  ASSERT_TRUE(driver_in_process()) << "the host read asked the driver";
  EXPECT_EQ(kvikio::detail::current_context_where_cuda_is_in_use(), nullptr) << "no context";
  {
    auto const file = open();  // the driver is loaded now, but no context is current
  }
  kvikio::detail::wait_for_staging_pinning();
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 0U) << "pinned ahead without a context";
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 0U);
}

// Opens and closes a file of its own: an opening, with what it pins ahead.
void open_a_file()
{
  kvikio::test::TempDir const dir;
  std::string const path = dir.file("data");
  kvikio::test::write_file(path, kvikio::test::pattern(4096, 62));
  kvikio::FileHandle const file{path, "r"};
}

// A context the program made for itself may end as soon as the file is open (cuCtxDestroy): its
// handle is then no context at all. Nothing is pinned ahead in it (the simulator reports a
// destroyed context pushed as misuse, which fails the test); the first call in such a context
// pins its own staging.
TEST(FirstOpening, InAContextTheProgramMadePinsNothingAhead)
{
  if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
  CUdevice device{};
  ASSERT_EQ(kvikio::test::api().DeviceGet(&device, 0), CUDA_SUCCESS);
  CUcontext own{};
  ASSERT_EQ(kvikio::test::api().CtxCreate(&own, nullptr, 0, device), CUDA_SUCCESS);
  open_a_file();
  ASSERT_EQ(kvikio::test::api().CtxDestroy(own), CUDA_SUCCESS);
  kvikio::detail::wait_for_staging_pinning();
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 0U) << "pinned ahead in a context now gone";
  EXPECT_EQ(kvikio::detail::staging_pinned_bytes(), 0U);
}

// In a device's primary context (the one the CUDA runtime, CuPy and RMM use), whose handle lasts
// as long as the process, the first opening pins a block ahead for the first stream-ordered call.
TEST(FirstOpening, InAPrimaryContextPinsABlockAhead)
{
  if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
  kvikio::PushAndPopContext const current{kvikio::get_primary_cuda_context(0)};
  open_a_file();
  kvikio::detail::wait_for_staging_pinning();
  EXPECT_EQ(kvikio::detail::staging_blocks_kept(), 1U);
}

}  // namespace
