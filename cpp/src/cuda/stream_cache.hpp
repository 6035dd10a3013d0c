/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>

#include <cuda.h>

namespace kvikio::detail {

/**
 * @brief The calling thread's stream in context `ctx`, created on first use: a blocking stream,
 * so that its work is ordered after work queued earlier on the legacy default stream.
 *
 * One stream per (thread, context), never shared between threads, never destroyed (a
 * process-wide CUDA resource). Safe under concurrent first use.
 * @throws kvikio::CUfileException if the stream cannot be created.
 */
CUstream stream_for_this_thread(CUcontext ctx);

/// @brief Streams stream_for_this_thread() has created in `ctx` (one per thread that did device
/// I/O there): per-context state stays per context. For tests and introspection.
[[nodiscard]] std::size_t stream_count(CUcontext ctx);

}  // namespace kvikio::detail
