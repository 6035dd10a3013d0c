/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * S3 (moto's server and the botocore-checked servers/s3_sigv4.py), presigned URLs and WebHDFS: URL
 * forms, AUTO inference, credentials, signatures and the peers' errors. The read matrix over
 * sizes, offsets, threads and memories is test_remote_reads.cpp.
 */
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/detail/url.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/device.hpp"
#include "common/env_guard.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "common/test_servers.hpp"

using kvikio::RemoteEndpointType;
using kvikio::RemoteHandle;
using kvikio::test::pattern;

namespace {

using kvikio::test::poison;

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
  // AWS S3's http forms are S3 (unless presigned); other hosts, or no object key, are HTTP.
  for (auto url : {"https://b.s3.us-east-1.amazonaws.com/o/k.bin",
                   "https://b.s3.amazonaws.com/o",
                   "http://b.s3-eu-west-1.amazonaws.com/o",
                   "https://s3.us-east-1.amazonaws.com/b/o",
                   "https://S3.AMAZONAWS.COM/b/o",
                   "s3://b/o"}) {
    EXPECT_TRUE(kvikio::S3Endpoint::is_url_valid(url)) << url;
    EXPECT_TRUE(kvikio::S3PublicEndpoint::is_url_valid(url)) << url;
    EXPECT_EQ(kvikio::infer_remote_endpoint_type(url), RemoteEndpointType::S3) << url;
  }
  for (auto url : {"https://s3.amazonaws.com/b",
                   "https://s3.amazonaws.com/b/",
                   "https://amazonaws.com/b/o",
                   "https://b.s3.us.east.amazonaws.com/o",
                   "https://example.com/b/o",
                   "http://127.0.0.1:9000/b/o"}) {
    EXPECT_FALSE(kvikio::S3Endpoint::is_url_valid(url)) << url;
    EXPECT_EQ(kvikio::infer_remote_endpoint_type(url), RemoteEndpointType::HTTP) << url;
  }
  // A scheme is case-insensitive (RFC 3986), as libcurl's parser, upstream's, has it.
  EXPECT_TRUE(kvikio::S3Endpoint::is_url_valid("S3://bucket/object"));
  EXPECT_EQ(kvikio::S3Endpoint::parse_s3_url("S3://bucket/dir/object"),
            (std::pair<std::string, std::string>{"bucket", "dir/object"}));
  EXPECT_EQ(kvikio::infer_remote_endpoint_type("S3://bucket/object"), RemoteEndpointType::S3);
  EXPECT_FALSE(kvikio::S3Endpoint::is_url_valid("s3:/bucket/object"));
  // No object and no file: no type takes it (upstream's HTTP needs a path, as ours).
  EXPECT_FALSE(kvikio::S3Endpoint::is_url_valid("https://b.s3.us-east-1.amazonaws.com/"));
  EXPECT_FALSE(kvikio::HttpEndpoint::is_url_valid("https://b.s3.us-east-1.amazonaws.com/"));
  EXPECT_THROW((void)kvikio::infer_remote_endpoint_type("https://b.s3.us-east-1.amazonaws.com/"),
               std::runtime_error);
  EXPECT_FALSE(kvikio::S3Endpoint::is_url_valid(
    "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc"));
  EXPECT_EQ(kvikio::infer_remote_endpoint_type(
              "https://b.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc"),
            RemoteEndpointType::S3_PRESIGNED_URL);
  EXPECT_THROW(kvikio::WebHdfsEndpoint{"http://nn/other"}, std::invalid_argument);
  {
    kvikio::test::EnvGuard const no_region{{"AWS_DEFAULT_REGION", std::nullopt}};
    EXPECT_THROW(RemoteHandle::open("s3://bucket/object"), std::invalid_argument);
  }
  kvikio::WebHdfsEndpoint const by_parts{"nn", "9870", "/dir/a b.bin", "me"};
  EXPECT_EQ(by_parts.str(), "http://nn:9870/webhdfs/v1/dir/a%20b.bin");
}

// What S3 pastes into a host name, a signature scope or a path is checked first: a crafted
// region, bucket or endpoint would send the signed request elsewhere or name another object.
TEST(RemoteEndpoints, S3PartsAreValidatedBeforeARequestIsBuilt)
{
  kvikio::test::EnvGuard const env{{"AWS_ENDPOINT_URL", std::nullopt},
                                   {"AWS_DEFAULT_REGION", std::nullopt}};
  EXPECT_EQ(kvikio::S3Endpoint::url_from_bucket_and_object("b-1.x", "k", "eu-west-3", {}),
            "https://b-1.x.s3.eu-west-3.amazonaws.com/k");
  EXPECT_NO_THROW(kvikio::S3Endpoint("http://127.0.0.1:9/b/k", "my_Region-2", "id", "secret"));
  for (std::string region : {"evil.com/", "us-east-1.evil.com", "x@y", "us-east-1:s3", "a b", ""}) {
    EXPECT_THROW(kvikio::S3Endpoint::url_from_bucket_and_object("b", "k", region, {}),
                 std::invalid_argument)
      << region;
    EXPECT_THROW(kvikio::S3Endpoint("http://127.0.0.1:9/b/k", region, "id", "secret"),
                 std::invalid_argument)
      << region;
  }
  for (std::string bucket :
       {std::string{"evil.com/x"}, {"a?b"}, {"a#b"}, {"a@b"}, {"a b"}, std::string(64, 'a')}) {
    EXPECT_THROW(kvikio::S3Endpoint::url_from_bucket_and_object(bucket, "k", "us-east-1", {}),
                 std::invalid_argument)
      << bucket;
  }
  for (std::string endpoint : {"http://127.0.0.1:9/?x=1", "http://127.0.0.1:9/#f"}) {
    try {
      (void)kvikio::S3Endpoint::url_from_bucket_and_object("b", "k", {}, endpoint);
      ADD_FAILURE() << endpoint << " was taken";
    } catch (std::invalid_argument const& e) {
      EXPECT_NE(std::string{e.what()}.find("query or fragment"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(kvikio::S3Endpoint::url_from_bucket_and_object("b", "k", {}, "http://h:9/base/"),
            "http://h:9/base/b/k");
}

TEST(RemoteEndpoints, UrlsInMessagesHideQueryAndUserInformation)
{
  using kvikio::detail::url_for_message;
  EXPECT_EQ(url_for_message("https://u:p@h:1/a/b?X-Amz-Signature=s#f"),
            "https://<hidden>@h:1/a/b?<hidden>");
  EXPECT_EQ(url_for_message("http://h/a#frag"), "http://h/a?<hidden>");
  EXPECT_EQ(url_for_message("http://h/a"), "http://h/a");
  EXPECT_EQ(url_for_message("s3://b/k"), "s3://b/k");
  EXPECT_EQ(url_for_message("http://h/a@b"), "http://h/a@b");  // a path's '@' is no user info
}

// Whatever fails, no secret a URL carries (a presigned signature, a token in the query, a
// password before '@') appears in the message: every entry point, before and after a request.
TEST(RemoteEndpoints, NoSecretOfAUrlReachesAMessage)
{
  kvikio::test::MisbehavingServer const server{1000};
  std::string const q    = "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=TOPSECRETSIG";
  std::string const base = server.url("");
  std::vector<std::pair<char const*, std::function<void()>>> const cases{
    {"bad scheme, presigned",
     [&] { RemoteHandle::open("ftp://127.0.0.1:9/x" + q, RemoteEndpointType::S3_PRESIGNED_URL); }},
    {"unsupported scheme", [&] { RemoteHandle::open("gopher://h/x" + q); }},
    {"HTTP 404", [&] { RemoteHandle::open(base + "404/x" + q, RemoteEndpointType::HTTP); }},
    {"not in the allowlist",
     [&] {
       RemoteHandle::open(base + "404/x" + q,
                          RemoteEndpointType::AUTO,
                          std::vector<RemoteEndpointType>{RemoteEndpointType::S3});
     }},
    {"user information",
     [&] {
       RemoteHandle::open("http://user:TOPSECRETPASSWORD@127.0.0.1:9/x", RemoteEndpointType::HTTP);
     }},
    {"read past the end",
     [&] {
       auto h = RemoteHandle::open(base + "ok/x" + q, RemoteEndpointType::HTTP, std::nullopt, 100);
       std::vector<std::uint8_t> buf(200);
       (void)h.read(buf.data(), 200, 0);
     }},
    {"presigned 403", [&] {
       auto h = RemoteHandle::open(
         base + "403/x" + q, RemoteEndpointType::S3_PRESIGNED_URL, std::nullopt, 1000);
       std::vector<std::uint8_t> buf(10);
       (void)h.read(buf.data(), 10, 0);
     }}};
  for (auto const& [name, call] : cases) {
    try {
      call();
      ADD_FAILURE() << name << ": did not fail";
    } catch (std::exception const& e) {
      EXPECT_EQ(std::string{e.what()}.find("TOPSECRET"), std::string::npos)
        << name << ": " << e.what();
    }
  }
}

TEST(RemoteEndpoints, WebHdfsLengthParser)
{
  EXPECT_EQ(
    kvikio::detail::parse_webhdfs_length(R"({"FileStatus":{"length": 1234,"type":"FILE"}})"),
    1234U);
  EXPECT_EQ(kvikio::detail::parse_webhdfs_length(
              R"({"FileStatus":{"ecPolicyObj":{"length":7,"s":"}\"{"},"length" : 99 }})"),
            99U);  // its own "length", not one of a nested object (or inside a string)
  // Without a FileStatus (upstream's test server answers so): the outer object's own "length".
  EXPECT_EQ(kvikio::detail::parse_webhdfs_length(R"({"length": 8388608})"), 8388608U);
  for (auto bad : {"",
                   "{}",
                   R"({"length":"12"})",
                   R"({"length":-1})",
                   R"({"length":})",
                   R"({"other":{"length":1234}})",        // another object's
                   R"({"FileStatus":[],"length":1234})",  // a FileStatus without a length
                   R"({"FileStatus":{"length":8.388621e6,"type":"FILE"}})",
                   R"({"FileStatus":{"length":8388621e0}})",
                   R"({"FileStatus":{"length":12abc}})",
                   R"({"FileStatus":{"length":+12}})",
                   R"({"FileStatus":{"length":-12}})",
                   R"({"FileStatus":{"length":18446744073709551616}})",
                   R"({"FileStatus":{"nested":{"length":5}}})",
                   R"({"FileStatus":{"length":12)"}) {
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

class S3 : public ::testing::Test {
 protected:
  void SetUp() override
  {
    std::filesystem::create_directories(dir_.file("bucket"));
    std::filesystem::create_directories(dir_.file("public"));
    kvikio::test::write_file(dir_.file("bucket/data.bin"), content_);
    kvikio::test::write_file(dir_.file("public/data.bin"), content_);
    server_ = std::make_unique<kvikio::test::S3SigV4Server>(dir_.file(""));
  }
  kvikio::test::TempDir dir_;
  std::vector<std::uint8_t> content_ = pattern((1 << 20) + 99, 51);
  std::unique_ptr<kvikio::test::S3SigV4Server> server_;
  using Server = kvikio::test::S3SigV4Server;
};

TEST_F(S3, SignedReadsWithTheRightKey)
{
  kvikio::test::EnvGuard const env{{"AWS_DEFAULT_REGION", Server::region},
                                   {"AWS_ACCESS_KEY_ID", Server::access_key},
                                   {"AWS_SECRET_ACCESS_KEY", Server::secret},
                                   {"AWS_ENDPOINT_URL", server_->url("")},
                                   {"AWS_SESSION_TOKEN", std::nullopt}};
  auto handle = RemoteHandle::open("s3://bucket/data.bin");
  EXPECT_EQ(handle.remote_endpoint_type(), RemoteEndpointType::S3);
  EXPECT_EQ(handle.nbytes(), content_.size());
  std::vector<std::uint8_t> buf(content_.size() + 128, poison);
  ASSERT_EQ(handle.pread(buf.data() + 64, content_.size() - 11, 11, 200 << 10).get(),
            content_.size() - 11);
  ASSERT_EQ(0, std::memcmp(buf.data() + 64, content_.data() + 11, content_.size() - 11));
  EXPECT_EQ(buf[63], poison);
  EXPECT_EQ(buf[64 + content_.size() - 11], poison);
  // A session token is signed too.
  kvikio::S3Endpoint with_token{server_->url("bucket/data.bin"),
                                Server::region,
                                Server::access_key,
                                Server::secret,
                                "token-123"};
  RemoteHandle tokened{std::make_unique<kvikio::S3Endpoint>(std::move(with_token))};
  EXPECT_EQ(tokened.nbytes(), content_.size());
}

TEST_F(S3, WrongSecretIsRefusedWithTheServersError)
{
  auto endpoint = std::make_unique<kvikio::S3Endpoint>(
    server_->url("bucket/data.bin"), Server::region, Server::access_key, "not-the-secret");
  try {
    RemoteHandle handle{std::move(endpoint)};
    FAIL() << "a wrong secret was accepted";
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("403"), std::string::npos) << e.what();
  }
  RemoteHandle handle{
    std::make_unique<kvikio::S3Endpoint>(
      server_->url("bucket/data.bin"), Server::region, Server::access_key, "not-the-secret"),
    content_.size()};
  std::vector<std::uint8_t> buf(100, poison);
  try {
    (void)handle.read(buf.data(), 10, 0);
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("HTTP 403"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("SignatureDoesNotMatch"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](auto b) { return b == poison; }));
}

TEST_F(S3, PublicBucketNeedsNoSignature)
{
  auto handle = RemoteHandle::open(server_->url("public/data.bin"), RemoteEndpointType::S3_PUBLIC);
  EXPECT_EQ(handle.nbytes(), content_.size());
  std::vector<std::uint8_t> buf(1000, poison);
  ASSERT_EQ(handle.read(buf.data(), 1000, 5), 1000U);
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + 5, 1000));
  EXPECT_THROW(RemoteHandle::open(server_->url("bucket/data.bin"), RemoteEndpointType::S3_PUBLIC),
               std::runtime_error);  // private: 403 without a signature
}

