/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Batch reads (batch_read.hpp): the plan that merges nearby ranges (its boundaries: the gap, the
 * task size, overlapping and duplicate ranges, sources and contexts kept apart), and the reads
 * themselves, local and remote, into host memory and into the device memory of two contexts.
 * Every destination is poisoned with guards on both sides; bytes are compared with the file's
 * content as written (local) or the server's formula (remote); gap bytes must land nowhere. A
 * failure reaches exactly the ranges of the transfer that failed.
 */
#include <curl/curl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/batch_read.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include "common/device.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "common/test_servers.hpp"
#include "parallel/batch_plan.hpp"

using kvikio::BatchReadOptions;
using kvikio::ReadRange;
using kvikio::detail::BatchRange;
using kvikio::detail::plan_batch;
using kvikio::test::guard;
using kvikio::test::poison;

namespace {

// --- the plan ---------------------------------------------------------------------------------

BatchRange at(std::size_t offset, std::size_t size, std::size_t source = 0, CUcontext ctx = {})
{
  return {source, ctx, {reinterpret_cast<void*>(0x1000), size, offset}};
}

std::vector<std::vector<std::size_t>> members(std::vector<kvikio::detail::BatchRun> const& runs)
{
  std::vector<std::vector<std::size_t>> out;
  for (auto const& r : runs) {
    out.push_back(r.members);
  }
  return out;
}

using Members = std::vector<std::vector<std::size_t>>;

TEST(BatchPlan, WithoutAGapNothingMerges)
{
  std::vector const ranges{at(0, 10), at(10, 10), at(20, 10)};
  EXPECT_EQ(members(plan_batch(ranges, std::nullopt, 1 << 20)), (Members{{0}, {1}, {2}}));
}

TEST(BatchPlan, TheGapBoundaryIsInclusive)
{
  // Gaps of 5 and 6 bytes; a largest gap of 5 merges the first pair only.
  std::vector const ranges{at(0, 10), at(15, 10), at(31, 10)};
  auto const runs = plan_batch(ranges, 5, 1 << 20);
  EXPECT_EQ(members(runs), (Members{{0, 1}, {2}}));
  EXPECT_EQ(runs[0].file_offset, 0U);
  EXPECT_EQ(runs[0].size, 25U);
  EXPECT_EQ(members(plan_batch(ranges, 6, 1 << 20)), (Members{{0, 1, 2}}));
  // Adjacent ranges merge with a largest gap of 0.
  std::vector const adjacent{at(0, 10), at(10, 10)};
  EXPECT_EQ(members(plan_batch(adjacent, 0, 1 << 20)), (Members{{0, 1}}));
}

TEST(BatchPlan, AMergedSpanFitsTheTaskSize)
{
  std::vector const ranges{at(0, 10), at(12, 8), at(22, 8)};
  // Spans of 20 and 30 bytes: a task size of 20 takes the first two only, 29 too, 30 all three.
  EXPECT_EQ(members(plan_batch(ranges, 4, 20)), (Members{{0, 1}, {2}}));
  EXPECT_EQ(members(plan_batch(ranges, 4, 29)), (Members{{0, 1}, {2}}));
  EXPECT_EQ(members(plan_batch(ranges, 4, 30)), (Members{{0, 1, 2}}));
  // A range larger than the task size stays alone (its pread splits it).
  std::vector const big{at(0, 100), at(100, 1)};
  EXPECT_EQ(members(plan_batch(big, 0, 50)), (Members{{0}, {1}}));
}

TEST(BatchPlan, OverlappingAndDuplicateRangesDoNotMerge)
{
  std::vector const ranges{at(0, 10), at(5, 10), at(5, 10), at(40, 2)};
  EXPECT_EQ(members(plan_batch(ranges, 100, 1 << 20)), (Members{{0}, {1}, {2, 3}}));
}

TEST(BatchPlan, SourcesAndContextsStayApartAndOffsetsSortWithinAGroup)
{
  auto* const ctx = reinterpret_cast<CUcontext>(0x42);
  std::vector const ranges{
    at(100, 10, 0), at(0, 10, 1), at(0, 10, 0), at(110, 10, 0, ctx), at(10, 10, 0), at(5, 0, 0)};
  // Groups in order of first appearance: (0, host) {2, 4, 0}, (1, host) {1}, (0, ctx) {3}; the
  // empty range is in none.
  EXPECT_EQ(members(plan_batch(ranges, 0, 1 << 20)), (Members{{2, 4}, {0}, {1}, {3}}));
  EXPECT_EQ(members(plan_batch(ranges, 80, 1 << 20)), (Members{{2, 4, 0}, {1}, {3}}));
}

TEST(BatchPlan, MergedSpansShareTheBatchAmongThePoolsThreads)
{
  kvikio::ThreadPool four{4};
  std::vector const big{at(0, 2 << 20), at(3 << 20, 2 << 20)};  // 4 MiB in all
  EXPECT_EQ(kvikio::detail::merge_limit(big, 16 << 20, four), std::size_t{1} << 20);
  EXPECT_EQ(kvikio::detail::merge_limit(big, 512 << 10, four), std::size_t{512} << 10);
  std::vector const small{at(0, 1000), at(2000, 1000)};
  EXPECT_EQ(kvikio::detail::merge_limit(small, 16 << 20, four), kvikio::detail::min_merge_limit);
  EXPECT_EQ(kvikio::detail::merge_limit(small, 4096, four), 4096U);
  kvikio::ThreadPool one{1};
  EXPECT_EQ(kvikio::detail::merge_limit(big, 16 << 20, one), std::size_t{4} << 20);
}

// --- local files ------------------------------------------------------------------------------

// A destination of `size` bytes with poisoned guards, in host or device memory.
class Destination {
 public:
  Destination(std::size_t size, bool device) : size_{size}, device_{device}
  {
    std::vector<std::uint8_t> poisoned(size + 2 * guard, poison);
    if (device_) {
      dev_.emplace(size + 2 * guard);
      KVIKIO_CUDA_DRIVER_TRY(
        kvikio::test::api().MemcpyHtoD(dev_->ptr, poisoned.data(), poisoned.size()));
    } else {
      host_ = poisoned;
    }
  }
  [[nodiscard]] void* ptr()
  {
    return device_ ? static_cast<std::uint8_t*>(dev_->get()) + guard : host_.data() + guard;
  }
  // The whole buffer, guards included.
  [[nodiscard]] std::vector<std::uint8_t> contents() const
  {
    if (!device_) { return host_; }
    std::vector<std::uint8_t> out(size_ + 2 * guard);
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(out.data(), dev_->ptr, out.size()));
    return out;
  }
  // The destination holds `expected`, its guards untouched.
  void expect(std::vector<std::uint8_t> const& expected, std::string const& what) const
  {
    auto const got = contents();
    for (std::size_t i = 0; i < guard; ++i) {
      ASSERT_EQ(got[i], poison) << what << ": front guard at " << i;
      ASSERT_EQ(got[guard + size_ + i], poison) << what << ": back guard at " << i;
    }
    for (std::size_t i = 0; i < size_; ++i) {
      ASSERT_EQ(got[guard + i], expected[i]) << what << " at " << i;
    }
  }
  void expect_untouched(std::string const& what) const
  {
    auto const got = contents();
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], poison) << what << " at " << i;
    }
  }

 private:
  std::size_t size_;
  bool device_;
  std::vector<std::uint8_t> host_;
  std::optional<kvikio::test::DeviceBuffer> dev_;
};

