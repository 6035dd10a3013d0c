/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * URLs, and RemoteHandle over HTTP against real nginx: sizes, offsets, threads, host and device
 * destinations with poison and guards, errors.
 */
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/url.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include "common/device.hpp"
#include "common/nginx.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"

using kvikio::RemoteEndpointType;
using kvikio::RemoteHandle;
using kvikio::test::pattern;

namespace {

using kvikio::test::poison;

TEST(Url, ParsesAndBuilds)
{
  auto const u = kvikio::detail::parse_url("HTTP://example.com:8080/a/b%20c?x=1#frag");
  EXPECT_EQ(u.scheme, "http");
  EXPECT_EQ(u.host, "example.com");
  ASSERT_TRUE(u.port.has_value());
  EXPECT_EQ(*u.port, 8080);
  EXPECT_EQ(u.path, "/a/b%20c");
  EXPECT_EQ(u.query, "x=1");
  EXPECT_EQ(kvikio::detail::build_url(u), "http://example.com:8080/a/b%20c?x=1");
  auto const plain = kvikio::detail::parse_url("https://h");
  EXPECT_FALSE(plain.port.has_value());
  EXPECT_TRUE(plain.path.empty());
}

TEST(Url, RejectsMalformed)
{
  for (auto bad : {"",
                   "example.com",
                   "://h",
                   "http://",
                   "http://h:0/",
                   "http://h:65536/",
                   "http://h:8x/",
                   "http://user@h/",
                   "http://h/a b",
                   "http://h/\x01",
                   "ht tp://h/"}) {
    EXPECT_THROW(kvikio::detail::parse_url(bad), std::invalid_argument) << bad;
    EXPECT_FALSE(kvikio::detail::is_valid_url(bad)) << bad;
  }
}

TEST(Url, PercentEncoding)
{
  EXPECT_EQ(kvikio::detail::percent_encode("a b/c~d"), "a%20b/c~d");
  EXPECT_EQ(kvikio::detail::percent_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(kvikio::detail::percent_encode("\xff"), "%FF");
}

TEST(RemoteEndpoints, InferAndValidate)
{
  EXPECT_EQ(kvikio::infer_remote_endpoint_type("http://h/o"), RemoteEndpointType::HTTP);
  EXPECT_EQ(kvikio::infer_remote_endpoint_type("https://h/o"), RemoteEndpointType::HTTP);
  EXPECT_THROW(kvikio::infer_remote_endpoint_type("ftp://h/o"), std::runtime_error);
  EXPECT_TRUE(kvikio::HttpEndpoint::is_url_valid("http://127.0.0.1:1/x"));
  EXPECT_FALSE(kvikio::HttpEndpoint::is_url_valid("s3://bucket/x"));
  EXPECT_THROW(kvikio::HttpEndpoint{"not a url"}, std::invalid_argument);
  EXPECT_THROW(RemoteHandle::open("http://127.0.0.1:1/x",
                                  RemoteEndpointType::AUTO,
                                  std::vector<RemoteEndpointType>{RemoteEndpointType::S3}),
               std::runtime_error);
}

class HttpRead : public ::testing::Test {
 protected:
  void SetUp() override
  {
    kvikio::test::write_file(server_.root() + "/object.bin", content_);
    kvikio::test::write_file(server_.root() + "/empty.bin", {});
  }
  kvikio::test::Nginx server_;
  std::vector<std::uint8_t> content_ = pattern((3 << 20) + 12345, 31);
};

TEST_F(HttpRead, SizeAndHostReadsOverSizesOffsetsAndThreads)
{
  auto handle = RemoteHandle::open(server_.url("object.bin"));
  EXPECT_EQ(handle.nbytes(), content_.size());
  EXPECT_EQ(handle.remote_endpoint_type(), RemoteEndpointType::HTTP);
  for (unsigned threads : {1U, 4U}) {
    kvikio::defaults::set_thread_pool_nthreads(threads);
    for (std::size_t size : {std::size_t{0},
                             std::size_t{1},
                             std::size_t{4095},
                             std::size_t{1} << 20,
                             content_.size() - 7}) {
      for (std::size_t offset : {std::size_t{0}, std::size_t{7}}) {
        if (offset + size > content_.size()) { continue; }
        std::vector<std::uint8_t> buf(size + 128, poison);
        ASSERT_EQ(handle.pread(buf.data() + 64, size, offset, 256 << 10).get(), size);
        ASSERT_EQ(0, std::memcmp(buf.data() + 64, content_.data() + offset, size))
          << size << " at " << offset;
        for (std::size_t i = 0; i < 64; ++i) {
          ASSERT_EQ(buf[i], poison);
          ASSERT_EQ(buf[64 + size + i], poison);
        }
      }
    }
  }
  std::vector<std::uint8_t> one(1, poison);
  EXPECT_EQ(handle.read(one.data(), 1, content_.size() - 1), 1U);
  EXPECT_EQ(one[0], content_.back());
}

TEST_F(HttpRead, Errors)
{
  auto handle = RemoteHandle::open(server_.url("object.bin"));
  std::vector<std::uint8_t> buf(100, poison);
  EXPECT_THROW(handle.read(buf.data(), 10, content_.size() - 5),
               std::invalid_argument);  // past the end
  try {
    RemoteHandle::open(server_.url("missing.bin"));
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("404"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("missing.bin"), std::string::npos) << e.what();
  }
  // A size given by the caller that is larger than the object: the server cannot satisfy it.
  auto wrong = RemoteHandle::open(
    server_.url("object.bin"), RemoteEndpointType::AUTO, std::nullopt, content_.size() + 100);
  EXPECT_THROW(wrong.read(buf.data(), 50, content_.size() + 10), std::runtime_error);
  auto empty = RemoteHandle::open(server_.url("empty.bin"));
  EXPECT_EQ(empty.nbytes(), 0U);
  EXPECT_EQ(empty.pread(nullptr, 0).get(), 0U);
}

// At `info` each handle says once what it decided: the object without its query (a presigned
// URL's signature stays out), its size and where that came from, the transport, the requests.
TEST_F(HttpRead, AnOpeningIsOneInfoLineWithoutTheQuery)
{
  kvikio::test::TempDir const dir;
  std::string const log = dir.file("log");
  auto& logger          = kvikio::detail::Logger::instance();
  ASSERT_TRUE(logger.set_file(log));
  logger.set_level(kvikio::detail::LogLevel::info);
  std::string const url = server_.url("object.bin");
  {
    auto probed = RemoteHandle::open(url + "?X-Amz-Signature=s3cr3tsignature");
    auto given  = RemoteHandle::open(url, RemoteEndpointType::HTTP, std::nullopt, 1000);
  }
  logger.set_level(kvikio::detail::LogLevel::warn);
  ASSERT_TRUE(logger.set_file(""));
  auto const bytes = kvikio::test::read_file(log);
  std::string const text(bytes.begin(), bytes.end());
  EXPECT_EQ(text.find("s3cr3tsignature"), std::string::npos) << text;
  std::string const start = "RemoteHandle(" + url + "): ";
  auto const first        = text.find(start);
  ASSERT_NE(first, std::string::npos) << text;
  auto const second = text.find(start, first + 1);
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_EQ(text.find(start, second + 1), std::string::npos) << "one line per handle:\n" << text;
  auto const line = [&](std::size_t at) { return text.substr(at, text.find('\n', at) - at); };
  std::string const transport =
    kvikio::defaults::remote_io_backend() == kvikio::RemoteIOBackend::MULTI_POLL
      ? "; MULTI_POLL, "
      : "; EASY_THREADPOOL, ";
  for (std::string const& part : {std::string{"S3_PRESIGNED_URL, "},
                                  std::to_string(content_.size()) + " bytes (from a HEAD request)",
                                  transport,
                                  std::string{"; timeout "},
                                  std::string{" attempts (retrying 429, 500, 502, 503, 504)"}}) {
    EXPECT_NE(line(first).find(part), std::string::npos)
      << part << " missing from: " << line(first);
  }
  EXPECT_NE(line(second).find("): HTTP, 1000 bytes (as given)"), std::string::npos) << line(second);
  // The process's first handle logged the effective settings first, once.
  auto const report = text.find("effective setting: remote_io_backend = ");
  ASSERT_NE(report, std::string::npos) << text;
  EXPECT_LT(report, first) << text;
  EXPECT_EQ(text.find("effective setting: remote_io_backend = ", report + 1), std::string::npos)
    << text;
}

// Only the range asked for arrives, even when the handle is told a smaller size than the object.
// (A server that ignores ranges needs the misbehaving test server, which is still to come.)
TEST_F(HttpRead, ReadsOnlyTheRangeAskedFor)
{
  auto handle =
    RemoteHandle::open(server_.url("object.bin"), RemoteEndpointType::HTTP, std::nullopt, 1000);
  std::vector<std::uint8_t> buf(1000 + 64, poison);
  EXPECT_EQ(handle.read(buf.data(), 1000, 0), 1000U);
  for (std::size_t i = 1000; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], poison);
  }
}

