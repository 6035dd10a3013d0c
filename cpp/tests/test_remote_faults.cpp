/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * RemoteHandle against a server that misbehaves on purpose (servers/misbehaving_http.py):
 * retries, servers that ignore ranges, cut connections, short bodies, stalls, HTTP errors.
 * Every failure must be a clear error naming the URL, and nothing may be written outside the
 * destination.
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/curl.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/remote_handle.hpp>

#include "common/env_guard.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "common/test_servers.hpp"

using kvikio::RemoteEndpointType;
using kvikio::RemoteHandle;
using kvikio::test::MisbehavingServer;

namespace {

using kvikio::test::poison;
constexpr std::size_t obj_size = 100000;

RemoteHandle handle_for(MisbehavingServer const& server, std::string const& path)
{
  return RemoteHandle::open(server.url(path), RemoteEndpointType::HTTP, std::nullopt, obj_size);
}

std::string error_of(RemoteHandle& handle,
                     std::vector<std::uint8_t>& buf,
                     std::size_t size,
                     std::size_t offset)
{
  try {
    (void)handle.read(buf.data() + 64, size, offset);
  } catch (std::exception const& e) {
    return e.what();
  }
  return "";
}

void expect_guards(std::vector<std::uint8_t> const& buf, std::size_t size)
{
  for (std::size_t i = 0; i < 64; ++i) {
    ASSERT_EQ(buf[i], poison) << "written before the destination";
  }
  for (std::size_t i = 64 + size; i < buf.size(); ++i) {
    ASSERT_EQ(buf[i], poison) << "written after the destination at " << i;
  }
}

class Faults : public ::testing::Test {
 protected:
  // Reads `size` bytes at `offset` of `handle` into the buffer (after its 64-byte guard) and
  // expects the object's bytes there and the guards untouched.
  void expect_read(RemoteHandle& handle, std::size_t size, std::size_t offset)
  {
    ASSERT_EQ(handle.read(buf_.data() + 64, size, offset), size);
    for (std::size_t i = 0; i < size; ++i) {
      ASSERT_EQ(buf_[64 + i], MisbehavingServer::byte(offset + i)) << i;
    }
    expect_guards(buf_, size);
  }
  MisbehavingServer server_{obj_size};
  std::vector<std::uint8_t> buf_ = std::vector<std::uint8_t>(obj_size + 128, poison);
};

TEST_F(Faults, HonestServerForReference)
{
  auto h = handle_for(server_, "ok/x");
  expect_read(h, 5000, 123);
}

TEST_F(Faults, ServerIgnoringRangesIsAnOverflowNotACorruption)
{
  auto h                 = handle_for(server_, "ignore-range/x");
  std::string const what = error_of(h, buf_, 1000, 50);
  EXPECT_NE(what.find("maybe the server doesn't support file ranges?"), std::string::npos) << what;
  expect_guards(buf_, 1000);
  EXPECT_THROW((void)h.read(buf_.data() + 64, 1000, 50), std::overflow_error);
}

TEST_F(Faults, Transient503IsRetried)
{
  kvikio::defaults::set_http_max_attempts(3);
  auto ok = handle_for(server_, "flaky/2/a");
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(ok.read(buf_.data() + 64, 777, 1), 777U);
  // Each retry is announced on stdout in upstream's words, as upstream prints it.
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "KvikIO: Got HTTP code 503. Retrying after 500ms (attempt 1 of 3).\n"
            "KvikIO: Got HTTP code 503. Retrying after 1000ms (attempt 2 of 3).\n");
  EXPECT_EQ(buf_[64], MisbehavingServer::byte(1));
  expect_guards(buf_, 777);
  kvikio::defaults::set_http_max_attempts(2);
  auto gives_up = handle_for(server_, "flaky/2/b");
  ::testing::internal::CaptureStdout();
  std::string what = error_of(gives_up, buf_, 10, 0);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "KvikIO: Got HTTP code 503. Retrying after 500ms (attempt 1 of 2).\n");
  // Upstream's words in one run (what users match on), then the request.
  EXPECT_EQ(what.rfind("KvikIO: HTTP request reached maximum number of attempts (2). Reason: Got "
                       "HTTP code 503. [",
                       0),
            0U)
    << what;
  EXPECT_NE(what.find("flaky/2/b (10 bytes at offset 0)"), std::string::npos) << what;
}

