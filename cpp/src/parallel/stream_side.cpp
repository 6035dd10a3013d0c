/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "parallel/stream_side.hpp"

#include <memory>
#include <utility>

#include <kvikio/shim/cuda.hpp>

namespace kvikio::detail {
namespace {

/// A counter's step done by a host function on the stream (no memory operations); the function
/// deletes it when done.
struct HostStep {
  Counter counter;
  std::uint32_t value;

  static void wait(void* p)
  {
    std::unique_ptr<HostStep> const step{static_cast<HostStep*>(p)};
    step->counter.wait_for(step->value);
  }
  static void store(void* p)
  {
    std::unique_ptr<HostStep> const step{static_cast<HostStep*>(p)};
    step->counter.store(step->value);
  }
};

}  // namespace

CUresult StreamSide::flush()
{
  auto& api           = cudaAPI::instance();
  std::size_t const n = std::exchange(held_, 0);
  if (n > 1 && api.StreamBatchMemOp != nullptr) {
    return api.StreamBatchMemOp(stream_, static_cast<unsigned>(n), ops_.data(), 0);
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto const& p = ops_[i];
    CUresult const r =
      p.operation == CU_STREAM_MEM_OP_WAIT_VALUE_32
        ? api.StreamWaitValue32(stream_, p.waitValue.address, p.waitValue.value, p.waitValue.flags)
        : api.StreamWriteValue32(stream_, p.writeValue.address, p.writeValue.value, 0);
    if (r != CUDA_SUCCESS) { return r; }
  }
  return CUDA_SUCCESS;
}

CUresult StreamSide::step(CUstreamBatchMemOpType op, Counter counter, std::uint32_t value)
{
  bool const waits = op == CU_STREAM_MEM_OP_WAIT_VALUE_32;
  if (kind_ == StreamWaitKind::stream_memops) {
    CUstreamBatchMemOpParams p{};
    if (waits) {
      p.waitValue = {op, counter.device(), {value}, CU_STREAM_WAIT_VALUE_GEQ, 0};
    } else {
      p.writeValue = {op, counter.device(), {value}, 0, 0};
    }
    return hold(p);
  }
  auto held        = std::make_unique<HostStep>(HostStep{counter, value});
  CUresult const r = cudaAPI::instance().LaunchHostFunc(
    stream_, waits ? &HostStep::wait : &HostStep::store, held.get());
  if (r == CUDA_SUCCESS) { (void)held.release(); }  // the host function deletes it
  return r;
}

CUresult StreamSide::hold(CUstreamBatchMemOpParams const& p)
{
  if (held_ == ops_.size()) {
    if (auto const r = flush(); r != CUDA_SUCCESS) { return r; }
  }
  ops_[held_++] = p;
  return CUDA_SUCCESS;
}

}  // namespace kvikio::detail
