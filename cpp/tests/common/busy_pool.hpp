/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <future>

#include <kvikio/defaults.hpp>

namespace kvikio::test {

/**
 * Keeps one thread of the global thread pool busy until release() (or destruction), so that
 * tasks submitted meanwhile wait: with a one-thread pool, nothing submitted runs before then.
 */
class BusyPool {
 public:
  BusyPool()
    : busy_{kvikio::defaults::thread_pool().submit_task(
        [gate = gate_.get_future().share()] { gate.wait(); })}
  {
  }
  ~BusyPool() { release(); }
  BusyPool(BusyPool const&)            = delete;
  BusyPool& operator=(BusyPool const&) = delete;

  /// Lets the busy thread go and waits until it has.
  void release()
  {
    if (released_) { return; }
    released_ = true;
    gate_.set_value();
    busy_.get();
  }

 private:
  std::promise<void> gate_;
  std::future<void> busy_;
  bool released_{false};
};

}  // namespace kvikio::test