std::string write_file(kvikio::test::TempDir const& dir,
                       std::string const& name,
                       std::vector<std::uint8_t> const& content)
{
  auto const path = dir.file(name);
  std::ofstream{path, std::ios::binary}.write(reinterpret_cast<char const*>(content.data()),
                                              static_cast<std::streamsize>(content.size()));
  return path;
}

// Column chunks of a few sizes with small gaps, as a Parquet row group lays them out, plus a
// range larger than the task size and an overlapping pair.
struct Layout {
  std::size_t offset, size;
};
std::vector<Layout> const layout{{100, 4000},
                                 {4200, 300},
                                 {4500, 1},
                                 {4600, 20000},
                                 {30000, 70000},  // larger than the task size below
                                 {100100, 5000},
                                 {102000, 6000},  // overlaps the one before
                                 {120000, 9}};
constexpr std::size_t test_task_size = 64 << 10;

// The layout's ranges into fresh destinations, appended to `dst`.
std::vector<ReadRange> layout_ranges(std::deque<Destination>& dst, bool device)
{
  std::vector<ReadRange> ranges;
  for (auto const& l : layout) {
    ranges.push_back({dst.emplace_back(l.size, device).ptr(), l.size, l.offset});
  }
  return ranges;
}

// Parameter: device memory (true) or host memory; device 0's context is current throughout.
class LocalBatch : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override
  {
    if (GetParam()) {
      if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
      pushed_.emplace(kvikio::get_primary_cuda_context(0));
    }
  }
  void TearDown() override { pushed_.reset(); }
  std::optional<kvikio::PushAndPopContext> pushed_;
};