// AUTO tries the allowed types in order; signed S3 that cannot work falls back to S3_PUBLIC.
TEST_F(S3, AutoFallsBackToPublicOnlyWhereAllowed)
{
  kvikio::test::EnvGuard const env{{"AWS_DEFAULT_REGION", Server::region},
                                   {"AWS_ACCESS_KEY_ID", std::nullopt},
                                   {"AWS_SECRET_ACCESS_KEY", std::nullopt},
                                   {"AWS_ENDPOINT_URL", server_->url("")},
                                   {"AWS_SESSION_TOKEN", std::nullopt}};
  // No credentials: the default list holds S3_PUBLIC, so the public object opens unsigned.
  auto handle = RemoteHandle::open("s3://public/data.bin");
  EXPECT_EQ(handle.remote_endpoint_type(), RemoteEndpointType::S3_PUBLIC);
  EXPECT_EQ(handle.nbytes(), content_.size());
  std::vector<std::uint8_t> buf(300, poison);
  ASSERT_EQ(handle.read(buf.data() + 50, 200, 77), 200U);
  EXPECT_EQ(0, std::memcmp(buf.data() + 50, content_.data() + 77, 200));
  EXPECT_EQ(buf[49], poison);
  EXPECT_EQ(buf[250], poison);
  // Only S3_PUBLIC allowed: the s3:// URL opens there directly.
  EXPECT_EQ(
    RemoteHandle::open(
      "s3://public/data.bin", RemoteEndpointType::AUTO, std::vector{RemoteEndpointType::S3_PUBLIC})
      .remote_endpoint_type(),
    RemoteEndpointType::S3_PUBLIC);
  // Only S3 allowed: the missing credentials are the error.
  EXPECT_THROW(
    RemoteHandle::open(
      "s3://public/data.bin", RemoteEndpointType::AUTO, std::vector{RemoteEndpointType::S3}),
    std::invalid_argument);
  // A private object without credentials: the fallback's 403 is the error.
  EXPECT_THROW(RemoteHandle::open("s3://bucket/data.bin"), std::runtime_error);
  // No allowed type fits an http URL that is not AWS's.
  try {
    (void)RemoteHandle::open(server_->url("public/data.bin"),
                             RemoteEndpointType::AUTO,
                             std::vector{RemoteEndpointType::S3, RemoteEndpointType::WEBHDFS});
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("Unsupported endpoint URL."), std::string::npos)
      << e.what();
  }
}

