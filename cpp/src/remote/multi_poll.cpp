/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "remote/multi_poll.hpp"

#include <pthread.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>

#include "remote/pread_chunks.hpp"
#include "remote/reactor.hpp"

namespace kvikio::detail {

using multi_poll::PreadCompletion;
using multi_poll::shut_down_error;
using multi_poll::Transfer;

namespace {
// The transport while it exists, for the fork handlers (registered once, as it is made).
MultiPollTransport* live_transport{nullptr};
}  // namespace

MultiPollTransport& MultiPollTransport::instance()
{
  // Destroyed at exit, before the settings and pools it uses (they are created before it).
  static MultiPollTransport transport;
  return transport;
}

MultiPollTransport::MultiPollTransport() : shared_{std::make_shared<SharedChunks>()}
{
  live_transport = this;
  // Around fork() the lock is held, so the child finds the reactors' list whole; the child leaves
  // its parent's reactors behind (their threads do not exist there, their connections are the
  // parent's) and starts its own with its first read.
  static bool const fork_handlers_registered = [] {
    ::pthread_atfork(
      [] {
        if (live_transport != nullptr) { live_transport->mutex_.lock(); }
      },
      [] {
        if (live_transport != nullptr) { live_transport->mutex_.unlock(); }
      },
      [] {
        if (live_transport == nullptr) { return; }
        for (auto& reactor : live_transport->reactors_) {
          (void)reactor.release();  // never stopped or freed here: the parent's
        }
        live_transport->reactors_.clear();
        // The parent's reactors may hold the chunks' lock: the child leaves them alone too.
        new std::shared_ptr<SharedChunks>(std::move(live_transport->shared_));
        live_transport->shared_ = std::make_shared<SharedChunks>();
        live_transport->mutex_.unlock();
      });
    return true;
  }();
  (void)fork_handlers_registered;
}

MultiPollTransport::~MultiPollTransport()
{
  shutdown();
  live_transport = nullptr;
}

void MultiPollTransport::shutdown() noexcept
{
  // The shared chunks go with the reactors that take them: a pread after this point starts new
  // reactors with a queue of their own, which this shutdown never fails.
  std::vector<std::unique_ptr<Reactor>> reactors;
  std::shared_ptr<SharedChunks> shared;
  {
    std::lock_guard const lock{mutex_};
    reactors.swap(reactors_);
    shared = std::exchange(shared_, std::make_shared<SharedChunks>());
  }
  shared->fail_all(shut_down_error());  // first: the stopping reactors start none of them
  for (auto& r : reactors) {
    r->stop();
  }
}

std::size_t MultiPollTransport::num_reactors() const
{
  std::lock_guard const lock{mutex_};
  return reactors_.size();
}

std::future<std::size_t> MultiPollTransport::pread(
  RemoteEndpoint& endpoint,
  std::size_t object_size,
  Destination const& to,
  std::shared_ptr<void> lease,
  std::shared_ptr<LogicalObservationRecorder> recorder)
{
  std::byte* const buf           = to.buf;
  std::size_t const size         = to.size;
  std::size_t const file_offset  = to.file_offset;
  std::size_t const task_size    = to.task_size;
  CUcontext const device_context = to.device_context;
  KVIKIO_NVTX_FUNC_RANGE();
  std::size_t const chunks = (size + task_size - 1) / task_size;
  auto completion =
    std::make_shared<PreadCompletion>(chunks, size, std::move(lease), std::move(recorder));
  auto future                  = completion->future();
  std::size_t const n_reactors = defaults::remote_io_num_reactors();
  std::size_t const total      = defaults::remote_io_max_concurrent_requests();
  std::size_t const max_in_flight =
    total > 0 ? std::max<std::size_t>(total / n_reactors, 1) : defaults::remote_max_connections();
  // PER_PREAD keeps the chunks of this pread on one reactor (its connections are reused).
  bool const per_pread = defaults::remote_io_reactor_dispatch() == RemoteReactorDispatch::PER_PREAD;

  std::vector<std::unique_ptr<Transfer>> transfers;
  transfers.reserve(chunks);
  for (std::size_t i = 0; i < chunks; ++i) {
    std::size_t const offset = i * task_size;
    transfers.push_back(std::make_unique<Transfer>(endpoint,
                                                   object_size,
                                                   buf + offset,
                                                   std::min(task_size, size - offset),
                                                   file_offset + offset,
                                                   device_context,
                                                   completion));
  }
  std::lock_guard const lock{mutex_};
  while (reactors_.size() < n_reactors) {
    reactors_.push_back(std::make_unique<Reactor>(reactors_.size(), shared_, resumed_));
  }
  if (per_pread) {
    reactors_[next_reactor_ % n_reactors]->submit(std::move(transfers), max_in_flight);
    next_reactor_ = (next_reactor_ + 1) % n_reactors;
    return future;
  }
  shared_->push(std::move(transfers), n_reactors);
  for (std::size_t r = 0; r < n_reactors; ++r) {
    reactors_[r]->submit({}, max_in_flight);
  }
  return future;
}

}  // namespace kvikio::detail
