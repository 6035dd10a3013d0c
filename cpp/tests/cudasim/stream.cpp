/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Streams are FIFO queues, each run by its own worker thread, so an operation completes some
 * time after it is enqueued, as on a GPU. Dependencies (events, the legacy default stream's
 * implicit ordering) are waits on progress counters checked before an operation runs. With
 * CUDASIM_HW_QUEUES, streams share that many hardware queues (round robin, as a GPU maps streams
 * onto its connections): an operation runs only once it is the oldest of its queue, so a stream
 * that waits holds up the work of the other streams behind it.
 */
#include <pthread.h>

#include <chrono>
#include <map>
#include <thread>

#include "simulator.hpp"

namespace cudasim {
namespace {

void run_worker(CUstream_st* stream)
{
  // Named, so that tests of the library's thread names can tell the simulator's apart.
  (void)::pthread_setname_np(::pthread_self(), "cudasim-stream");
  auto& sim         = Simulator::get();
  auto const& knobs = sim.knobs();
  while (true) {
    Operation* op = nullptr;
    {
      std::unique_lock lock{stream->mutex};
      stream->cv.wait(lock, [stream] { return !stream->queue.empty() || stream->stopping; });
      if (stream->queue.empty()) { break; }
      op = &stream->queue.front();  // deque references survive push_back
    }
    auto* const hw = stream->hw_queue;
    if (hw != nullptr) {
      std::pair<CUstream_st const*, std::uint64_t> const ticket{stream, op->seq};
      sim.wait_until([hw, &ticket] {
        std::lock_guard const lock{hw->mutex};
        return !hw->tickets.empty() && hw->tickets.front() == ticket;
      });
    }
    for (auto const& wait : op->waits) {
      sim.wait_until(
        [&wait] { return wait.counter->load(std::memory_order_acquire) >= wait.target; });
    }
    auto delay = std::chrono::microseconds(knobs.delay_us);
    if (knobs.jitter_us > 0) {
      delay += std::chrono::microseconds(stream->rng() % knobs.jitter_us);
    }
    if (delay.count() > 0) { std::this_thread::sleep_for(delay); }
    in_host_function() = op->host_function;
    op->run();
    in_host_function()      = false;
    std::uint64_t const seq = op->seq;
    auto after              = std::move(op->after);
    {
      std::lock_guard const lock{stream->mutex};
      stream->queue.pop_front();
    }
    stream->progress->value.store(seq, std::memory_order_release);
    if (hw != nullptr) {
      std::lock_guard const lock{hw->mutex};
      hw->tickets.pop_front();
    }
    if (after) { after(); }
    sim.notify_progress();
  }
  // Destroyed streams are freed by their worker once their work is done (cuStreamDestroy
  // returns at once, as the driver's does).
  {
    std::lock_guard const lock{sim.mutex};
    sim.draining_streams.erase(stream);
  }
  delete stream;
}

std::uint64_t stream_counter{0};  // guarded by Simulator::mutex; seeds each stream's jitter

}  // namespace

CUstream_st* create_stream(CUctx_st* ctx, bool legacy, bool nonblocking)
{
  auto& sim           = Simulator::get();
  auto* stream        = new CUstream_st{};
  stream->ctx         = ctx;
  stream->legacy      = legacy;
  stream->nonblocking = nonblocking;
  stream->rng.seed(sim.knobs().seed * 0x9E3779B97F4A7C15ULL + ++stream_counter);
  if (!sim.hw_queues.empty()) {
    stream->hw_queue = sim.hw_queues[stream_counter % sim.hw_queues.size()].get();
  }
  stream->worker = std::thread{run_worker, stream};
  ctx->streams.insert(stream);
  sim.streams.insert(stream);
  return stream;
}

CUstream_st* resolve_stream(CUstream handle, char const* entry, CUresult& result)
{
  auto& sim = Simulator::get();
  result    = CUDA_SUCCESS;
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    CUctx_st* ctx = sim.current_context();
    if (ctx == nullptr) {
      result =
        sim.misuse(entry, "the default stream needs a current context", CUDA_ERROR_INVALID_CONTEXT);
      return nullptr;
    }
    if (handle == CU_STREAM_PER_THREAD) {
      // The per-thread default stream: a blocking stream of this thread and context.
      thread_local std::map<CUctx_st*, CUstream_st*> per_thread;
      auto& s = per_thread[ctx];
      if (s == nullptr || sim.streams.count(s) == 0) { s = create_stream(ctx, false, false); }
      return s;
    }
    if (ctx->legacy_stream == nullptr) { ctx->legacy_stream = create_stream(ctx, true, false); }
    return ctx->legacy_stream;
  }
  if (sim.streams.count(handle) == 0) {
    result = sim.misuse(entry, "unknown or destroyed stream", CUDA_ERROR_INVALID_HANDLE);
    return nullptr;
  }
  return handle;
}