TEST_F(OnDevice, S3SignedReadsIntoDeviceMemory)
{
  kvikio::test::TempDir dir;
  std::filesystem::create_directories(dir.file("bucket"));
  auto const content = pattern((1 << 20) + 5, 52);
  kvikio::test::write_file(dir.file("bucket/data.bin"), content);
  kvikio::test::S3SigV4Server server{dir.file("")};
  using Server = kvikio::test::S3SigV4Server;
  RemoteHandle handle{std::make_unique<kvikio::S3Endpoint>(
    server.url("bucket/data.bin"), Server::region, Server::access_key, Server::secret)};
  kvikio::defaults::set_bounce_buffer_size(64 << 10);
  kvikio::test::DeviceBuffer dev{content.size()};
  ASSERT_EQ(handle.pread(dev.get(), content.size(), 0, 256 << 10).get(), content.size());
  std::vector<std::uint8_t> back(content.size(), poison);
  KVIKIO_CUDA_DRIVER_TRY(kvikio::test::api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
  EXPECT_EQ(back, content);
}

TEST_F(S3, PresignedUrlSignedWithAnotherSecretIsRefused)
{
  std::string const url = server_->url("bucket/data.bin");
  EXPECT_EQ(RemoteHandle::open(Server::presign(url)).nbytes(), content_.size());
  try {
    RemoteHandle::open(Server::presign(url, "not-the-secret"));
    FAIL() << "a URL presigned with the wrong secret was accepted";
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("403"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("SignatureDoesNotMatch"), std::string::npos) << e.what();
  }
}

class MotoS3Protocol : public ::testing::Test {
 protected:
  void SetUp() override
  {
    server_.put("data.bin", content_);
    server_.put("dir/a%20b%2Bc.bin", content_);
  }
  kvikio::test::MotoS3Server server_;
  std::vector<std::uint8_t> content_ = pattern((1 << 20) + 3, 53);
  using Server                       = kvikio::test::MotoS3Server;

  void expect_reads(RemoteHandle& handle)
  {
    EXPECT_EQ(handle.remote_endpoint_type(), RemoteEndpointType::S3);
    ASSERT_EQ(handle.nbytes(), content_.size());
    std::vector<std::uint8_t> buf(content_.size(), poison);
    ASSERT_EQ(handle.pread(buf.data(), content_.size() - 2, 2, 300 << 10).get(),
              content_.size() - 2);
    EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + 2, content_.size() - 2));
  }
};

