/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The caller's stream's side of stream-ordered I/O: waits for counters and signals of them,
 * enqueued as stream memory operations or, where the driver has none, as host functions.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <cuda.h>

#include "parallel/stream_ordered.hpp"
#include "parallel/stream_staging.hpp"

namespace kvikio::detail {

/**
 * @brief Enqueues a stream's waits and signals. Memory operations are held until flush() (before
 * each copy and at the end) and then enqueued as one batch: a slot's signal and the next slot's
 * wait cost one driver call.
 */
class StreamSide {
 public:
  StreamSide(CUstream stream, StreamWaitKind kind) : stream_{stream}, kind_{kind} {}

  /// @brief The stream goes on once `counter` has reached `value`.
  CUresult wait(Counter counter, std::uint32_t value)
  {
    return step(CU_STREAM_MEM_OP_WAIT_VALUE_32, counter, value);
  }

  /// @brief The stream sets `counter` to `value` when it gets there (after its earlier work).
  CUresult signal(Counter counter, std::uint32_t value)
  {
    return step(CU_STREAM_MEM_OP_WRITE_VALUE_32, counter, value);
  }

  /// @brief Enqueues the memory operations held: one batch, or one call where the driver has no
  /// batches or there is only one.
  CUresult flush();

 private:
  // A wait (CU_STREAM_MEM_OP_WAIT_VALUE_32) or a signal (CU_STREAM_MEM_OP_WRITE_VALUE_32): a
  // memory operation held for the next flush, or a host function on the stream.
  CUresult step(CUstreamBatchMemOpType op, Counter counter, std::uint32_t value);
  CUresult hold(CUstreamBatchMemOpParams const& p);

  CUstream stream_;
  StreamWaitKind kind_;
  std::array<CUstreamBatchMemOpParams, 4> ops_{};
  std::size_t held_{0};
};

}  // namespace kvikio::detail