std::uint64_t enqueue(CUstream_st* stream, Operation op)
{
  // As the driver does (measured: 1021 on an H100, driver 580), a stream holding the maximum of
  // pending operations makes the next enqueue wait until it has run some. The caller holds the
  // simulator's mutex: let go of it meanwhile, as the driver blocks only this call.
  auto& sim       = Simulator::get();
  auto const full = [stream, max = sim.knobs().max_pending] {
    std::lock_guard const lock{stream->mutex};
    return stream->queue.size() >= max;
  };
  if (full()) {
    sim.mutex.unlock();
    sim.wait_until([&] { return !full(); });
    sim.mutex.lock();
  }
  // The legacy default stream waits for every blocking stream of its context, and they wait for
  // it; non-blocking streams take part in neither.
  if (!stream->nonblocking) {
    auto* ctx = stream->ctx;
    if (stream->legacy) {
      for (auto* other : ctx->streams) {
        if (other != stream && !other->nonblocking && other->enqueued > 0) {
          op.waits.push_back({other->progress, &other->progress->value, other->enqueued});
        }
      }
    } else if (ctx->legacy_stream != nullptr && ctx->legacy_stream->enqueued > 0) {
      auto* legacy = ctx->legacy_stream;
      op.waits.push_back({legacy->progress, &legacy->progress->value, legacy->enqueued});
    }
  }
  std::uint64_t seq{};
  {
    std::lock_guard const lock{stream->mutex};
    seq    = ++stream->enqueued;
    op.seq = seq;
    stream->queue.push_back(std::move(op));
  }
  if (stream->hw_queue != nullptr) {
    std::lock_guard const lock{stream->hw_queue->mutex};
    stream->hw_queue->tickets.emplace_back(stream, seq);
  }
  stream->cv.notify_one();
  return seq;
}

void wait_for(CUstream_st* stream, std::uint64_t seq)
{
  std::shared_ptr<Progress> const progress = stream->progress;
  Simulator::get().wait_until(
    [&] { return progress->value.load(std::memory_order_acquire) >= seq; });
}

void synchronize_streams(CUctx_st* ctx)
{
  auto& sim = Simulator::get();
  std::vector<std::pair<std::shared_ptr<Progress>, std::uint64_t>> targets;
  {
    std::lock_guard const lock{sim.mutex};
    // Destroyed streams still finishing their work count: freeing memory waits for them too.
    for (auto const* set : {&sim.streams, &sim.draining_streams}) {
      for (auto* s : *set) {
        if (ctx == nullptr || s->ctx == ctx) { targets.emplace_back(s->progress, s->enqueued); }
      }
    }
  }
  for (auto const& [progress, seq] : targets) {
    sim.wait_until([&] { return progress->value.load(std::memory_order_acquire) >= seq; });
  }
}

void destroy_stream(CUstream_st* stream)
{
  // After this the worker owns the stream: it may delete it as soon as the lock is released.
  stream->worker.detach();
  std::lock_guard const lock{stream->mutex};
  stream->stopping = true;
  stream->cv.notify_one();
}

}  // namespace cudasim
