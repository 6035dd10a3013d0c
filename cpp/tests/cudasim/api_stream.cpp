/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Streams, events, asynchronous copies, host functions and stream memory operations.
 */
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "memory.hpp"
#include "simulator.hpp"

using cudasim::Operation;
using cudasim::Simulator;

namespace {

std::int64_t now_ns()
{
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

// Caller holds the mutex.
CUevent_st* find_event(CUevent event, char const* entry, CUresult& result)
{
  auto& sim = Simulator::get();
  if (event == nullptr || sim.events.count(event) == 0) {
    result = sim.misuse(entry, "unknown or destroyed event", CUDA_ERROR_INVALID_HANDLE);
    return nullptr;
  }
  return event;
}

// An asynchronous copy, with the driver's handling of pageable host memory.
// A copy between two resolved operands, as the driver orders it.
CUresult enqueue_copy(
  char const* entry, CUstream stream, cudasim::Operand d, cudasim::Operand s, std::size_t n)
{
  // A pageable source is staged at the call and the call returns; a pageable destination makes
  // the call wait for the copy (the driver "might be synchronous": we always are).
  if (s.pageable && !d.pageable) {
    return cudasim::staged_copy_to_device(entry, stream, d.bytes, s.bytes, n);
  }
  return cudasim::run_on_stream(
    entry, stream, [d, s, n] { cudasim::dma_copy(d.bytes, s.bytes, n); }, d.pageable || s.pageable);
}

CUresult copy_async(char const* entry,
                    std::uintptr_t dst,
                    std::uintptr_t src,
                    std::size_t n,
                    CUstream stream,
                    bool dst_device,
                    bool src_device)
{
  auto& sim = Simulator::get();
  cudasim::Operand d, s;
  {
    std::lock_guard const lock{sim.mutex};
    CUresult r = dst_device ? cudasim::device_operand(entry, dst, n, d.bytes, stream)
                            : cudasim::host_operand(
                                entry, reinterpret_cast<void*>(dst), n, d.bytes, d.pageable);
    if (r != CUDA_SUCCESS) { return r; }
    r = src_device
          ? cudasim::device_operand(entry, src, n, s.bytes, stream)
          : cudasim::host_operand(entry, reinterpret_cast<void*>(src), n, s.bytes, s.pageable);
    if (r != CUDA_SUCCESS) { return r; }
  }
  return enqueue_copy(entry, stream, d, s, n);
}

// A 4-byte word that stream memory operations may use: device memory, or pinned/registered host
// memory (mapped at the same address).
CUresult stream_word(char const* entry,
                     CUdeviceptr addr,
                     std::atomic<std::uint32_t>*& word,
                     CUstream stream)
{
  auto& sim = Simulator::get();
  if (addr % 4 != 0) {
    return sim.misuse(entry, "address not 4-byte aligned", CUDA_ERROR_INVALID_VALUE);
  }
  cudasim::Operand op;
  if (auto r = cudasim::classify(entry, addr, 4, op, stream); r != CUDA_SUCCESS) { return r; }
  if (op.pageable) {
    return sim.misuse(
      entry, "pageable host memory is not visible to the device", CUDA_ERROR_INVALID_VALUE);
  }
  static_assert(sizeof(std::atomic<std::uint32_t>) == 4);
  word = reinterpret_cast<std::atomic<std::uint32_t>*>(op.bytes);
  return CUDA_SUCCESS;
}

// What a stream runs for a 32-bit wait: blocks until `word` meets `condition` against `value`.
std::function<void()> wait_value(std::atomic<std::uint32_t>* word,
                                 std::uint32_t value,
                                 unsigned condition)
{
  auto satisfied = [word, value, condition] {
    std::uint32_t const v = word->load(std::memory_order_acquire);
    switch (condition) {
      case CU_STREAM_WAIT_VALUE_GEQ: return static_cast<std::int32_t>(v - value) >= 0;
      case CU_STREAM_WAIT_VALUE_EQ: return v == value;
      case CU_STREAM_WAIT_VALUE_AND: return (v & value) != 0;
      default: return ~(v | value) != 0;  // NOR
    }
  };
  return [satisfied] { Simulator::get().wait_until(satisfied); };
}

// What a stream runs for a 32-bit write.
std::function<void()> write_value(std::atomic<std::uint32_t>* word, std::uint32_t value)
{
  return [word, value] {
    word->store(value, std::memory_order_release);
    Simulator::get().notify_progress();
  };
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags)
{
  CUDASIM_ENTER("cuStreamCreate");
  auto& sim = Simulator::get();
  if (phStream == nullptr || (Flags != CU_STREAM_DEFAULT && Flags != CU_STREAM_NON_BLOCKING)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* ctx = sim.current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  std::lock_guard const lock{sim.mutex};
  *phStream = cudasim::create_stream(ctx, false, Flags == CU_STREAM_NON_BLOCKING);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
  CUDASIM_ENTER("cuStreamDestroy");
  auto& sim = Simulator::get();
  {
    std::lock_guard const lock{sim.mutex};
    if (hStream == nullptr || sim.streams.count(hStream) == 0 || hStream->legacy) {
      return sim.misuse(
        "cuStreamDestroy", "unknown, destroyed or default stream", CUDA_ERROR_INVALID_HANDLE);
    }
    if (hStream->progress->value.load() < hStream->enqueued) {
      // The driver allows this (the work completes first); a library doing it usually has a bug.
      sim.misuse("cuStreamDestroy", "stream destroyed with pending work", CUDA_SUCCESS);
    }
    sim.streams.erase(hStream);
    sim.draining_streams.insert(hStream);
    hStream->ctx->streams.erase(hStream);
  }
  cudasim::destroy_stream(hStream);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
  CUDASIM_ENTER("cuStreamSynchronize");
  auto& sim = Simulator::get();
  std::unique_lock lock{sim.mutex};
  CUresult r{};
  auto* stream = cudasim::resolve_stream(hStream, "cuStreamSynchronize", r);
  if (stream == nullptr) { return r; }
  auto const seq = stream->enqueued;
  auto progress  = stream->progress;
  lock.unlock();
  sim.wait_until([&] { return progress->value.load(std::memory_order_acquire) >= seq; });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
  CUDASIM_ENTER("cuStreamQuery");
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  CUresult r{};
  auto* stream = cudasim::resolve_stream(hStream, "cuStreamQuery", r);
  if (stream == nullptr) { return r; }
  return stream->progress->value.load(std::memory_order_acquire) >= stream->enqueued
           ? CUDA_SUCCESS
           : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
  CUDASIM_ENTER("cuStreamWaitEvent");
  auto& sim = Simulator::get();
  if (Flags != CU_EVENT_WAIT_DEFAULT) { return CUDA_ERROR_INVALID_VALUE; }
  std::lock_guard const lock{sim.mutex};
  CUresult r{};
  auto* event = find_event(hEvent, "cuStreamWaitEvent", r);
  if (event == nullptr) { return r; }
  auto* stream = cudasim::resolve_stream(hStream, "cuStreamWaitEvent", r);
  if (stream == nullptr) { return r; }
  // Waits for the event's most recent record as of now (events of other contexts are allowed).
  auto const target = event->state->recorded.load();
  if (target == 0) { return CUDA_SUCCESS; }
  Operation op{[] {}, {}, 0, false};
  op.waits.push_back({event->state, &event->state->completed, target});
  cudasim::enqueue(stream, std::move(op));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData)
{
  CUDASIM_ENTER("cuLaunchHostFunc");
  auto& sim = Simulator::get();
  if (fn == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  std::lock_guard const lock{sim.mutex};
  CUresult r{};
  auto* stream = cudasim::resolve_stream(hStream, "cuLaunchHostFunc", r);
  if (stream == nullptr) { return r; }
  cudasim::enqueue(stream, Operation{[fn, userData] { fn(userData); }, {}, 0, true});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWaitValue32(CUstream stream,
                                     CUdeviceptr addr,
                                     cuuint32_t value,
                                     unsigned int flags)
{
  CUDASIM_ENTER("cuStreamWaitValue32");
  auto& sim                = Simulator::get();
  unsigned const condition = flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH);
  if (condition > CU_STREAM_WAIT_VALUE_NOR) { return CUDA_ERROR_INVALID_VALUE; }
  std::lock_guard const lock{sim.mutex};
  std::atomic<std::uint32_t>* word = nullptr;
  if (auto r = stream_word("cuStreamWaitValue32", addr, word, stream); r != CUDA_SUCCESS) {
    return r;
  }
  CUresult r{};
  auto* s = cudasim::resolve_stream(stream, "cuStreamWaitValue32", r);
  if (s == nullptr) { return r; }
  cudasim::enqueue(s, Operation{wait_value(word, value, condition), {}, 0, false});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWriteValue32(CUstream stream,
                                      CUdeviceptr addr,
                                      cuuint32_t value,
                                      unsigned int flags)
{
  CUDASIM_ENTER("cuStreamWriteValue32");
  auto& sim = Simulator::get();
  if ((flags & ~static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard const lock{sim.mutex};
  std::atomic<std::uint32_t>* word = nullptr;
  if (auto r = stream_word("cuStreamWriteValue32", addr, word, stream); r != CUDA_SUCCESS) {
    return r;
  }
  CUresult r{};
  auto* s = cudasim::resolve_stream(stream, "cuStreamWriteValue32", r);
  if (s == nullptr) { return r; }
  cudasim::enqueue(s, Operation{write_value(word, value), {}, 0, false});
  return CUDA_SUCCESS;
}

// 32-bit waits and writes only (what KvikIO uses); at most 256 of them, as the driver allows.
// They run in array order, as one operation of the stream.
CUresult CUDAAPI cuStreamBatchMemOp(CUstream stream,
                                    unsigned int count,
                                    CUstreamBatchMemOpParams* params,
                                    unsigned int flags)
{
  CUDASIM_ENTER("cuStreamBatchMemOp");
  auto& sim = Simulator::get();
  if (flags != 0 || count == 0 || count > 256 || params == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard const lock{sim.mutex};
  std::vector<std::function<void()>> steps;
  for (unsigned i = 0; i < count; ++i) {
    auto const& p                    = params[i];
    std::atomic<std::uint32_t>* word = nullptr;
    if (p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32) {
      unsigned const condition =
        p.waitValue.flags & ~static_cast<unsigned>(CU_STREAM_WAIT_VALUE_FLUSH);
      if (condition > CU_STREAM_WAIT_VALUE_NOR) { return CUDA_ERROR_INVALID_VALUE; }
      if (auto r = stream_word("cuStreamBatchMemOp", p.waitValue.address, word, stream);
          r != CUDA_SUCCESS) {
        return r;
      }
      steps.push_back(wait_value(word, p.waitValue.value, condition));
    } else if (p.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32) {
      if ((p.writeValue.flags & ~static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) !=
          0) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      if (auto r = stream_word("cuStreamBatchMemOp", p.writeValue.address, word, stream);
          r != CUDA_SUCCESS) {
        return r;
      }
      steps.push_back(write_value(word, p.writeValue.value));
    } else {
      return sim.misuse("cuStreamBatchMemOp",
                        "only 32-bit waits and writes are simulated",
                        CUDA_ERROR_NOT_SUPPORTED);
    }
  }
  CUresult r{};
  auto* s = cudasim::resolve_stream(stream, "cuStreamBatchMemOp", r);
  if (s == nullptr) { return r; }
  cudasim::enqueue(s,
                   Operation{[steps = std::move(steps)] {
                               for (auto const& step : steps) {
                                 step();
                               }
                             },
                             {},
                             0,
                             false});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags)
{
  CUDASIM_ENTER("cuEventCreate");
  auto& sim            = Simulator::get();
  unsigned const known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (phEvent == nullptr || (Flags & ~known) != 0) { return CUDA_ERROR_INVALID_VALUE; }
  if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* ctx = sim.current_context();
  if (ctx == nullptr) { return CUDA_ERROR_INVALID_CONTEXT; }
  std::shared_ptr<cudasim::EventState> state;
  int fd = -1;
  if ((Flags & CU_EVENT_INTERPROCESS) != 0) {
    if (auto r = cudasim::create_shared_event_state(state, fd); r != CUDA_SUCCESS) { return r; }
  } else {
    state = std::make_shared<cudasim::EventState>();
  }
  std::lock_guard const lock{sim.mutex};
  auto* event = new CUevent_st{ctx, Flags, std::move(state), fd};
  sim.events.insert(event);
  *phEvent = event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
  CUDASIM_ENTER("cuEventDestroy");
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  CUresult r{};
  auto* event = find_event(hEvent, "cuEventDestroy", r);
  if (event == nullptr) { return r; }
  sim.events.erase(event);
  if (event->memfd >= 0) { ::close(event->memfd); }
  delete event;  // pending operations keep the state alive
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
  CUDASIM_ENTER("cuEventRecord");
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  CUresult r{};
  auto* event = find_event(hEvent, "cuEventRecord", r);
  if (event == nullptr) { return r; }
  auto* stream = cudasim::resolve_stream(hStream, "cuEventRecord", r);
  if (stream == nullptr) { return r; }
  if (stream->ctx != event->ctx) {
    return sim.misuse(
      "cuEventRecord", "event and stream belong to different contexts", CUDA_ERROR_INVALID_HANDLE);
  }
  auto state = event->state;
  if (state->recorded.load() - state->completed.load() >= cudasim::EventState::window) {
    return sim.misuse("cuEventRecord",
                      "more than 256 records of one event pending (the simulator's limit)",
                      CUDA_ERROR_NOT_SUPPORTED);
  }
  auto const target = state->recorded.fetch_add(1) + 1;
  Operation op{[] {}, {}, 0, false};
  op.after = [state, target] {
    state->timestamp_ns = now_ns();
    state->executed[target % cudasim::EventState::window].store(target);
    // Move `completed` over every record that has executed, in order.
    for (std::uint64_t seen = state->completed.load();
         state->executed[(seen + 1) % cudasim::EventState::window].load() == seen + 1;) {
      state->completed.compare_exchange_weak(seen, seen + 1);
    }
  };
  cudasim::enqueue(stream, std::move(op));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
  CUDASIM_ENTER("cuEventQuery");
  auto& sim = Simulator::get();
  std::lock_guard const lock{sim.mutex};
  CUresult r{};
  auto* event = find_event(hEvent, "cuEventQuery", r);
  if (event == nullptr) { return r; }
  return event->state->completed.load() >= event->state->recorded.load() ? CUDA_SUCCESS
                                                                         : CUDA_ERROR_NOT_READY;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
  CUDASIM_ENTER("cuEventSynchronize");
  auto& sim = Simulator::get();
  std::unique_lock lock{sim.mutex};
  CUresult r{};
  auto* event = find_event(hEvent, "cuEventSynchronize", r);
  if (event == nullptr) { return r; }
  auto state        = event->state;
  auto const target = state->recorded.load();
  lock.unlock();
  sim.wait_until([&] { return state->completed.load() >= target; });
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd)
{
  CUDASIM_ENTER("cuEventElapsedTime");
  auto& sim = Simulator::get();
  if (pMilliseconds == nullptr) { return CUDA_ERROR_INVALID_VALUE; }
  std::lock_guard const lock{sim.mutex};
  CUresult r{};
  auto* start = find_event(hStart, "cuEventElapsedTime", r);
  auto* end   = start == nullptr ? nullptr : find_event(hEnd, "cuEventElapsedTime", r);
  if (end == nullptr) { return r; }
  if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (start->state->recorded == 0 || end->state->recorded == 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (start->state->completed < start->state->recorded ||
      end->state->completed < end->state->recorded) {
    return CUDA_ERROR_NOT_READY;
  }
  *pMilliseconds = static_cast<float>(end->state->timestamp_ns - start->state->timestamp_ns) / 1e6F;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice,
                                   void const* srcHost,
                                   size_t ByteCount,
                                   CUstream hStream)
{
  CUDASIM_ENTER("cuMemcpyHtoDAsync");
  return copy_async("cuMemcpyHtoDAsync",
                    dstDevice,
                    reinterpret_cast<std::uintptr_t>(srcHost),
                    ByteCount,
                    hStream,
                    true,
                    false);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void* dstHost,
                                   CUdeviceptr srcDevice,
                                   size_t ByteCount,
                                   CUstream hStream)
{
  CUDASIM_ENTER("cuMemcpyDtoHAsync");
  return copy_async("cuMemcpyDtoHAsync",
                    reinterpret_cast<std::uintptr_t>(dstHost),
                    srcDevice,
                    ByteCount,
                    hStream,
                    false,
                    true);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice,
                                   CUdeviceptr srcDevice,
                                   size_t ByteCount,
                                   CUstream hStream)
{
  CUDASIM_ENTER("cuMemcpyDtoDAsync");
  return copy_async("cuMemcpyDtoDAsync", dstDevice, srcDevice, ByteCount, hStream, true, true);
}

// Unified addressing: either side may be host or device memory, told apart by the table.
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
  CUDASIM_ENTER("cuMemcpyAsync");
  cudasim::Operand d, s;
  {
    std::lock_guard const lock{Simulator::get().mutex};
    if (auto r = cudasim::classify("cuMemcpyAsync", dst, ByteCount, d, hStream);
        r != CUDA_SUCCESS) {
      return r;
    }
    if (auto r = cudasim::classify("cuMemcpyAsync", src, ByteCount, s, hStream);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return enqueue_copy("cuMemcpyAsync", hStream, d, s, ByteCount);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice,
                                 unsigned char uc,
                                 size_t N,
                                 CUstream hStream)
{
  CUDASIM_ENTER("cuMemsetD8Async");
  std::byte* dst = nullptr;
  {
    std::lock_guard const lock{Simulator::get().mutex};
    if (auto r = cudasim::device_operand("cuMemsetD8Async", dstDevice, N, dst, hStream);
        r != CUDA_SUCCESS) {
      return r;
    }
  }
  return cudasim::run_on_stream(
    "cuMemsetD8Async", hStream, [=] { cudasim::dma_set(dst, uc, N); }, false);
}

CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr* dsts,
                                    CUdeviceptr* srcs,
                                    size_t* sizes,
                                    size_t count,
                                    CUmemcpyAttributes* attrs,
                                    size_t* attrsIdxs,
                                    size_t numAttrs,
                                    CUstream hStream)
{
  CUDASIM_ENTER("cuMemcpyBatchAsync");
  auto& sim = Simulator::get();
  if (dsts == nullptr || srcs == nullptr || sizes == nullptr || count == 0 || attrs == nullptr ||
      attrsIdxs == nullptr || numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The driver refuses batches on the legacy default stream.
  if (hStream == nullptr) {
    return sim.misuse("cuMemcpyBatchAsync", "the null stream", CUDA_ERROR_INVALID_VALUE);
  }
  struct Copy {
    cudasim::Operand dst, src;
    std::size_t n;
  };
  std::vector<Copy> copies(count);
  bool synchronous = false;
  {
    std::lock_guard const lock{sim.mutex};
    for (std::size_t a = 0; a < numAttrs; ++a) {
      std::size_t const first = attrsIdxs[a];
      std::size_t const last  = a + 1 < numAttrs ? attrsIdxs[a + 1] : count;
      auto const order        = attrs[a].srcAccessOrder;
      if (first >= last || last > count || order == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID ||
          order > CU_MEMCPY_SRC_ACCESS_ORDER_ANY) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      for (std::size_t i = first; i < last; ++i) {
        auto& c = copies[i];
        c.n     = sizes[i];
        if (auto r = cudasim::classify("cuMemcpyBatchAsync", dsts[i], c.n, c.dst, hStream);
            r != CUDA_SUCCESS) {
          return r;
        }
        if (auto r = cudasim::classify("cuMemcpyBatchAsync", srcs[i], c.n, c.src, hStream);
            r != CUDA_SUCCESS) {
          return r;
        }
        synchronous = synchronous || c.dst.pageable || c.src.pageable ||
                      order == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
      }
    }
  }
  return cudasim::run_on_stream(
    "cuMemcpyBatchAsync",
    hStream,
    [copies = std::move(copies)] {
      for (auto const& c : copies) {
        cudasim::dma_copy(c.dst.bytes, c.src.bytes, c.n);
      }
    },
    synchronous);
}

}  // extern "C"
