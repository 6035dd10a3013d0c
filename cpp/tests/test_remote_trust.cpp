/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The remote trust boundary against real servers, on both transports: every request names
 * exactly what its caller asked (S3 keys with dot segments on moto's S3, a WebHDFS user given
 * encoded), numbers a server sends are read strictly, and no planted secret reaches an
 * exception, a log line or the verbose trace. The rules themselves: test_request_fields.cpp,
 * test_message_redaction.cpp.
 */
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/device.hpp"
#include "common/env_guard.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "common/test_servers.hpp"

using kvikio::RemoteEndpointType;
using kvikio::RemoteHandle;
using kvikio::test::MisbehavingServer;
using kvikio::test::MotoS3Server;
using kvikio::test::pattern;
using kvikio::test::poison;

namespace {

// Keys that libcurl would resolve into other keys (or the bucket's listing) if it were let.
TEST(RemoteTrust, S3KeysWithDotSegmentsReadTheirOwnObject)
{
  MotoS3Server server;
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> const objects{
    {"escape", pattern(70001, 1)},
    {"dir/../escape", pattern(70002, 2)},
    {"dir/dot", pattern(70003, 3)},
    {"dir/./dot", pattern(70004, 4)},
    {"a/b/../../c", pattern(70005, 5)}};
  for (auto const& [key, data] : objects) {
    server.put(key, data);
  }
  kvikio::test::EnvGuard const env{{"AWS_DEFAULT_REGION", MotoS3Server::region},
                                   {"AWS_ACCESS_KEY_ID", MotoS3Server::access_key},
                                   {"AWS_SECRET_ACCESS_KEY", MotoS3Server::secret},
                                   {"AWS_ENDPOINT_URL", server.endpoint()},
                                   {"AWS_SESSION_TOKEN", std::nullopt}};
  std::vector<RemoteHandle> handles;
  for (auto const& [key, data] : objects) {
    SCOPED_TRACE(key);
    auto handle = RemoteHandle::open(std::string{"s3://"} + MotoS3Server::bucket + "/" + key);
    ASSERT_EQ(handle.nbytes(), data.size());
    std::vector<std::uint8_t> buf(data.size() + 64, poison);
    ASSERT_EQ(handle.pread(buf.data() + 32, data.size() - 7, 7, 16 << 10).get(), data.size() - 7);
    EXPECT_EQ(0, std::memcmp(buf.data() + 32, data.data() + 7, data.size() - 7));
    EXPECT_EQ(buf[31], poison);
    EXPECT_EQ(buf[32 + data.size() - 7], poison);
    handles.push_back(std::move(handle));
  }
  // In one batch: ranges of every key, each from its own object.
  std::vector<std::vector<std::uint8_t>> bufs(objects.size(),
                                              std::vector<std::uint8_t>(1000, poison));
  std::vector<kvikio::RemoteReadRequest> requests;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    requests.push_back({&handles[i], bufs[i].data(), 1000, 500});
  }
  auto futures = kvikio::remote_batch_read(requests);
  for (std::size_t i = 0; i < objects.size(); ++i) {
    EXPECT_EQ(futures[i].get(), 1000U);
    EXPECT_EQ(0, std::memcmp(bufs[i].data(), objects[i].second.data() + 500, 1000))
      << objects[i].first;
  }
  // Key ".." is an object of its own too, not the bucket's listing: here, one that is missing.
  EXPECT_THROW(RemoteHandle::open(std::string{"s3://"} + MotoS3Server::bucket + "/.."),
               std::runtime_error);
}

TEST(RemoteTrust, S3BucketNamesThatWouldNameAnotherResourceAreRefused)
{
  MotoS3Server server;
  server.put("key", pattern(100, 6));
  for (std::string const& bucket : {std::string{"other/../"} + MotoS3Server::bucket,
                                    std::string{MotoS3Server::bucket} + "?list-type=2&x=",
                                    std::string{MotoS3Server::bucket} + "#"}) {
    SCOPED_TRACE(bucket);
    EXPECT_THROW(RemoteHandle(std::make_unique<kvikio::S3Endpoint>(
                   std::pair<std::string, std::string>{bucket, "key"},
                   MotoS3Server::region,
                   MotoS3Server::access_key,
                   MotoS3Server::secret,
                   server.endpoint())),
                 std::invalid_argument);
  }
}

