/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cuda.h>

namespace kvikio::detail {

/**
 * @brief The calling thread's non-blocking stream in context `ctx`, created on first use.
 *
 * One stream per (thread, context), never shared between threads, never destroyed (a
 * process-wide CUDA resource). Safe under concurrent first use.
 * @throws kvikio::CUfileException if the stream cannot be created.
 */
CUstream stream_for_this_thread(CUcontext ctx);

}  // namespace kvikio::detail
