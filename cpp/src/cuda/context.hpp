/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file cuda/context.hpp
 * @brief What the library asks of a CUDA context beyond the public helpers of kvikio/utils.hpp.
 */

#include <cuda.h>

namespace kvikio::detail {

/**
 * @brief Whether `ctx` is its device's primary context (the one the CUDA runtime uses). The first
 * time a device's primary context is seen active it is retained for good, so that it and what is
 * pinned in it last as long as the process (but for a reset); a context the program made
 * (cuCtxCreate) may be destroyed at any time. Never activates a primary context that is not
 * active; false on any driver error.
 */
[[nodiscard]] bool is_primary_context(CUcontext ctx) noexcept;

}  // namespace kvikio::detail