TEST_P(LocalBatch, CoalescedRangesLandExactlyInTheirDestinations)
{
  bool const device = GetParam();
  kvikio::test::TempDir dir;
  auto const content = kvikio::test::pattern(200000, 7);
  kvikio::FileHandle f{write_file(dir, "a.bin", content), "r"};
  for (auto const gap : {std::optional<std::size_t>{}, std::optional<std::size_t>{300}}) {
    std::deque<Destination> dst;
    auto const ranges = layout_ranges(dst, device);
    auto futures =
      f.batch_read(ranges, BatchReadOptions{.coalesce_max_gap = gap, .task_size = test_task_size});
    ASSERT_EQ(futures.size(), layout.size());
    for (std::size_t i = 0; i < layout.size(); ++i) {
      EXPECT_EQ(futures[i].get(), layout[i].size) << i;
      std::vector<std::uint8_t> const expected(
        content.begin() + static_cast<std::ptrdiff_t>(layout[i].offset),
        content.begin() + static_cast<std::ptrdiff_t>(layout[i].offset + layout[i].size));
      dst[i].expect(expected, "range " + std::to_string(i));
    }
  }
}

TEST_P(LocalBatch, SeveralFilesInOneBatchOnAPoolOfOne)
{
  bool const device = GetParam();
  kvikio::test::TempDir dir;
  auto const a = kvikio::test::pattern(50000, 1);
  auto const b = kvikio::test::pattern(50000, 2);
  kvikio::FileHandle fa{write_file(dir, "a.bin", a), "r"};
  kvikio::FileHandle fb{write_file(dir, "b.bin", b), "r"};
  kvikio::ThreadPool pool{1};
  // Interleaved files, each with ranges 10 bytes apart.
  std::deque<Destination> dst;
  std::vector<kvikio::FileReadRequest> requests;
  for (std::size_t i = 0; i < 12; ++i) {
    dst.emplace_back(1000, device);
  }
  for (std::size_t i = 0; i < 12; ++i) {
    requests.push_back({i % 2 == 0 ? &fa : &fb, dst[i].ptr(), 1000, (i / 2) * 1010});
  }
  auto futures = kvikio::file_batch_read(
    requests, BatchReadOptions{.coalesce_max_gap = 10, .task_size = 4000, .thread_pool = &pool});
  for (std::size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(futures[i].get(), 1000U);
    auto const& src = i % 2 == 0 ? a : b;
    auto const off  = static_cast<std::ptrdiff_t>((i / 2) * 1010);
    dst[i].expect({src.begin() + off, src.begin() + off + 1000}, "request " + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Memory, LocalBatch, ::testing::Values(false, true), [](auto const& info) {
  return info.param ? "Device" : "Host";
});

TEST(LocalBatchTwoDevices, OneBatchIntoTwoContexts)
{
  if (auto const why = kvikio::test::no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
  if (kvikio::test::device_count() < 2) {
    GTEST_SKIP() << "needs two devices (the simulator runs this test with CUDASIM_DEVICES=2)";
  }
  kvikio::test::TempDir dir;
  auto const content = kvikio::test::pattern(40000, 3);
  kvikio::FileHandle f{write_file(dir, "a.bin", content), "r"};
  std::vector<std::unique_ptr<Destination>> dst;
  std::vector<ReadRange> ranges;
  for (std::size_t i = 0; i < 8; ++i) {
    kvikio::PushAndPopContext const on{kvikio::get_primary_cuda_context(static_cast<int>(i % 2))};
    dst.push_back(std::make_unique<Destination>(3000, true));
    ranges.push_back({dst.back()->ptr(), 3000, i * 3100});
  }
  auto futures =
    f.batch_read(ranges, BatchReadOptions{.coalesce_max_gap = 5000, .task_size = 1 << 20});
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(futures[i].get(), 3000U);
    kvikio::PushAndPopContext const on{kvikio::get_primary_cuda_context(static_cast<int>(i % 2))};
    auto const off = static_cast<std::ptrdiff_t>(i * 3100);
    dst[i]->expect({content.begin() + off, content.begin() + off + 3000},
                   "range " + std::to_string(i));
  }
}

TEST(LocalBatchLifetime, CloseWaitsForTheBatchsReads)
{
  kvikio::test::TempDir dir;
  auto const content = kvikio::test::pattern(300000, 5);
  kvikio::FileHandle f{write_file(dir, "a.bin", content), "r"};
  kvikio::ThreadPool pool{2};
  std::deque<Destination> dst;
  auto const ranges = layout_ranges(dst, false);
  auto futures      = f.batch_read(
    ranges, BatchReadOptions{.coalesce_max_gap = 300, .task_size = 64 << 10, .thread_pool = &pool});
  // Closing while the merged runs are queued or running waits for them: every range arrives
  // whole and none fails for the close.
  f.close();
  EXPECT_TRUE(f.closed());
  for (std::size_t i = 0; i < layout.size(); ++i) {
    EXPECT_EQ(futures[i].get(), layout[i].size) << i;
    auto const off = static_cast<std::ptrdiff_t>(layout[i].offset);
    dst[i].expect(
      {content.begin() + off, content.begin() + off + static_cast<std::ptrdiff_t>(layout[i].size)},
      "range " + std::to_string(i));
  }
  EXPECT_THROW((void)f.batch_read(ranges), std::runtime_error);  // after the close
}

TEST(LocalBatchErrors, BadRequestsFailTheCallBeforeAnythingIsRead)
{
  kvikio::test::TempDir dir;
  auto const content = kvikio::test::pattern(10000, 4);
  auto const path    = write_file(dir, "a.bin", content);
  kvikio::FileHandle f{path, "r"};
  Destination good{100, false};
  Destination bad{100, false};
  auto expect_refused = [&](std::vector<kvikio::FileReadRequest> const& requests,
                            std::string const& words,
                            BatchReadOptions const& options = {.coalesce_max_gap = 1000}) {
    try {
      (void)kvikio::file_batch_read(requests, options);
      ADD_FAILURE() << "no error for " << words;
    } catch (std::invalid_argument const& e) {
      EXPECT_NE(std::string{e.what()}.find(words), std::string::npos) << e.what();
    }
    good.expect_untouched("the valid request's destination after " + words);
  };
  expect_refused({{&f, good.ptr(), 100, 0}, {&f, bad.ptr(), 100, 9950}},
                 "file_batch_read request 1 runs past the end");
  expect_refused({{&f, good.ptr(), 100, 0}, {nullptr, bad.ptr(), 100, 0}},
                 "request 1 has a null handle");
  expect_refused({{&f, good.ptr(), 100, 0}, {&f, nullptr, 100, 200}}, "null buffer");
  expect_refused({{&f, good.ptr(), 100, 0}},
                 "`task_size` must be positive",
                 {.coalesce_max_gap = 1000, .task_size = 0});
  kvikio::FileHandle closed{path, "r"};
  closed.close();
  try {
    (void)kvikio::file_batch_read(
      std::vector<kvikio::FileReadRequest>{{&f, good.ptr(), 100, 0}, {&closed, bad.ptr(), 100, 0}});
    ADD_FAILURE() << "no error for a closed handle";
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("file_batch_read request 1: the file handle is closed"),
              std::string::npos)
      << e.what();
  }
  good.expect_untouched("after a closed handle");
  // Empty requests are ready at once, a null buffer and an offset past the end allowed (as
  // pread() of 0 bytes).
  auto futures = kvikio::file_batch_read(
    std::vector<kvikio::FileReadRequest>{{&f, nullptr, 0, 0}, {&f, nullptr, 0, 1 << 20}});
  EXPECT_EQ(futures.at(0).get(), 0U);
  EXPECT_EQ(futures.at(1).get(), 0U);
}

// --- remote objects -------------------------------------------------------------------------

using kvikio::RemoteHandle;
using kvikio::test::MisbehavingServer;
constexpr std::size_t object_size = 300000;

// The body of a GET of `url`, with libcurl directly.
std::string fetch(std::string const& url)
{
  std::string body;
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(
    curl,
    CURLOPT_WRITEFUNCTION,
    +[](char* data, std::size_t size, std::size_t n, void* out) -> std::size_t {
      static_cast<std::string*>(out)->append(data, size * n);
      return size * n;
    });
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  CURLcode const code = curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) { throw std::runtime_error("GET " + url + " failed"); }
  return body;
}

