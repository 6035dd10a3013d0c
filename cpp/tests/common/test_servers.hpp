/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <curl/curl.h>

#include "common/nginx.hpp"

namespace kvikio::test {

/**
 * The Python that runs the test servers: $TEST_SERVER_PYTHON where set (the GPU machine), else
 * the one the build names (KvikIO_TEST_PYTHON: the virtual environment of ci/install-deps.sh).
 * (Not a KVIKIO_* name: the library warns about every KVIKIO_* variable it does not read.)
 */
inline std::string test_python()
{
  char const* env = std::getenv("TEST_SERVER_PYTHON");
  return env != nullptr && *env != '\0' ? env : KVIKIO_TEST_PYTHON;
}

/**
 * A test server of cpp/tests/servers (run by test_python()), started as `script 0 arg`: it binds
 * a free loopback port itself and prints "ready <port>", so no other process can take the port
 * between choosing and binding it. A server that does not start is an error, never a skip.
 */
class PythonServer {
 public:
  PythonServer(char const* script_name, std::string const& arg)
  {
    int out[2];
    if (::pipe(out) != 0) { throw std::runtime_error("pipe failed"); }
    std::string const script = std::string{KVIKIO_TEST_SERVERS_DIR} + "/" + script_name;
    // Made before fork(): the child of a multi-threaded process only execs. A name without a
    // slash ("python3") is looked up on PATH.
    std::string const python = test_python();
    pid_                     = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::execlp(python.c_str(),
               python.c_str(),
               script.c_str(),
               "0",
               arg.c_str(),
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string const line = read_line(out[0]);
    ::close(out[0]);
    if (std::sscanf(line.c_str(), "ready %d", &port_) != 1 || port_ <= 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      throw std::runtime_error("the test server did not start (" + test_python() + " " + script +
                               "; ci/install-deps.sh installs what it imports): it said \"" + line +
                               "\"");
    }
  }
  ~PythonServer()
  {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  PythonServer(PythonServer const&)            = delete;
  PythonServer& operator=(PythonServer const&) = delete;

  [[nodiscard]] std::string url(std::string const& path) const
  {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }

 private:
  // The first line the server prints (it may come in several writes), within 10 s.
  static std::string read_line(int fd)
  {
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string line;
    while (line.find('\n') == std::string::npos) {
      auto const left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      pollfd pfd{fd, POLLIN, 0};
      char buf[64];
      if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) != 1) { break; }
      ssize_t const n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) { break; }
      line.append(buf, static_cast<std::size_t>(n));
    }
    return line.substr(0, line.find('\n'));
  }

  int port_{0};
  pid_t pid_{-1};
};

/// servers/misbehaving_http.py: one object of `size` bytes whose byte i is (i * 7 + 3) % 251.
class MisbehavingServer : public PythonServer {
 public:
  explicit MisbehavingServer(std::size_t size)
    : PythonServer{"misbehaving_http.py", std::to_string(size)}
  {
  }
  [[nodiscard]] static std::uint8_t byte(std::size_t i)
  {
    return static_cast<std::uint8_t>((i * 7 + 3) % 251);
  }
};

/// servers/webhdfs.py serving the files under `root`.
class WebHdfsServer : public PythonServer {
 public:
  explicit WebHdfsServer(std::string const& root) : PythonServer{"webhdfs.py", root} {}
};

/// servers/s3_sigv4.py: objects ROOT/<bucket>/<key>, every signature checked by botocore.
class S3SigV4Server : public PythonServer {
 public:
  explicit S3SigV4Server(std::string const& root) : PythonServer{"s3_sigv4.py", root} {}
  static constexpr char const* access_key = "KVIKIOTESTKEY";
  static constexpr char const* secret     = "kvikio-test-secret";
  static constexpr char const* region     = "us-east-1";

  /// `url` presigned by botocore (`s3_sigv4.py presign`), signed with `signing_secret`.
  [[nodiscard]] static std::string presign(std::string const& url,
                                           std::string const& signing_secret = secret)
  {
    std::string const command = "'" + test_python() + "' '" + std::string{KVIKIO_TEST_SERVERS_DIR} +
                                "/s3_sigv4.py' presign '" + url + "' '" + signing_secret + "'";
    FILE* out = ::popen(command.c_str(), "r");
    if (out == nullptr) { throw std::runtime_error("popen failed: " + command); }
    std::string presigned;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), out) != nullptr) {
      presigned += buf;
    }
    if (::pclose(out) != 0 || presigned.empty()) {
      throw std::runtime_error("presigning failed: " + command);
    }
    while (presigned.back() == '\n') {
      presigned.pop_back();
    }
    return presigned;
  }
};

/**
 * moto's S3 server (servers/moto_s3.py; moto[server] from PyPI, in the virtual environment
 * ci/install-deps.sh makes) on a free loopback port, with one bucket. It speaks the S3 protocol
 * (path-style bucket/key, ranges, error codes and their XML bodies) but does not verify
 * signatures: servers/s3_sigv4.py does that. A missing moto is an error, never a skip.
 */
class MotoS3Server : public PythonServer {
 public:
  static constexpr char const* bucket     = "kvikio-bucket";
  static constexpr char const* access_key = "MOTOTESTKEY";
  static constexpr char const* secret     = "moto-test-secret";
  static constexpr char const* region     = "us-east-1";

  MotoS3Server() : PythonServer{"moto_s3.py", bucket} {}

  /// What AWS_ENDPOINT_URL would say: the server's root.
  [[nodiscard]] std::string endpoint() const
  {
    std::string root = PythonServer::url("");
    root.pop_back();
    return root;
  }
  /// The path-style URL of an object; `encoded_key` is already percent-encoded.
  [[nodiscard]] std::string url(std::string const& encoded_key) const
  {
    return endpoint() + "/" + bucket + "/" + encoded_key;
  }

  /// Stores an object through the S3 protocol: a SigV4-signed PUT made by libcurl.
  void put(std::string const& encoded_key, std::vector<std::uint8_t> const& data) const
  {
    struct Cursor {
      std::vector<std::uint8_t> const* data;
      std::size_t pos;
    } cursor{&data, 0};
    auto const read = +[](char* out, std::size_t size, std::size_t n, void* user) -> std::size_t {
      auto* c             = static_cast<Cursor*>(user);
      std::size_t const k = std::min(size * n, c->data->size() - c->pos);
      std::memcpy(out, c->data->data() + c->pos, k);
      c->pos += k;
      return k;
    };
    CURL* curl           = ::curl_easy_init();
    curl_slist* headers  = ::curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    std::string const to = url(encoded_key);
    std::string const userpwd = std::string{access_key} + ":" + secret;
    ::curl_easy_setopt(curl, CURLOPT_URL, to.c_str());
    ::curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);  // a key with dot segments stays that key
    ::curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    ::curl_easy_setopt(curl, CURLOPT_READFUNCTION, read);
    ::curl_easy_setopt(curl, CURLOPT_READDATA, &cursor);
    ::curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(data.size()));
    std::string const sigv4 = std::string{"aws:amz:"} + region + ":s3";
    ::curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
    ::curl_easy_setopt(curl, CURLOPT_USERPWD, userpwd.c_str());
    ::curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    CURLcode const rc = ::curl_easy_perform(curl);
    long status       = 0;
    ::curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    ::curl_slist_free_all(headers);
    ::curl_easy_cleanup(curl);
    if (rc != CURLE_OK || status != 200) {
      throw std::runtime_error("moto S3 PUT " + to + " failed: " + ::curl_easy_strerror(rc) +
                               ", HTTP " + std::to_string(status));
    }
  }
};

}  // namespace kvikio::test
