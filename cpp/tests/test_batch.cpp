/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The batch API: in compat mode it runs on the thread pool.
 */
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/batch.hpp>

#include "common/device.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::api;
using kvikio::test::OnDevice;
using kvikio::test::pattern;

namespace {

TEST_F(OnDevice, BatchReadsAndWrites)
{
  kvikio::test::TempDir dir;
  auto const path     = dir.file("f");
  std::size_t const n = 64 << 10;
  auto const content  = pattern(4 * n, 13);
  kvikio::test::write_file(path, content);
  kvikio::FileHandle f{path, "r+"};
  kvikio::test::DeviceBuffer dev{4 * n};
  kvikio::BatchHandle batch{8};
  std::vector<kvikio::BatchOp> reads;
  for (int i = 0; i < 4; ++i) {
    // Chunk i of the file goes to slot 3 - i of the buffer.
    reads.push_back(
      {f, dev.get(), static_cast<off_t>(i * n), static_cast<off_t>((3 - i) * n), n, CUFILE_READ});
  }
  batch.submit(reads);
  std::vector<CUfileIOEvents_t> events;
  while (events.size() < 4) {
    auto more = batch.status(1, 4);
    events.insert(events.end(), more.begin(), more.end());
  }
  std::vector<bool> seen(4, false);
  for (auto const& e : events) {
    EXPECT_EQ(e.status, CUFILE_COMPLETE);
    EXPECT_EQ(e.ret, n);
    seen.at(reinterpret_cast<std::size_t>(e.cookie)) = true;
  }
  EXPECT_EQ(seen, std::vector<bool>(4, true));
  std::vector<std::uint8_t> back(4 * n);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(0, std::memcmp(back.data() + (3 - i) * n, content.data() + i * n, n)) << i;
  }
  // A write, and too many operations at once.
  batch.submit({{f, dev.get(), static_cast<off_t>(4 * n), 0, n, CUFILE_WRITE}});
  auto done = batch.status(1, 1);
  ASSERT_EQ(done.size(), 1U);
  EXPECT_EQ(done[0].status, CUFILE_COMPLETE);
  EXPECT_EQ(f.nbytes(), 5 * n);
  std::vector<kvikio::BatchOp> too_many(9, kvikio::BatchOp{f, dev.get(), 0, 0, 1, CUFILE_READ});
  EXPECT_THROW(batch.submit(too_many), std::invalid_argument);
  batch.close();
  EXPECT_TRUE(batch.closed());
  EXPECT_THROW(batch.submit(reads), kvikio::CUfileException);
  EXPECT_THROW(kvikio::BatchHandle{0}, std::invalid_argument);
}

TEST_F(OnDevice, BatchReportsFailuresAndCancels)
{
  kvikio::test::TempDir dir;
  auto const path = dir.file("f");
  kvikio::test::write_file(path, pattern(1000, 14));
  kvikio::FileHandle f{path, "r"};
  kvikio::test::DeviceBuffer dev{4096};
  kvikio::BatchHandle batch{4};
  batch.submit({{f, dev.get(), 900, 0, 500, CUFILE_READ}});  // past the end of the file
  auto events = batch.status(1, 1);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].status, CUFILE_FAILED);
  batch.cancel();
  batch.submit({{f, dev.get(), 0, 0, 100, CUFILE_READ}});
  events = batch.status(1, 1);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].status, CUFILE_CANCELED);
}

}  // namespace