TEST_F(MotoS3Protocol, EveryWayToNameAnObject)
{
  for (std::string key : {"data.bin", "dir/a b+c.bin"}) {
    SCOPED_TRACE(key);
    {  // s3://bucket/key with everything from the AWS variables
      kvikio::test::EnvGuard const env{{"AWS_DEFAULT_REGION", Server::region},
                                       {"AWS_ACCESS_KEY_ID", Server::access_key},
                                       {"AWS_SECRET_ACCESS_KEY", Server::secret},
                                       {"AWS_ENDPOINT_URL", server_.endpoint() + "/"},
                                       {"AWS_SESSION_TOKEN", std::nullopt}};
      auto handle = RemoteHandle::open(std::string{"s3://"} + Server::bucket + "/" + key);
      expect_reads(handle);
    }
    // Bucket and object names with everything given as arguments.
    RemoteHandle by_names{
      std::make_unique<kvikio::S3Endpoint>(std::pair<std::string, std::string>{Server::bucket, key},
                                           Server::region,
                                           Server::access_key,
                                           Server::secret,
                                           server_.endpoint())};
    expect_reads(by_names);
  }
  // A path-style URL.
  RemoteHandle by_url{std::make_unique<kvikio::S3Endpoint>(
    server_.url("dir/a%20b%2Bc.bin"), Server::region, Server::access_key, Server::secret)};
  expect_reads(by_url);
}