std::vector<std::uint8_t> served(std::size_t offset, std::size_t size)
{
  std::vector<std::uint8_t> out(size);
  for (std::size_t i = 0; i < size; ++i) {
    out[i] = MisbehavingServer::byte(offset + i);
  }
  return out;
}

class RemoteBatch : public LocalBatch {};

TEST_P(RemoteBatch, CoalescedRangesLandExactlyAndTakeFewerRequests)
{
  bool const device = GetParam();
  MisbehavingServer server{object_size};
  std::size_t requests_so_far = 0;
  for (auto const gap : {std::optional<std::size_t>{}, std::optional<std::size_t>{300}}) {
    std::string const name = gap ? "merged" : "apart";
    auto h                 = RemoteHandle::open(
      server.url("ok/" + name), kvikio::RemoteEndpointType::HTTP, std::nullopt, object_size);
    std::deque<Destination> dst;
    auto const ranges = layout_ranges(dst, device);
    auto futures =
      h.batch_read(ranges, BatchReadOptions{.coalesce_max_gap = gap, .task_size = test_task_size});
    for (std::size_t i = 0; i < layout.size(); ++i) {
      EXPECT_EQ(futures[i].get(), layout[i].size) << i;
      dst[i].expect(served(layout[i].offset, layout[i].size), name + " range " + std::to_string(i));
    }
    requests_so_far = std::stoul(fetch(server.url("requests/" + name)));
    // Apart: one GET per range, two for the one larger than the task size: 9. Merged with a
    // gap of 300: ranges 0-3 in one GET (100..24600), range 4 alone in two (the next one would
    // make its span 75100 bytes), 5 alone (6 overlaps it), 6 alone (7 is 12000 bytes past it),
    // 7 alone: 6.
    EXPECT_EQ(requests_so_far, gap ? 6U : 9U) << name;
  }
}

