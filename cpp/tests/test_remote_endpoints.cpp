/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Presigned S3 URLs and WebHDFS: URL forms, AUTO inference, sizes, reads into host and device
 * memory against test servers (servers/webhdfs.py, servers/misbehaving_http.py).
 */
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/device.hpp"
#include "common/env_guard.hpp"
#include "common/temp_dir.hpp"
#include "common/test_servers.hpp"

using kvikio::RemoteEndpointType;
using kvikio::RemoteHandle;
using kvikio::test::pattern;

namespace {

constexpr std::uint8_t poison = 0xEE;

TEST(RemoteEndpoints, UrlForms)
{
  EXPECT_TRUE(kvikio::WebHdfsEndpoint::is_url_valid("http://nn:9870/webhdfs/v1/data/x.bin"));
  EXPECT_TRUE(kvikio::WebHdfsEndpoint::is_url_valid("https://nn:9870/webhdfs/v1/x?user.name=me"));
  EXPECT_FALSE(kvikio::WebHdfsEndpoint::is_url_valid("http://nn:9870/webhdfs/v1/"));
  EXPECT_FALSE(kvikio::WebHdfsEndpoint::is_url_valid("http://nn:9870/data/x.bin"));
  EXPECT_TRUE(kvikio::S3EndpointWithPresignedUrl::is_url_valid(
    "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc"));
  EXPECT_FALSE(kvikio::S3EndpointWithPresignedUrl::is_url_valid("https://b.s3.amazonaws.com/o"));
  EXPECT_EQ(kvikio::infer_remote_endpoint_type("http://nn:9870/webhdfs/v1/x"),
            RemoteEndpointType::WEBHDFS);
  EXPECT_EQ(kvikio::infer_remote_endpoint_type("https://h/o?X-Amz-Signature=s"),
            RemoteEndpointType::S3_PRESIGNED_URL);
  EXPECT_THROW(kvikio::WebHdfsEndpoint{"http://nn/other"}, std::invalid_argument);
  EXPECT_THROW(RemoteHandle::open("s3://bucket/object"),
               std::invalid_argument);  // S3 is still to come
  kvikio::WebHdfsEndpoint const by_parts{"nn", "9870", "/dir/a b.bin", "me"};
  EXPECT_EQ(by_parts.str(), "http://nn:9870/webhdfs/v1/dir/a%20b.bin");
}

TEST(RemoteEndpoints, WebHdfsLengthParser)
{
  EXPECT_EQ(
    kvikio::detail::parse_webhdfs_length(R"({"FileStatus":{"length": 1234,"type":"FILE"}})"),
    1234U);
  for (auto bad : {"", "{}", R"({"length":"12"})", R"({"length":-1})", R"({"length":})"}) {
    EXPECT_THROW(kvikio::detail::parse_webhdfs_length(bad), std::runtime_error) << bad;
  }
}

TEST(RemoteEndpoints, PresignedUrlSizeAndReads)
{
  std::size_t const size = 50000;
  kvikio::test::MisbehavingServer server{size};
  auto handle = RemoteHandle::open(
    server.url("ok/obj?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=secret"));
  EXPECT_EQ(handle.remote_endpoint_type(), RemoteEndpointType::S3_PRESIGNED_URL);
  EXPECT_EQ(handle.nbytes(), size);  // from the Content-Range of a bytes=0-0 GET
  EXPECT_EQ(handle.endpoint().str().find("secret"), std::string::npos)
    << "the signature must not be logged";
  std::vector<std::uint8_t> buf(size + 128, poison);
  ASSERT_EQ(handle.pread(buf.data() + 64, size - 3, 3, 16 << 10).get(), size - 3);
  for (std::size_t i = 0; i < size - 3; ++i) {
    ASSERT_EQ(buf[64 + i], kvikio::test::MisbehavingServer::byte(3 + i));
  }
  EXPECT_EQ(buf[63], poison);
  EXPECT_EQ(buf[64 + size - 3], poison);
}

class WebHdfs : public ::testing::Test {
 protected:
  void SetUp() override
  {
    kvikio::test::write_file(dir_.file("data.bin"), content_);
    server_ = std::make_unique<kvikio::test::WebHdfsServer>(dir_.file(""));
  }
  void TearDown() override { server_.reset(); }
  kvikio::test::TempDir dir_;
  std::vector<std::uint8_t> content_ = pattern((1 << 20) + 77, 41);
  std::unique_ptr<kvikio::test::WebHdfsServer> server_;
};

TEST_F(WebHdfs, HostReadsThroughTheRedirect)
{
  kvikio::test::EnvGuard const env{{"KVIKIO_WEBHDFS_USERNAME", "kvikio"}};
  auto handle = RemoteHandle::open(server_->url("webhdfs/v1/data.bin"));
  EXPECT_EQ(handle.remote_endpoint_type(), RemoteEndpointType::WEBHDFS);
  EXPECT_EQ(handle.nbytes(), content_.size());
  for (std::size_t offset : {std::size_t{0}, std::size_t{1000}}) {
    std::size_t const size = content_.size() - offset;
    std::vector<std::uint8_t> buf(size + 128, poison);
    ASSERT_EQ(handle.pread(buf.data() + 64, size, offset, 128 << 10).get(), size);
    ASSERT_EQ(0, std::memcmp(buf.data() + 64, content_.data() + offset, size));
    EXPECT_EQ(buf[63], poison);
    EXPECT_EQ(buf[64 + size], poison);
  }
  try {
    RemoteHandle::open(server_->url("webhdfs/v1/missing.bin"));
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("404"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("FileNotFoundException"), std::string::npos) << e.what();
  }
}

using kvikio::test::OnDevice;

TEST_F(OnDevice, WebHdfsIntoDeviceMemory)
{
  kvikio::test::TempDir dir;
  auto const content = pattern((1 << 20) + 77, 42);
  kvikio::test::write_file(dir.file("data.bin"), content);
  kvikio::test::WebHdfsServer server{dir.file("")};
  auto handle = RemoteHandle::open(server.url("webhdfs/v1/data.bin"));
  kvikio::defaults::set_bounce_buffer_size(64 << 10);
  kvikio::test::DeviceBuffer dev{content.size()};
  ASSERT_EQ(handle.pread(dev.get(), content.size(), 0, 256 << 10).get(), content.size());
  std::vector<std::uint8_t> back(content.size(), poison);
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content);
}

}  // namespace
