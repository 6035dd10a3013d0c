/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "parallel/stream_workers.hpp"

namespace kvikio::test {

/**
 * Keeps every stream-ordered worker busy until release() (or destruction), so that the host
 * part of stream-ordered I/O submitted meanwhile waits. There are at least `threads` workers;
 * a test that starts them with this (one process per test) knows there are exactly that many.
 */
class BusyStreamWorkers {
 public:
  explicit BusyStreamWorkers(std::size_t threads)
  {
    std::size_t const existing = kvikio::detail::stream_worker_count();
    gate_->pieces              = existing > threads ? existing : threads;
    kvikio::detail::run_when_ready(gate_, threads);
    while (gate_->started.load() < gate_->pieces) {
      std::this_thread::yield();
    }
  }
  ~BusyStreamWorkers() { release(); }
  BusyStreamWorkers(BusyStreamWorkers const&)            = delete;
  BusyStreamWorkers& operator=(BusyStreamWorkers const&) = delete;

  /// Lets the workers go and waits until they have.
  void release()
  {
    if (released_) { return; }
    released_ = true;
    open_.set_value();
    while (gate_->ended.load() < gate_->pieces) {
      std::this_thread::yield();
    }
  }

 private:
  // One piece per worker, each waiting for the gate.
  struct Gate final : kvikio::detail::ReadyPieces {
    explicit Gate(std::shared_future<void> open) : open{std::move(open)} {}
    std::optional<std::size_t> claim_ready() noexcept override
    {
      std::size_t const p = claimed.fetch_add(1);
      if (p < pieces) { return p; }
      return std::nullopt;
    }
    bool all_claimed() const noexcept override { return claimed.load() >= pieces; }
    void run(std::size_t) noexcept override
    {
      ++started;
      open.wait();
      ++ended;
    }
    std::shared_future<void> open;
    std::size_t pieces{0};
    std::atomic<std::size_t> claimed{0}, started{0}, ended{0};
  };
  std::promise<void> open_;
  std::shared_ptr<Gate> gate_{std::make_shared<Gate>(open_.get_future().share())};
  bool released_{false};
};

}  // namespace kvikio::test