TEST_P(RemoteBatch, AFailedTransferFailsExactlyTheRangesItServed)
{
  bool const device = GetParam();
  MisbehavingServer server{object_size};
  auto good = RemoteHandle::open(
    server.url("ok/x"), kvikio::RemoteEndpointType::HTTP, std::nullopt, object_size);
  for (std::string const kind : {"short", "ignore-range", "wrong-range", "404"}) {
    auto bad = RemoteHandle::open(
      server.url(kind + "/x"), kvikio::RemoteEndpointType::HTTP, std::nullopt, object_size);
    // Two merged runs of two ranges each, one on each handle, interleaved in the request list,
    // and a range of the bad handle read alone (far from the others).
    std::deque<Destination> dst;
    for (int i = 0; i < 5; ++i) {
      dst.emplace_back(1000, device);
    }
    std::vector<kvikio::RemoteReadRequest> const requests{{&good, dst[0].ptr(), 1000, 0},
                                                          {&bad, dst[1].ptr(), 1000, 0},
                                                          {&good, dst[2].ptr(), 1000, 1100},
                                                          {&bad, dst[3].ptr(), 1000, 1100},
                                                          {&bad, dst[4].ptr(), 1000, 200000}};
    auto futures = kvikio::remote_batch_read(
      requests, BatchReadOptions{.coalesce_max_gap = 100, .task_size = 1 << 20});
    EXPECT_EQ(futures[0].get(), 1000U);
    EXPECT_EQ(futures[2].get(), 1000U);
    dst[0].expect(served(0, 1000), kind + ": good 0");
    dst[2].expect(served(1100, 1000), kind + ": good 2");
    for (int i : {1, 3, 4}) {
      EXPECT_ANY_THROW(futures[static_cast<std::size_t>(i)].get()) << kind << " " << i;
    }
    // A merged run that failed wrote nothing into its members.
    dst[1].expect_untouched(kind + ": bad 1");
    dst[3].expect_untouched(kind + ": bad 3");
  }
}

