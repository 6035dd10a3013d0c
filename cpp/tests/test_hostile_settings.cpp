/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Settings set to the edge of what they accept: every accepted value gives work bounded by the
 * data, not by the setting (no 1-byte staging).
 */
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>

#include "common/device.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::api;
using kvikio::test::OnDevice;
using kvikio::test::pattern;

namespace {
// Restores the bounce buffer size however the test ends.
class BounceBufferSize {
 public:
  explicit BounceBufferSize(std::size_t nbytes)
  {
    kvikio::defaults::set_bounce_buffer_size(nbytes);
  }
  ~BounceBufferSize() { kvikio::defaults::set_bounce_buffer_size(before_); }
  BounceBufferSize(BounceBufferSize const&)            = delete;
  BounceBufferSize& operator=(BounceBufferSize const&) = delete;

 private:
  std::size_t before_ = kvikio::defaults::bounce_buffer_size();
};
}  // namespace

// Pinned memory the driver refuses: the error names the size asked for and the setting that
// decides it, after upstream's wording.
TEST_F(OnDevice, ARefusedPinningNamesTheSizeAndTheSetting)
{
  auto const fail = kvikio::test::simulator_hook<kvikio::test::FailCall>("cudasim_fail_call");
  if (fail == nullptr) {
    GTEST_SKIP() << "makes the driver refuse a call, which only the simulator can";
  }
  auto& pool = kvikio::CudaPinnedBounceBufferPool::instance();
  pool.clear();
  BounceBufferSize const size{3 << 20};
  fail("cuMemHostRegister", 1, CUDA_ERROR_OUT_OF_MEMORY);
  try {
    (void)pool.get();
    ADD_FAILURE() << "a refused pinning was not reported";
  } catch (kvikio::CUfileException const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(3 << 20)), std::string::npos) << what;
    EXPECT_NE(what.find("KVIKIO_BOUNCE_BUFFER_SIZE"), std::string::npos) << what;
  }
  fail(nullptr, 0, 0);
  EXPECT_EQ(pool.get().size(), 3U << 20) << "the next pinning works";
}

// bounce_buffer_size=1 is accepted and reported back as set (upstream's tests set 1, 3 and 4),
// but staging goes through buffers of least_staging_size: a 3 MiB device read makes thousands of
// copies, not millions, and lands its bytes.
TEST_F(OnDevice, ATinyBounceBufferSizeStillStagesInWholeBuffers)
{
  kvikio::test::TempDir dir;
  auto const content = pattern((3 << 20) + 5, 46);
  kvikio::test::write_file(dir.file("data"), content);
  BounceBufferSize const tiny{1};
  EXPECT_EQ(kvikio::defaults::bounce_buffer_size(), 1U);
  EXPECT_EQ(kvikio::CudaPinnedBounceBufferPool::instance().get().size(),
            kvikio::detail::least_staging_size);
  kvikio::test::DeviceBuffer dev{content.size()};
  auto const trace = kvikio::test::simulator_hook<kvikio::test::TraceCalls>("cudasim_trace_calls");
  if (trace != nullptr) { trace(1); }
  kvikio::FileHandle file{dir.file("data"), "r"};
  ASSERT_EQ(file.pread(dev.get(), content.size(), 0, 1 << 20).get(), content.size());
  if (trace != nullptr) {
    trace(0);
    std::size_t copies = 0;
    for (auto const& [name, count] : kvikio::test::traced_driver_calls()) {
      if (name.rfind("cuMemcpy", 0) == 0) { copies += count; }
    }
    // At most a copy per slot (a buffer at the least), twice over for margin.
    EXPECT_LE(copies, 2 * content.size() / kvikio::detail::least_staging_size + 16);
  }
  std::vector<std::uint8_t> back(content.size());
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content);
}
