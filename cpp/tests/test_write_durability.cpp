/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Writes are in the file when they return, and a failed write never reports success: for host
 * and device memory, buffered and O_DIRECT, on each local backend (".io_uring" in ctest), the
 * bytes of a pwrite are seen through another descriptor before the handle is closed, and a
 * write past RLIMIT_FSIZE throws EFBIG (SIGXFSZ ignored) with every byte below the limit
 * written and nothing beyond it.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>

#include "common/device.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::pattern;

namespace {

using Param = std::tuple<bool /*device*/, bool /*direct*/>;

class Durability : public kvikio::test::OnDevice, public ::testing::WithParamInterface<Param> {
 protected:
  void SetUp() override
  {
    if (device()) {
      OnDevice::SetUp();
      if (IsSkipped()) { return; }
    }
    kvikio::defaults::set_thread_pool_nthreads(4);
    kvikio::defaults::set_auto_direct_io_write(std::get<1>(GetParam()));
  }
  void TearDown() override
  {
    if (device()) { OnDevice::TearDown(); }
  }
  [[nodiscard]] bool device() const { return std::get<0>(GetParam()); }

  // The bytes in host or device memory, and their address.
  struct Source {
    std::vector<std::uint8_t> host;
    std::unique_ptr<kvikio::test::DeviceBuffer> dev;
    void* data;
  };
  Source source(std::vector<std::uint8_t> const& bytes)
  {
    Source s{bytes, nullptr, nullptr};
    if (device()) {
      s.dev = std::make_unique<kvikio::test::DeviceBuffer>(bytes.size());
      KVIKIO_CUDA_DRIVER_TRY(
        kvikio::test::api().MemcpyHtoD(s.dev->ptr, bytes.data(), bytes.size()));
      // From pageable memory the copy may still be in flight when cuMemcpyHtoD returns.
      KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().CtxSynchronize());
      s.data = s.dev->get();
    } else {
      s.data = s.host.data();
    }
    return s;
  }
  static std::vector<std::uint8_t> read_with_another_descriptor(std::string const& path)
  {
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    std::vector<std::uint8_t> out(static_cast<std::size_t>(::lseek(fd, 0, SEEK_END)));
    EXPECT_EQ(::pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
    ::close(fd);
    return out;
  }
  kvikio::test::TempDir dir_;
};

TEST_P(Durability, BytesAreInTheFileWhenPwriteReturns)
{
  auto const path    = dir_.file("w.bin");
  auto const content = pattern((3 << 20) + 4097, 61);
  auto src           = source(content);
  kvikio::FileHandle f{path, "w"};
  ASSERT_EQ(f.pwrite(src.data, content.size(), 0, 256 << 10, 4096).get(), content.size());
  EXPECT_EQ(read_with_another_descriptor(path), content) << "before close";
  // Rewrite the middle: the new bytes there, the old ones around them.
  auto const middle = pattern(1 << 20, 62);
  auto mid          = source(middle);
  ASSERT_EQ(f.pwrite(mid.data, middle.size(), 12345, 128 << 10, 4096).get(), middle.size());
  auto expected = content;
  std::copy(middle.begin(), middle.end(), expected.begin() + 12345);
  EXPECT_EQ(read_with_another_descriptor(path), expected);
}

TEST_P(Durability, WritePastTheFileSizeLimitFailsAndKeepsWhatLanded)
{
  auto const path         = dir_.file("limited.bin");
  std::size_t const limit = 1 << 20;
  auto const content      = pattern(3 << 20, 63);
  auto src                = source(content);
  kvikio::FileHandle f{path, "w"};
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* const old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit limited          = old;
  limited.rlim_cur        = limit;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  int error = 0;
  try {
    (void)f.pwrite(src.data, content.size(), 0, 256 << 10, 4096).get();
  } catch (kvikio::GenericSystemError const& e) {
    error = e.code().value();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(error, EFBIG) << "the failed write did not report EFBIG";
  auto const on_disk = read_with_another_descriptor(path);
  ASSERT_EQ(on_disk.size(), limit) << "bytes beyond the limit, or missing below it";
  EXPECT_TRUE(std::equal(on_disk.begin(), on_disk.end(), content.begin()));
  // The handle is whole: the next write works.
  auto const tail = pattern(4096, 64);
  auto t          = source(tail);
  EXPECT_EQ(f.pwrite(t.data, tail.size(), limit, 4096, 4096).get(), tail.size());
}

INSTANTIATE_TEST_SUITE_P(MemoryDirect,
                         Durability,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](auto const& info) {
                           return std::string{std::get<0>(info.param) ? "device" : "host"} + "_" +
                                  (std::get<1>(info.param) ? "direct" : "buffered");
                         });

}  // namespace
