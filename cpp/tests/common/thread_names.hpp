/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The names of this process's threads (/proc/self/task/<tid>/comm), for tests that every thread
 * the library starts is named.
 */
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

// ThreadSanitizer's runtime starts a thread of its own in the process, named as the process.
#if defined(__SANITIZE_THREAD__)
#define KVIKIO_TEST_SANITIZER_THREAD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KVIKIO_TEST_SANITIZER_THREAD 1
#endif
#endif

namespace kvikio::test {

/// The names of every thread but the main one.
inline std::vector<std::string> thread_names()
{
  std::vector<std::string> names;
  std::string const main = std::to_string(::getpid());
  for (auto const& task : std::filesystem::directory_iterator{"/proc/self/task"}) {
    if (task.path().filename() == main) { continue; }
    std::ifstream comm{task.path() / "comm"};
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  return names;
}

/// How many threads have a name beginning with `prefix`.
inline std::size_t threads_named(std::string const& prefix)
{
  auto const names = thread_names();
  return static_cast<std::size_t>(std::count_if(
    names.begin(), names.end(), [&](auto const& n) { return n.rfind(prefix, 0) == 0; }));
}

/**
 * The threads named neither "kvikio-..." (the library's), "cudasim-..." (the simulator's),
 * "cuda..." (the real driver's own) nor "iou-..." (io_uring's workers, which the kernel starts
 * in the process and names).
 * A thread names itself as it starts, so a snapshot may catch one just before: it is taken again
 * until it holds none (or two seconds passed), and a thread that never names itself remains.
 */
inline std::vector<std::string> unnamed_threads()
{
  std::vector<std::string> unnamed;
  for (int attempt = 0; attempt < 200; ++attempt) {
    unnamed.clear();
    for (auto const& name : thread_names()) {
      if (name.rfind("kvikio-", 0) != 0 && name.rfind("cuda", 0) != 0 &&
          name.rfind("iou-", 0) != 0) {
        unnamed.push_back(name);
      }
    }
#ifdef KVIKIO_TEST_SANITIZER_THREAD
    std::string process;
    std::getline(std::ifstream{"/proc/self/comm"}, process);
    if (auto const it = std::find(unnamed.begin(), unnamed.end(), process); it != unnamed.end()) {
      unnamed.erase(it);  // the sanitizer's
    }
#endif
    if (unnamed.empty()) { break; }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return unnamed;
}

}  // namespace kvikio::test