// With a log file, a retry is a warn line of the log that names the request, and nothing goes to
// stdout; back to the default, stdout again.
TEST_F(Faults, RetryNoticesGoToTheLogFileWhenThereIsOne)
{
  kvikio::test::TempDir dir;
  auto const log_path = dir.file("log");
  auto& logger        = kvikio::detail::Logger::instance();
  ASSERT_TRUE(logger.set_file(log_path));
  kvikio::defaults::set_http_max_attempts(3);
  auto h = handle_for(server_, "flaky/1/logged");
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(h.read(buf_.data() + 64, 10, 5), 10U);
  std::string const out = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(logger.set_file(""));
  EXPECT_EQ(out, "");
  std::ifstream in{log_path};
  std::string const log{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  EXPECT_NE(log.find(" warn ["), std::string::npos) << log;
  EXPECT_NE(log.find("KvikIO: Got HTTP code 503. Retrying after 500ms (attempt 1 of 3). [" +
                     server_.url("flaky/1/logged") + " (10 bytes at offset 5)]"),
            std::string::npos)
    << log;
  EXPECT_EQ(buf_[64], MisbehavingServer::byte(5));
  expect_guards(buf_, 10);
}

// An open's size request is retried as a read is, whatever the endpoint type: each answers 503
// once, then the object, which opens with its size and reads right.
TEST_F(Faults, OpenRetriesTheSizeRequestOfEveryEndpointType)
{
  kvikio::test::EnvGuard const aws{{"AWS_DEFAULT_REGION", "us-east-1"},
                                   {"AWS_ACCESS_KEY_ID", "KVIKIOTEST"},
                                   {"AWS_SECRET_ACCESS_KEY", "kvikio-test"},
                                   {"AWS_SESSION_TOKEN", std::nullopt},
                                   {"AWS_ENDPOINT_URL", std::nullopt}};
  kvikio::defaults::set_http_max_attempts(2);
  std::vector<std::pair<RemoteEndpointType, std::string>> const cases{
    {RemoteEndpointType::HTTP, server_.url("flaky/1/http")},
    {RemoteEndpointType::S3, server_.url("flaky/1/s3")},
    {RemoteEndpointType::S3_PUBLIC, server_.url("flaky/1/s3-public")},
    {RemoteEndpointType::S3_PRESIGNED_URL,
     server_.url("flaky/1/presigned") + "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00"},
    {RemoteEndpointType::WEBHDFS, server_.url("webhdfs/v1/flaky/1/hdfs")}};
  for (auto const& [type, url] : cases) {
    ::testing::internal::CaptureStdout();
    std::optional<RemoteHandle> h;
    try {
      h.emplace(RemoteHandle::open(url, type));
    } catch (std::exception const& e) {
      ::testing::internal::GetCapturedStdout();
      ADD_FAILURE() << url << ": " << e.what();
      continue;
    }
    EXPECT_EQ(::testing::internal::GetCapturedStdout(),
              "KvikIO: Got HTTP code 503. Retrying after 500ms (attempt 1 of 2).\n")
      << url;
    EXPECT_EQ(h->nbytes(), obj_size) << url;
    std::fill(buf_.begin(), buf_.end(), poison);
    ASSERT_EQ(h->read(buf_.data() + 64, 999, 77), 999U) << url;
    for (std::size_t i = 0; i < 999; ++i) {
      ASSERT_EQ(buf_[64 + i], MisbehavingServer::byte(77 + i)) << url << " at " << i;
    }
    expect_guards(buf_, 999);
  }
}

// An open whose size request keeps failing gives up after the attempts, in upstream's words; a
// status that is not retried fails at once.
TEST_F(Faults, OpenGivesUpAfterTheAttempts)
{
  kvikio::defaults::set_http_max_attempts(2);
  for (auto const& [type, path] : std::vector<std::pair<RemoteEndpointType, std::string>>{
         {RemoteEndpointType::HTTP, "flaky/5/http"},
         {RemoteEndpointType::WEBHDFS, "webhdfs/v1/flaky/5/hdfs"}}) {
    ::testing::internal::CaptureStdout();
    std::string what;
    try {
      (void)RemoteHandle::open(server_.url(path), type);
    } catch (std::runtime_error const& e) {
      what = e.what();
    }
    EXPECT_EQ(::testing::internal::GetCapturedStdout(),
              "KvikIO: Got HTTP code 503. Retrying after 500ms (attempt 1 of 2).\n");
    EXPECT_EQ(what.rfind("KvikIO: HTTP request reached maximum number of attempts (2). Reason: "
                         "Got HTTP code 503. [",
                         0),
              0U)
      << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
  }
  ::testing::internal::CaptureStdout();
  std::string what;
  try {
    (void)RemoteHandle::open(server_.url("404/x"), RemoteEndpointType::HTTP);
  } catch (std::runtime_error const& e) {
    what = e.what();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(
    what.rfind("curl_easy_perform() error (The requested URL returned error: 404) [KvikIO: size "
               "request to ",
               0),
    0U)
    << what;
  EXPECT_NE(what.find("404/x: HTTP 404]"), std::string::npos) << what;
}

TEST_F(Faults, CutConnectionAndShortBody)
{
  for (auto path : {"reset/x", "short/x"}) {
    auto h           = handle_for(server_, path);
    std::string what = error_of(h, buf_, 20000, 0);
    EXPECT_FALSE(what.empty()) << path << " was accepted";
    EXPECT_NE(what.find(path), std::string::npos) << what;
    expect_guards(buf_, 20000);
  }
}

// An HTTP endpoint follows a redirect; a loop of them ends after libcurl's limit, reported as
// such, not after thousands of requests.
TEST_F(Faults, RedirectsAreFollowedAndALoopEnds)
{
  auto followed = handle_for(server_, "redirect/x");
  expect_read(followed, 3000, 5);
  std::fill(buf_.begin(), buf_.end(), poison);
  auto loop        = handle_for(server_, "redirect-loop/x");
  std::string what = error_of(loop, buf_, 100, 0);
  EXPECT_NE(what.find("redirects"), std::string::npos) << what;
  expect_guards(buf_, 0);
}

// A signed S3 request is not followed to a redirect's target (where its session token, a header
// of ours, would go whatever the origin): the redirect is the answer, and an error.
TEST_F(Faults, SignedS3RequestsDoNotFollowRedirects)
{
  RemoteHandle h{
    std::make_unique<kvikio::S3Endpoint>(
      server_.url("redirect/s3"), "us-east-1", "KVIKIOTEST", "kvikio-test", "a-session-token"),
    obj_size};
  std::string const what = error_of(h, buf_, 100, 0);
  EXPECT_NE(what.find("307"), std::string::npos) << what;
  EXPECT_EQ(what.find("a-session-token"), std::string::npos) << what;
  expect_guards(buf_, 0);
}

// A one-byte range answered with the whole object: refused before a byte is written.
TEST_F(Faults, WholeObjectAs206IsRefused)
{
  for (std::size_t offset : {std::size_t{0}, std::size_t{5}}) {
    auto h           = handle_for(server_, "whole-as-206/x");
    std::string what = error_of(h, buf_, 1, offset);
    EXPECT_NE(what.find("Content-Range"), std::string::npos) << what;
    expect_guards(buf_, 0);
  }
}

TEST_F(Faults, WrongContentRangeIsRefused)
{
  auto h           = handle_for(server_, "wrong-range/x");
  std::string what = error_of(h, buf_, 1000, 10);
  EXPECT_NE(what.find("Content-Range"), std::string::npos) << what;
  EXPECT_NE(what.find("bytes 11-1010"), std::string::npos) << what;
  expect_guards(buf_, 0);  // refused before a byte was written: the whole buffer is untouched
}

// The object changed size after the handle was opened (the answer's total differs from the
// open's): refused before a byte is written, saying so, on either transport.
TEST_F(Faults, AnObjectThatChangedSizeIsRefused)
{
  // Opened without a size: the server's answer at the open is the size every range must name.
  auto h           = RemoteHandle::open(server_.url("resized/x"), RemoteEndpointType::HTTP);
  std::string what = error_of(h, buf_, 1000, 10);
  EXPECT_NE(what.find("changed size"), std::string::npos) << what;
  expect_guards(buf_, 0);
}

// The object was replaced by another of the same size after the handle was opened (its ETag
// differs from the open's): refused before a byte is written, saying so, on both transports.
TEST_F(Faults, AnObjectReplacedBySameSizeIsRefused)
{
  for (auto backend :
       {kvikio::RemoteBackendType::LIBCURL_EASY, kvikio::RemoteBackendType::LIBCURL_MULTI_POLL}) {
    auto h = RemoteHandle::open(server_.url("rewritten/x"), RemoteEndpointType::HTTP);
    h.set_remote_backend(backend);
    std::string what;
    try {
      (void)h.pread(buf_.data() + 64, 1000, 10).get();
    } catch (std::exception const& e) {
      what = e.what();
    }
    EXPECT_NE(what.find("ETag \"v2\""), std::string::npos) << what;
    EXPECT_NE(what.find("\"v1\" when the handle was opened was replaced"), std::string::npos)
      << what;
    expect_guards(buf_, 0);
  }
}

// A handle opened with the caller's size never asked the server for a version: any is read.
TEST_F(Faults, AGivenSizeAcceptsAnyVersion)
{
  auto h = handle_for(server_, "rewritten/x");
  ASSERT_EQ(h.read(buf_.data() + 64, 100, 10), 100U);
  EXPECT_EQ(buf_[64], static_cast<std::uint8_t>(255 - MisbehavingServer::byte(10)));
}

// The same version, its tag weakened by the server on one answer, and a redirect's own tag
// (the target's counts): read as usual.
TEST_F(Faults, AWeakTagAndARedirectsTagAreTheSameVersion)
{
  for (char const* path : {"weak-tag/x", "redirect/x"}) {
    auto h = RemoteHandle::open(server_.url(path), RemoteEndpointType::HTTP);
    EXPECT_EQ(h.nbytes(), obj_size) << path;
    expect_read(h, 3000, 7);
  }
}

// Takes every descriptor the process may still open: the soft RLIMIT_NOFILE is lowered to a
// little above the descriptors open now, and /dev/null is opened until that runs out. Undone
// when destroyed.
class DescriptorsExhausted {
 public:
  DescriptorsExhausted()
  {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    int const probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ::close(probe);
    rlimit lowered   = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(probe) + 16;
    ::setrlimit(RLIMIT_NOFILE, &lowered);
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
      held_.push_back(fd);
    }
    errno_ = errno;
  }
  ~DescriptorsExhausted()
  {
    for (int fd : held_) {
      ::close(fd);
    }
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  DescriptorsExhausted(DescriptorsExhausted const&)            = delete;
  DescriptorsExhausted& operator=(DescriptorsExhausted const&) = delete;
  [[nodiscard]] int last_errno() const noexcept { return errno_; }

 private:
  rlimit saved_{};
  std::vector<int> held_;
  int errno_{0};
};

// Under a low `ulimit -n` the connections the library keeps idle for reuse are what stands
// between a new request and its socket: a connect that finds no descriptor closes them and
// tries again (the size request of an open and a ranged read alike).
TEST_F(Faults, IdleConnectionsMakeRoomWhenDescriptorsRunOut)
{
  MisbehavingServer other{obj_size};
  {
    // The transport set up (a multi-poll reactor makes its own descriptors when it starts).
    auto warm = handle_for(server_, "ok/w");
    expect_read(warm, 100, 0);
  }
  kvikio::LibCurl::instance().release_idle_handles();
  {
    // Three handles at once, each left idle with its connection to server_ (as the threads of
    // a pool leave theirs).
    std::vector<std::unique_ptr<kvikio::CurlHandle>> handles;
    std::string const url = server_.url("ok/x");
    for (int i = 0; i < 3; ++i) {
      auto& curl = handles.emplace_back(std::make_unique<kvikio::CurlHandle>());
      curl->setopt(CURLOPT_URL, url.c_str());
      curl->setopt(CURLOPT_NOBODY, 1L);
      curl->perform();
    }
  }
  DescriptorsExhausted exhausted;
  ASSERT_EQ(exhausted.last_errno(), EMFILE);
  // Another origin: no idle connection can be reused, a socket is needed.
  auto h = RemoteHandle::open(other.url("ok/y"), RemoteEndpointType::HTTP);
  EXPECT_EQ(h.nbytes(), obj_size);
  expect_read(h, 3000, 11);
}

// With nothing idle to close, the error says a descriptor was missing and what the limit is
// (libcurl's own words name only the connect).
TEST_F(Faults, NoDescriptorLeftIsSaidSo)
{
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "UndefinedBehaviorSanitizer (built with ASan) needs descriptors of its own "
                  "while none is left: its vptr check probes memory through a pipe (seen "
                  "reporting a false error and hanging); the Release and TSan builds run it";
#endif
  kvikio::LibCurl::instance().release_idle_handles();
  DescriptorsExhausted exhausted;
  ASSERT_EQ(exhausted.last_errno(), EMFILE);
  std::string what;
  try {
    (void)RemoteHandle::open(server_.url("ok/z"), RemoteEndpointType::HTTP);
  } catch (std::exception const& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("Too many open files"), std::string::npos) << what;
  EXPECT_NE(what.find("(RLIMIT_NOFILE, ulimit -n)"), std::string::npos) << what;
}

// A server that does not know the total ("bytes first-last/*") is believed for its range.
TEST_F(Faults, AnUnknownTotalIsAccepted)
{
  auto h = handle_for(server_, "unknown-total/x");
  expect_read(h, 3000, 7);
}

TEST_F(Faults, StallHitsTheTimeout)
{
  kvikio::defaults::set_http_timeout(1);
  kvikio::defaults::set_http_max_attempts(1);
  auto h           = handle_for(server_, "stall/x");
  auto const start = std::chrono::steady_clock::now();
  std::string what = error_of(h, buf_, 100, 0);
  EXPECT_NE(what.find("stall/x"), std::string::npos) << what;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));  // no hang
}