// The lifetime rule (docs/design.md) for remote handles: a handle destroyed, or moved and then
// destroyed, while its chunks are still queued or running waits for them, so they finish with
// the object's bytes instead of using a freed endpoint.
TEST_F(HttpRead, HandleDestroyedOrMovedUnderRunningReads)
{
  // 17 chunks of 64 KiB per read for 3 threads: most are still queued when the handle goes.
  auto const object = pattern((1 << 20) + 4321, 33);
  kvikio::test::write_file(server_.root() + "/lifetime.bin", object);
  kvikio::ThreadPool pool{3};
  for (int round = 0; round < 20; ++round) {
    std::vector<std::uint8_t> first(object.size(), poison), second(object.size(), poison);
    std::future<std::size_t> a, b;
    {
      auto handle = RemoteHandle::open(server_.url("lifetime.bin"));
      a           = handle.pread(first.data(), first.size(), 0, 64 << 10, &pool);
      RemoteHandle moved{std::move(handle)};
      b = moved.pread(second.data(), second.size(), 0, 64 << 10, &pool);
    }  // both handles destroyed here, with chunks queued
    ASSERT_EQ(a.get(), object.size());
    ASSERT_EQ(b.get(), object.size());
    ASSERT_EQ(first, object) << "round " << round;
    ASSERT_EQ(second, object) << "round " << round;
  }
}

