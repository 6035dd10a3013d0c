/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/event.hpp>

#include <thread>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

Event::Event(Event&& o) noexcept
  : event_{std::exchange(o.event_, nullptr)}, ctx_{std::exchange(o.ctx_, nullptr)}
{
}

Event& Event::operator=(Event&& o) noexcept
{
  if (this != &o) {
    if (event_ != nullptr) { EventPool::instance().put(event_, ctx_); }
    event_ = std::exchange(o.event_, nullptr);
    ctx_   = std::exchange(o.ctx_, nullptr);
  }
  return *this;
}

Event::~Event() noexcept
{
  if (event_ != nullptr) { EventPool::instance().put(event_, ctx_); }
}

void Event::record(CUstream stream)
{
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().EventRecord(event_, stream));
}

void Event::synchronize()
{
  // Poll and yield instead of cuEventSynchronize, which spins on the CPU by default: with as
  // many I/O threads as cores, spinning waiters take the CPU from the threads reading files.
  auto& api = cudaAPI::instance();
  while (true) {
    CUresult const r = api.EventQuery(event_);
    if (r != CUDA_ERROR_NOT_READY) {
      KVIKIO_CUDA_DRIVER_TRY(r);
      return;
    }
    std::this_thread::yield();
  }
}

bool Event::is_done()
{
  CUresult const r = cudaAPI::instance().EventQuery(event_);
  if (r == CUDA_ERROR_NOT_READY) { return false; }
  KVIKIO_CUDA_DRIVER_TRY(r);
  return true;
}

EventPool& EventPool::instance()
{
  static detail::BuiltOnce<EventPool> pool;
  return pool.get([] { return new EventPool(); });
}

Event EventPool::get()
{
  auto& api = cudaAPI::instance();
  CUcontext ctx{};
  KVIKIO_CUDA_DRIVER_TRY(api.CtxGetCurrent(&ctx));
  KVIKIO_EXPECT(ctx != nullptr, "EventPool::get(): no current CUDA context (push one first)");
  {
    std::lock_guard const lock{mutex_};
    auto it = free_.find(ctx);
    if (it != free_.end() && !it->second.empty()) {
      CUevent e = it->second.back();
      it->second.pop_back();
      return Event{e, ctx};
    }
  }
  CUevent e{};
  KVIKIO_CUDA_DRIVER_TRY(api.EventCreate(&e, CU_EVENT_DISABLE_TIMING));
  return Event{e, ctx};
}

void EventPool::put(CUevent event, CUcontext ctx) noexcept
{
  std::size_t const cap = [] {
    try {
      return defaults::event_pool_max_per_context();
    } catch (...) {
      return std::size_t{0};
    }
  }();
  {
    std::lock_guard const lock{mutex_};
    try {
      auto& list = free_[ctx];
      if (cap == 0 || list.size() < cap) {
        list.push_back(event);
        return;
      }
    } catch (...) {  // could not keep it: destroy it below
    }
  }
  try {
    PushAndPopContext const guard{ctx};
    CUresult const r = cudaAPI::instance().EventDestroy(event);
    if (r != CUDA_SUCCESS) {
      KVIKIO_LOG_ERROR("EventPool: destroying a surplus event failed: ",
                       detail::cuda_error_description(r));
    }
  } catch (std::exception const& e) {
    KVIKIO_LOG_ERROR("EventPool: destroying a surplus event failed: ", e.what());
  }
}

std::size_t EventPool::num_free_events(CUcontext ctx) const
{
  std::lock_guard const lock{mutex_};
  auto it = free_.find(ctx);
  return it == free_.end() ? 0 : it->second.size();
}

std::size_t EventPool::total_free_events() const
{
  std::lock_guard const lock{mutex_};
  std::size_t n = 0;
  for (auto const& [ctx, list] : free_) {
    n += list.size();
  }
  return n;
}

}  // namespace kvikio
