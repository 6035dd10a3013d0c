/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * remote/message_redaction: what a server's answer or a URL may leave in a message. The remote
 * suites' scan for planted secrets is test_remote_trust.cpp.
 */
#include <string>

#include <gtest/gtest.h>

#include "remote/message_redaction.hpp"

namespace {

using kvikio::detail::error_body_for_message;
using kvikio::detail::redact;

void expect_hidden(std::string const& text, std::string const& secret)
{
  std::string const shown = redact(text);
  EXPECT_EQ(shown.find(secret), std::string::npos) << shown;
  EXPECT_NE(shown.find("<hidden>"), std::string::npos) << shown;
}

TEST(MessageRedaction, SecretsInEveryFormAreHidden)
{
  expect_hidden("GET /b/k?X-Amz-Signature=SIG123&X-Amz-Date=1 HTTP/1.1", "SIG123");
  expect_hidden("https://h/b/k?X-Amz-Security-Token=TOK456", "TOK456");
  expect_hidden("x-amz-security-token: TOK456\r\nhost: h", "TOK456");
  expect_hidden("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/2026 Sig", "Sig");
  expect_hidden("key AKIAIOSFODNN7EXAMPLE in text", "AKIAIOSFODNN7EXAMPLE");
  expect_hidden(R"({"Token": "TOK456", "x": 1})", "TOK456");
  expect_hidden("<SessionToken>TOK456</SessionToken>", "TOK456");
  expect_hidden("<CanonicalRequest>GET /\nx-amz-security-token:TOK</CanonicalRequest>", "TOK");
  expect_hidden("password=PW789;", "PW789");
}

TEST(MessageRedaction, OrdinaryTextIsKept)
{
  for (std::string const text :
       {"The request signature we calculated does not match the signature you provided.",
        "SignatureDoesNotMatch",
        "size request to http://127.0.0.1:80/b/k: HTTP 404",
        "bytes 0-99/1000",
        "NoSuchKey: The specified key does not exist."}) {
    EXPECT_EQ(redact(text), text);
  }
}

TEST(MessageRedaction, ErrorBodiesShowS3sCodeAndMessageOnly)
{
  EXPECT_EQ(error_body_for_message(
              "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>The "
              "request signature we calculated does not match.</Message><CanonicalRequest>GET "
              "/\nx-amz-security-token:TOK</CanonicalRequest><StringToSign>S</StringToSign>"
              "</Error>"),
            "SignatureDoesNotMatch: The request signature we calculated does not match.");
  EXPECT_EQ(error_body_for_message("busy"), "busy");
  EXPECT_EQ(error_body_for_message(""), "");
  EXPECT_EQ(error_body_for_message("first line\r\nx-amz-security-token: TOK"), "first line");
  EXPECT_EQ(error_body_for_message(std::string(1000, 'x')).size(), 200U);
  EXPECT_EQ(error_body_for_message(std::string{"a\x01"
                                               "b\x7f"}),
            "a?b?");
}

}  // namespace