TEST_F(MotoS3Protocol, MissingObjectOrBucketNamesTheStatusAndUrl)
{
  for (std::string url : {server_.url("missing.bin"), server_.endpoint() + "/no-bucket/data.bin"}) {
    try {
      RemoteHandle handle{std::make_unique<kvikio::S3Endpoint>(
        url, Server::region, Server::access_key, Server::secret)};
      FAIL() << url << " was opened";
    } catch (std::runtime_error const& e) {
      EXPECT_NE(std::string{e.what()}.find("404"), std::string::npos) << e.what();
      EXPECT_NE(std::string{e.what()}.find(url), std::string::npos) << e.what();
    }
  }
  // A read (GET, with a body) carries S3's error code too.
  RemoteHandle handle{
    std::make_unique<kvikio::S3Endpoint>(
      server_.url("missing.bin"), Server::region, Server::access_key, Server::secret),
    100};
  std::vector<std::uint8_t> buf(100, poison);
  try {
    (void)handle.read(buf.data(), 100, 0);
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("NoSuchKey"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](auto b) { return b == poison; }));
}

// One-byte ranges, the first byte's included ("bytes=0-0", which some S3 servers answer with the
// whole object: test_remote_faults' WholeObjectAs206IsRefused), land exactly.
TEST_F(MotoS3Protocol, OneByteRangesLandExactly)
{
  RemoteHandle handle{std::make_unique<kvikio::S3Endpoint>(
    server_.url("data.bin"), Server::region, Server::access_key, Server::secret)};
  for (std::size_t offset : {std::size_t{0}, std::size_t{1}, content_.size() - 1}) {
    std::vector<std::uint8_t> buf(64, poison);
    ASSERT_EQ(handle.read(buf.data() + 32, 1, offset), 1U) << offset;
    EXPECT_EQ(buf[32], content_[offset]) << offset;
    buf[32] = poison;
    EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](auto b) { return b == poison; })) << offset;
  }
}

}  // namespace
