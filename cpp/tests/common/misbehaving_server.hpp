/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "common/nginx.hpp"

namespace kvikio::test {

/**
 * cpp/tests/servers/misbehaving_http.py (Debian's /usr/bin/python3, standard library only) on
 * a free loopback port, serving one object of `size` bytes whose byte i is (i * 7 + 3) % 251.
 */
class MisbehavingServer {
 public:
  explicit MisbehavingServer(std::size_t size) : port_{free_port()}
  {
    int out[2];
    if (::pipe(out) != 0) { throw std::runtime_error("pipe failed"); }
    std::string const script = std::string{KVIKIO_TEST_SERVERS_DIR} + "/misbehaving_http.py";
    std::string const port   = std::to_string(port_);
    std::string const bytes  = std::to_string(size);
    pid_                     = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::execl("/usr/bin/python3",
              "python3",
              script.c_str(),
              port.c_str(),
              bytes.c_str(),
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
      throw std::runtime_error("the misbehaving HTTP server did not start (/usr/bin/python3 " +
                               script + ")");
    }
  }
  ~MisbehavingServer()
  {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  MisbehavingServer(MisbehavingServer const&)            = delete;
  MisbehavingServer& operator=(MisbehavingServer const&) = delete;

  [[nodiscard]] std::string url(std::string const& path) const
  {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }
  [[nodiscard]] static std::uint8_t byte(std::size_t i)
  {
    return static_cast<std::uint8_t>((i * 7 + 3) % 251);
  }

 private:
  int port_;
  pid_t pid_{-1};
};

}  // namespace kvikio::test