// A handle destroyed while its reads wait on a stalled server (headers, then nothing for 30 s,
// under a 60 s HTTP timeout and 3 attempts) does not wait the stall out: the destructor waits
// for reads only while bytes arrive, so these end with an error that says the handle was closed,
// and the server's other objects still read whole.
TEST_F(Faults, HandleDestroyedUnderStalledReadsEndsThem)
{
  kvikio::defaults::set_http_timeout(60);
  kvikio::defaults::set_http_max_attempts(3);
  kvikio::defaults::set_thread_pool_nthreads(2);
  std::vector<std::uint8_t> stalled_buf(4000, poison);
  std::future<std::size_t> stalled;
  std::chrono::steady_clock::time_point closing;
  {
    auto h  = handle_for(server_, "stall/d");
    stalled = h.pread(stalled_buf.data(), stalled_buf.size(), 0, 1000);  // 4 chunks
    std::this_thread::sleep_for(std::chrono::milliseconds(300));         // the requests are out
    closing = std::chrono::steady_clock::now();
  }
  // About a second (a stalled attempt is cut after a second of nothing once its handle closes);
  // waiting out the HTTP timeout would take 60 s.
  EXPECT_LT(std::chrono::steady_clock::now() - closing, std::chrono::seconds(20))
    << "destroying the handle waited for its stalled reads' timeout";
  // The destructor returns once no read uses the handle; the future is made ready a moment
  // later by the thread that ended the last chunk.
  ASSERT_EQ(stalled.wait_for(std::chrono::seconds(10)), std::future_status::ready)
    << "the reads were not cut when their handle was destroyed";
  try {
    (void)stalled.get();
    FAIL() << "a read cut by the destruction of its handle succeeded";
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find("closed"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("stall/d"), std::string::npos) << e.what();
  }
  auto ok = handle_for(server_, "ok/d");
  ASSERT_EQ(ok.read(buf_.data() + 64, obj_size, 0), obj_size);
  for (std::size_t j = 0; j < obj_size; ++j) {
    ASSERT_EQ(buf_[64 + j], MisbehavingServer::byte(j)) << "at " << j;
  }
  expect_guards(buf_, obj_size);
}

TEST_F(Faults, HttpErrorsNameStatusAndUrl)
{
  for (auto status : {"404", "403"}) {
    auto h           = handle_for(server_, std::string{status} + "/x");
    std::string what = error_of(h, buf_, 10, 0);
    EXPECT_NE(what.find(std::string{"HTTP "} + status), std::string::npos) << what;
    EXPECT_NE(what.find(server_.url(std::string{status} + "/x")), std::string::npos) << what;
  }
  EXPECT_THROW(RemoteHandle::open(server_.url("404/y")), std::runtime_error);  // the size request
}

}  // namespace