TEST(RemoteTrust, ContentLengthsThatAreNotPlainDigitsAreRefused)
{
  MisbehavingServer server{1000};
  for (std::string const& length :
       std::vector<std::string>{"1e3", "0x10", "12abc", "-1", "%2B5", "18446744073709551616"}) {
    try {
      (void)RemoteHandle::open(server.url("length/" + length + "/obj"), RemoteEndpointType::HTTP);
      FAIL() << length << " was taken as a length";
    } catch (std::runtime_error const& e) {
      EXPECT_NE(std::string{e.what()}.find("Content-Length"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(RemoteHandle::open(server.url("length/1000/obj"), RemoteEndpointType::HTTP).nbytes(),
            1000U);
}

TEST(RemoteTrust, WebHdfsUserGivenEncodedInTheUrlIsSentAsThatUser)
{
  constexpr std::size_t size = 5000;
  MisbehavingServer server{size};
  for (std::string const& url : {server.url("webhdfs/v1/user-is/al%40ice/f?user.name=al%40ice"),
                                 server.url("webhdfs/v1/user-is/a%20b/f?op=X&user.name=a+b")}) {
    SCOPED_TRACE(url);
    auto handle = RemoteHandle::open(url, RemoteEndpointType::WEBHDFS);
    ASSERT_EQ(handle.nbytes(), size);
    std::vector<std::uint8_t> buf(100, poison);
    ASSERT_EQ(handle.read(buf.data(), 100, 17), 100U);
    for (std::size_t i = 0; i < 100; ++i) {
      ASSERT_EQ(buf[i], MisbehavingServer::byte(17 + i)) << i;
    }
  }
  EXPECT_THROW(RemoteHandle::open(server.url("webhdfs/v1/user-is/al%40ice/f?user.name=bob"),
                                  RemoteEndpointType::WEBHDFS),
               std::runtime_error);
}

// Secrets planted in every credential, sent to servers that echo the request back (in plain
// text, and as S3's SignatureDoesNotMatch does), through every way a read fails; then every
// message, the log at debug and the verbose trace are scanned for them.
TEST(RemoteTrust, NoPlantedSecretReachesAMessageALogOrTheTrace)
{
  kvikio::test::TempDir dir;
  std::string const log = dir.file("log");
  kvikio::test::EnvGuard const env{
    {"KVIKIO_LOG_LEVEL", "debug"}, {"KVIKIO_LOG_FILE", log}, {"KVIKIO_REMOTE_VERBOSE", "1"}};
  std::vector<std::string> const secrets{
    "PLANTEDSECRETc0ffee", "PLANTEDTOKENbeef42", "AKIAPLANTEDKEY000042", "PLANTEDSIGNATUREdead"};
  MisbehavingServer server{1000};
  std::vector<std::string> messages;
  auto const expect_error = [&](std::function<void()> const& call) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (std::exception const& e) {
      messages.emplace_back(e.what());
    }
  };
  ::testing::internal::CaptureStderr();
  for (char const* kind : {"echo", "echo-xml"}) {
    std::string const url = server.url(std::string{kind} + "/bucket/obj");
    auto s3               = [&] {
      return std::make_unique<kvikio::S3Endpoint>(
        url, "us-east-1", secrets[2], secrets[0], secrets[1]);
    };
    expect_error([&] { RemoteHandle handle{s3()}; });  // the size request
    RemoteHandle sized{s3(), 1000};
    std::vector<std::uint8_t> buf(1000, poison);
    expect_error([&] { (void)sized.read(buf.data(), 1000, 0); });
    expect_error([&] { (void)sized.pread(buf.data(), 1000, 0, 300).get(); });
    std::vector<kvikio::RemoteReadRequest> const batch{{&sized, buf.data(), 100, 0},
                                                       {&sized, buf.data() + 200, 100, 250}};
    for (auto& future : kvikio::remote_batch_read(batch)) {
      expect_error([&] { (void)future.get(); });
    }
    EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](auto b) { return b == poison; }));
    std::string const presigned =
      url + "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + secrets[2] +
      "%2F20261207%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Security-Token=" + secrets[1] +
      "&X-Amz-Signature=" + secrets[3];
    expect_error([&] { (void)RemoteHandle::open(presigned); });
  }
  std::string const trace = ::testing::internal::GetCapturedStderr();
  std::ifstream in{log};
  std::stringstream logged;
  logged << in.rdbuf();
  ASSERT_GE(messages.size(), 10U);
  for (auto const& message : messages) {
    EXPECT_NE(message.find("403"), std::string::npos) << message;
  }
  EXPECT_NE(messages[7].find("SignatureDoesNotMatch"), std::string::npos) << messages[7];
  EXPECT_NE(trace.find("x-amz-security-token: <hidden>"), std::string::npos) << trace;
  for (auto const& secret : secrets) {
    for (auto const& message : messages) {
      EXPECT_EQ(message.find(secret), std::string::npos) << message;
    }
    EXPECT_EQ(trace.find(secret), std::string::npos) << trace;
    EXPECT_EQ(logged.str().find(secret), std::string::npos) << logged.str();
  }
}

}  // namespace