INSTANTIATE_TEST_SUITE_P(Memory, RemoteBatch, ::testing::Values(false, true), [](auto const& info) {
  return info.param ? "Device" : "Host";
});

TEST(RemoteBatchErrors, BadRequestsFailTheCallBeforeAnythingIsRead)
{
  MisbehavingServer server{object_size};
  auto h = RemoteHandle::open(
    server.url("ok/refused"), kvikio::RemoteEndpointType::HTTP, std::nullopt, object_size);
  Destination good{100, false};
  Destination bad{100, false};
  auto expect_refused = [&](std::vector<kvikio::RemoteReadRequest> const& requests,
                            std::string const& words) {
    try {
      (void)kvikio::remote_batch_read(requests, {.coalesce_max_gap = 1000});
      ADD_FAILURE() << "no error for " << words;
    } catch (std::invalid_argument const& e) {
      EXPECT_NE(std::string{e.what()}.find(words), std::string::npos) << e.what();
    }
    good.expect_untouched("the valid request's destination after " + words);
  };
  expect_refused({{&h, good.ptr(), 100, 0}, {&h, bad.ptr(), 100, object_size - 50}},
                 "remote_batch_read request 1 runs past the end");
  expect_refused({{&h, good.ptr(), 100, 0}, {nullptr, bad.ptr(), 100, 0}},
                 "request 1 has a null handle");
  expect_refused({{&h, good.ptr(), 100, 0}, {&h, nullptr, 100, 200}}, "null buffer");
  RemoteHandle moved{std::move(h)};
  EXPECT_THROW((void)kvikio::remote_batch_read(
                 std::vector<kvikio::RemoteReadRequest>{{&h, good.ptr(), 10, 0}}),
               std::runtime_error);
  EXPECT_EQ(std::stoul(fetch(server.url("requests/refused"))), 0U);
}

}  // namespace
