/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "parallel/stream_unstaged.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "cuda/stream_cache.hpp"

namespace kvikio::detail {
namespace {

class UnstagedOperation final : public StreamOperation {
 public:
  UnstagedOperation(StreamOrderedRange const& range,
                    std::shared_ptr<StagingRing> ring,
                    StreamOrderedHostIo host_io,
                    std::function<void(ssize_t, std::exception_ptr)> on_done)
    : StreamOperation{std::move(on_done)},
      range_{range},
      ring_{std::move(ring)},
      host_io_{std::move(host_io)},
      num_pieces_{(range.size + range.piece_size - 1) / range.piece_size},
      pieces_left_{num_pieces_}
  {
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&ctx_));
  }

  // Every piece is ready once the stream has reached the operation.
  std::optional<std::size_t> claim_ready() noexcept override
  {
    if (!reached(ring_->stream_reached().load(), number)) { return std::nullopt; }
    std::size_t p = next_piece_.load(std::memory_order_relaxed);
    while (p < num_pieces_) {
      if (next_piece_.compare_exchange_weak(p, p + 1, std::memory_order_relaxed)) { return p; }
    }
    return std::nullopt;
  }

  [[nodiscard]] bool all_claimed() const noexcept override
  {
    return next_piece_.load(std::memory_order_relaxed) >= num_pieces_;
  }

  void run(std::size_t p) noexcept override
  {
    std::size_t const skip = p * range_.piece_size;
    std::size_t const n    = std::min(range_.piece_size, range_.size - skip);
    move_piece(n, range_.file_offset + skip, [&] { return move_through_pageable(skip, n); });
    if (pieces_left_.fetch_sub(1, std::memory_order_acq_rel) == 1) { report(*ring_); }
  }

  [[nodiscard]] CUresult enqueue(CUstream stream, StreamWaitKind kind) const override
  {
    StreamSide side{stream, kind};
    CUresult r = side.signal(ring_->stream_reached(), number);
    if (r == CUDA_SUCCESS) { r = side.wait(ring_->operations_ended(), number); }
    return r == CUDA_SUCCESS ? side.flush() : r;
  }

  void never_began() noexcept override { ring_->end_operation(number); }

 private:
  // One piece through pageable memory (the driver stages a copy from or to it itself); returns
  // the bytes the host I/O moved.
  std::size_t move_through_pageable(std::size_t skip, std::size_t n)
  {
    auto const memory = std::make_unique_for_overwrite<std::byte[]>(n);
    PushAndPopContext const in{ctx_};
    auto& api = cudaAPI::instance();
    // Not blocking: the caller's stream may be the legacy default stream, waiting for this.
    CUstream const stream = independent_stream_for_this_thread(ctx_);
    if (!range_.to_device) {
      KVIKIO_CUDA_DRIVER_TRY(api.MemcpyDtoHAsync(memory.get(), range_.device + skip, n, stream));
      KVIKIO_CUDA_DRIVER_TRY(api.StreamSynchronize(stream));
      return host_io_(memory.get(), n, range_.file_offset + skip);
    }
    std::size_t const moved = host_io_(memory.get(), n, range_.file_offset + skip);
    if (moved == n) {
      KVIKIO_CUDA_DRIVER_TRY(api.MemcpyHtoDAsync(range_.device + skip, memory.get(), n, stream));
      KVIKIO_CUDA_DRIVER_TRY(api.StreamSynchronize(stream));
    }
    return moved;
  }

  StreamOrderedRange range_;
  std::shared_ptr<StagingRing> ring_;
  StreamOrderedHostIo host_io_;
  CUcontext ctx_{};
  std::size_t num_pieces_;
  std::atomic<std::size_t> next_piece_{0};
  std::atomic<std::size_t> pieces_left_;
};

}  // namespace

std::shared_ptr<StreamOperation> plan_unstaged(
  StreamOrderedRange const& range,
  std::shared_ptr<StagingRing> ring,
  StreamOrderedHostIo host_io,
  std::function<void(ssize_t, std::exception_ptr)> on_done)
{
  auto& r = *ring;
  auto op = std::make_shared<UnstagedOperation>(
    range, std::move(ring), std::move(host_io), std::move(on_done));
  op->number = r.begin_operation();
  r.set_last_unstaged(op->number);
  return op;
}

}  // namespace kvikio::detail