using kvikio::test::OnDevice;

TEST_F(OnDevice, HttpReadsIntoDeviceMemory)
{
  kvikio::test::Nginx server;
  auto const content = pattern((2 << 20) + 333, 32);
  kvikio::test::write_file(server.root() + "/object.bin", content);
  kvikio::defaults::set_bounce_buffer_size(64 << 10);  // many slots per response
  kvikio::defaults::set_thread_pool_nthreads(3);
  auto handle = RemoteHandle::open(server.url("object.bin"));
  kvikio::test::DeviceBuffer dev{content.size() + 128};
  for (std::size_t offset : {std::size_t{0}, std::size_t{5}}) {
    std::size_t const size = content.size() - offset;
    std::vector<std::uint8_t> fill(content.size() + 128, poison);
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyHtoD(dev.ptr, fill.data(), fill.size()));
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().CtxSynchronize());
    ASSERT_EQ(handle.pread(static_cast<char*>(dev.get()) + 64, size, offset, 300 << 10).get(),
              size);
    std::vector<std::uint8_t> back(fill.size());
    KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
    ASSERT_EQ(0, std::memcmp(back.data() + 64, content.data() + offset, size));
    for (std::size_t i = 0; i < 64; ++i) {
      ASSERT_EQ(back[i], poison);
      ASSERT_EQ(back[64 + size + i], poison);
    }
  }
}

}  // namespace
