/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace kvikio::test {

/**
 * Runs one (disabled) test of this very binary in a new process, with `env` added to the
 * environment; descriptors without FD_CLOEXEC are inherited. Returns its exit status (128 if
 * it did not exit).
 */
inline int run_child_test(std::string const& test, std::vector<std::string> env)
{
  // Everything is prepared before fork(): between fork and exec a child of a multithreaded
  // process may only make async-signal-safe calls (no malloc, no setenv).
  std::vector<char*> envp;
  for (auto& e : env) {
    envp.push_back(e.data());
  }
  for (char** e = environ; *e != nullptr; ++e) {
    envp.push_back(*e);
  }
  envp.push_back(nullptr);
  std::string filter   = "--gtest_filter=*" + test;
  std::string disabled = "--gtest_also_run_disabled_tests";
  std::string name     = "child";
  char* argv[]         = {name.data(), filter.data(), disabled.data(), nullptr};
  pid_t const pid      = ::fork();
  if (pid == 0) {
    ::execve("/proc/self/exe", argv, envp.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace kvikio::test
