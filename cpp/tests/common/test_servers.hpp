/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/nginx.hpp"

namespace kvikio::test {

/**
 * A test server of cpp/tests/servers (Debian's /usr/bin/python3, standard library only) on a
 * free loopback port, started as `script PORT arg`. It prints "ready" once listening. A server
 * that does not start is an error, never a skip.
 */
class PythonServer {
 public:
  PythonServer(char const* script_name, std::string const& arg) : port_{free_port()}
  {
    int out[2];
    if (::pipe(out) != 0) { throw std::runtime_error("pipe failed"); }
    std::string const script = std::string{KVIKIO_TEST_SERVERS_DIR} + "/" + script_name;
    std::string const port   = std::to_string(port_);
    pid_                     = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::execl("/usr/bin/python3",
              "python3",
              script.c_str(),
              port.c_str(),
              arg.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    pollfd pfd{out[0], POLLIN, 0};
    char buf[16]     = {};
    bool const ready = ::poll(&pfd, 1, 10000) == 1 && ::read(out[0], buf, sizeof(buf) - 1) > 0 &&
                       std::string{buf}.rfind("ready", 0) == 0;
    ::close(out[0]);
    if (!ready) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      throw std::runtime_error("the test server did not start (/usr/bin/python3 " + script + ")");
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
  int port_;
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
};

}  // namespace kvikio::test
