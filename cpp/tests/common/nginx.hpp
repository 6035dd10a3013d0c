/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/temp_dir.hpp"

namespace kvikio::test {

/// A free loopback TCP port (bound, read, released: another process could take it in between).
inline int free_port()
{
  int const s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family      = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port        = 0;
  socklen_t len        = sizeof(addr);
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("free_port: cannot bind a loopback socket");
  }
  ::close(s);
  return ntohs(addr.sin_port);
}

/**
 * Waits until a child process `pid` accepts connections on loopback `port`: at most 10 s, failing
 * early when the child exits. `what` names the server in the error.
 */
inline void wait_until_listening(int port, pid_t pid, std::string const& what)
{
  auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int const s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port        = htons(static_cast<std::uint16_t>(port));
    bool const up        = ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(s);
    if (up) { return; }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      throw std::runtime_error(what + " exited at start");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error(what + " did not listen on port " + std::to_string(port) +
                           " within 10 s");
}

/**
 * Real nginx (Debian's /usr/sbin/nginx) serving a temporary directory on a free loopback port,
 * for the life of the object. A missing nginx is an error, never a skip.
 */
class Nginx {
 public:
  // The free port is only free when asked: another test's server may bind it first, and then
  // nginx exits (address in use) while that server answers in its place. So nginx counts as up
  // once its pid file (written after it bound and listens on its port) names it; else it starts
  // again on another port.
  /// `http_directives`: more of nginx's `http` block, e.g. "keepalive_timeout 0;".
  explicit Nginx(std::string http_directives = {}) : http_directives_{std::move(http_directives)}
  {
    if (::access(binary, X_OK) != 0) {
      throw std::runtime_error(std::string{binary} +
                               " is missing: ci/install-deps.sh installs nginx-light");
    }
    std::filesystem::create_directories(root());
    for (int attempt = 1;; ++attempt) {
      port_ = free_port();
      start();
      if (bound()) { return; }
      stop();
      if (attempt == 5) {
        throw std::runtime_error("nginx could not bind a free port five times (see " +
                                 dir_.file("error.log") + ")");
      }
    }
  }
  ~Nginx() { stop(); }
  Nginx(Nginx const&)            = delete;
  Nginx& operator=(Nginx const&) = delete;

  [[nodiscard]] std::string root() const { return dir_.file("www"); }
  [[nodiscard]] std::string url(std::string const& name) const
  {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + name;
  }

 private:
  static constexpr char const* binary = "/usr/sbin/nginx";

  void start()
  {
    std::string const conf = dir_.file("nginx.conf");
    std::ofstream{conf}
      << (::geteuid() == 0 ? "user root;\n" : "") << "daemon off;\nworker_processes 2;\npid "
      << dir_.file("nginx.pid") << ";\nerror_log " << dir_.file("error.log")
      << ";\nevents {}\nhttp {\n  access_log off;\n  sendfile on;\n  client_body_temp_path "
      << dir_.file("tmp") << ";\n  proxy_temp_path " << dir_.file("tmp")
      << ";\n  fastcgi_temp_path " << dir_.file("tmp") << ";\n  uwsgi_temp_path "
      << dir_.file("tmp") << ";\n  scgi_temp_path " << dir_.file("tmp") << ";\n  "
      << http_directives_ << "\n  server {\n    listen 127.0.0.1:" << port_ << ";\n    root "
      << root() << ";\n  }\n}\n";
    std::filesystem::remove(dir_.file("nginx.pid"));
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl(binary,
              binary,
              "-c",
              conf.c_str(),
              "-p",
              dir_.file("").c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }

  // Whether nginx listens on its port: its pid file names it (within 10 s); false once it exited.
  bool bound()
  {
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      pid_t written = 0;
      if ((std::ifstream{dir_.file("nginx.pid")} >> written) && written == pid_) { return true; }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("nginx did not start within 10 s (see " + dir_.file("error.log") +
                             ")");
  }

  void stop() noexcept
  {
    if (pid_ <= 0) { return; }
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  TempDir dir_;
  std::string http_directives_;
  int port_{0};
  pid_t pid_{-1};
};

}  // namespace kvikio::test
