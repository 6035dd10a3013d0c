/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * remote/request_fields: the rules every caller string meets before it becomes part of a
 * request, and the endpoints that apply them (checked before any request is built). What a
 * server then receives is test_remote_trust.cpp.
 */
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/env_guard.hpp"
#include "remote/request_fields.hpp"

namespace {

using kvikio::detail::check_header_value;
using kvikio::detail::checked_s3_bucket;
using kvikio::detail::query_parameter;
using kvikio::detail::s3_key_path;

std::string const nul{"a\0b", 3};

TEST(RequestFields, HeaderValuesRefuseLineBreaksAndNulWithoutShowingThem)
{
  EXPECT_NO_THROW(check_header_value("token", "IQoJb3JpZ2luX2VjE/+=="));
  for (std::string const& bad : {std::string{"SECRET\r\nX-Injected: 1"},
                                 std::string{"SECRET\n"},
                                 std::string{"\rSECRET"},
                                 "SECRET" + nul}) {
    try {
      check_header_value("the token", bad);
      FAIL() << "accepted";
    } catch (std::invalid_argument const& e) {
      std::string const what = e.what();
      EXPECT_NE(what.find("the token"), std::string::npos) << what;
      EXPECT_EQ(what.find("SECRET"), std::string::npos) << what;
    }
  }
  kvikio::CurlHandle curl;
  EXPECT_THROW(curl.append_header("x-amz-meta: a\r\nHost: elsewhere"), std::invalid_argument);
}

TEST(RequestFields, BucketNamesFollowS3sRules)
{
  for (char const* good : {"b", "my-bucket", "my.bucket.1", "Legacy_Bucket", "a1"}) {
    EXPECT_EQ(checked_s3_bucket(good), good);
  }
  for (std::string const& bad : std::vector<std::string>{"",
                                                         "other/../plain",
                                                         "plain?list-type=2&x=",
                                                         "plain#",
                                                         "..",
                                                         ".",
                                                         "a..b",
                                                         "-a",
                                                         "a-",
                                                         "a b",
                                                         "a%2Fb",
                                                         std::string(64, 'a')}) {
    EXPECT_THROW((void)checked_s3_bucket(bad), std::invalid_argument) << bad;
  }
}

TEST(RequestFields, KeysKeepDotSegmentsAndEncodeTheRest)
{
  EXPECT_EQ(s3_key_path("dir/../escape"), "dir/../escape");
  EXPECT_EQ(s3_key_path("./a"), "./a");
  EXPECT_EQ(s3_key_path("a b+c?d#e%f"), "a%20b%2Bc%3Fd%23e%25f");
  for (std::string const& bad : {std::string{}, std::string{"a\r\nb"}, std::string{"a\n"}, nul}) {
    EXPECT_THROW((void)s3_key_path(bad), std::invalid_argument);
  }
}

TEST(RequestFields, QueryParametersAreDecodedOnceAndMatchedWhole)
{
  EXPECT_EQ(query_parameter("op=OPEN&user.name=al%40ice", "user.name"), "al@ice");
  EXPECT_EQ(query_parameter("xuser.name=mallory&user.name=bob", "user.name"), "bob");
  EXPECT_EQ(query_parameter("xuser.name=mallory", "user.name"), std::nullopt);
  EXPECT_EQ(query_parameter("user.name=a+b", "user.name"), "a b");
  EXPECT_EQ(query_parameter("user.name=", "user.name"), "");
  for (char const* bad :
       {"user.name=%4", "user.name=%zz", "user.name=%0D%0Aevil", "user.name=a%00"}) {
    EXPECT_THROW((void)query_parameter(bad, "user.name"), std::invalid_argument) << bad;
  }
}

// Every credential, given or from the environment, is checked when the endpoint is made.
TEST(RequestFields, S3CredentialsWithLineBreaksAreRefusedByTheEndpoint)
{
  std::string const url = "http://127.0.0.1:9/bucket/key";
  std::string const crlf{"tok\r\nX-Injected: 1"};
  EXPECT_THROW(kvikio::S3Endpoint(url, "us-east-1", "key", "secret", crlf), std::invalid_argument);
  EXPECT_THROW(kvikio::S3Endpoint(url, "us-east-1", "key\r\nX: 1", "secret"),
               std::invalid_argument);
  EXPECT_THROW(kvikio::S3Endpoint(url, "us-east-1", "key", "sec" + nul), std::invalid_argument);
  kvikio::test::EnvGuard const env{{"AWS_DEFAULT_REGION", "us-east-1"},
                                   {"AWS_ACCESS_KEY_ID", "key"},
                                   {"AWS_SECRET_ACCESS_KEY", "secret"},
                                   {"AWS_SESSION_TOKEN", "tok\nX-Injected: 1"}};
  EXPECT_THROW(kvikio::S3Endpoint{url}, std::invalid_argument);
  EXPECT_THROW(kvikio::RemoteHandle::open("s3://bucket/key"), std::invalid_argument);
}

TEST(RequestFields, S3BucketsAndKeysAreCheckedWithAnEndpointUrlToo)
{
  std::string const endpoint = "http://127.0.0.1:9";
  for (std::string const bucket : {"other/../plain", "plain?list-type=2&x=", "plain#"}) {
    EXPECT_THROW(
      (void)kvikio::S3Endpoint::url_from_bucket_and_object(bucket, "key", "us-east-1", endpoint),
      std::invalid_argument)
      << bucket;
  }
  EXPECT_EQ(
    kvikio::S3Endpoint::url_from_bucket_and_object("plain", "dir/../key", "us-east-1", endpoint),
    endpoint + "/plain/dir/../key");
  EXPECT_THROW(
    (void)kvikio::S3Endpoint::url_from_bucket_and_object("plain", "a\r\nb", "us-east-1", endpoint),
    std::invalid_argument);
}

TEST(RequestFields, WebHdfsHostsAndPortsCannotNameAnotherPath)
{
  EXPECT_EQ(kvikio::detail::webhdfs_url("127.0.0.1", "9870", "/a/b c"),
            "http://127.0.0.1:9870/webhdfs/v1/a/b%20c");
  EXPECT_EQ(kvikio::detail::webhdfs_url("[::1]", "9870", "f"), "http://[::1]:9870/webhdfs/v1/f");
  for (auto const& [host, port] :
       std::vector<std::pair<std::string, std::string>>{{"nn:9870/webhdfs/v1/other#", "1"},
                                                        {"nn?x=", "9870"},
                                                        {"user@nn", "9870"},
                                                        {"nn", "98a"},
                                                        {"nn", "99999"},
                                                        {"nn", "0"},
                                                        {"", "9870"}}) {
    EXPECT_THROW(kvikio::WebHdfsEndpoint(host, port, "x"), std::invalid_argument) << host << port;
  }
}

TEST(RequestFields, WebHdfsUserNamesAreCheckedToo)
{
  EXPECT_THROW(kvikio::WebHdfsEndpoint("http://127.0.0.1:9/webhdfs/v1/f", "bob\r\nX: 1"),
               std::invalid_argument);
  EXPECT_THROW(kvikio::WebHdfsEndpoint("http://127.0.0.1:9/webhdfs/v1/f?user.name=a%0Ab"),
               std::invalid_argument);
}

}  // namespace
