/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/nvtx.hpp
 * @brief NVTX ranges in the `libkvikio` domain (header-only NVTX3 from the CUDA toolkit).
 *
 * With no profiler attached a range costs a branch on a null function pointer.
 */

#include <nvtx3/nvtx3.hpp>

namespace kvikio {

/// @brief The NVTX domain of every KvikIO range.
struct libkvikio_domain {
  static constexpr char const* name{"libkvikio"};
};

}  // namespace kvikio

/// @brief A range named after the enclosing function, for its whole scope.
#define KVIKIO_NVTX_FUNC_RANGE() NVTX3_FUNC_RANGE_IN(kvikio::libkvikio_domain)

#define KVIKIO_DETAIL_NVTX_CONCAT_IMPL(a, b) a##b
#define KVIKIO_DETAIL_NVTX_CONCAT(a, b) KVIKIO_DETAIL_NVTX_CONCAT_IMPL(a, b)

/// @brief A range named `message` (a string literal or `std::string`), for the enclosing scope.
#define KVIKIO_NVTX_SCOPED_RANGE(message)                                           \
  nvtx3::scoped_range_in<kvikio::libkvikio_domain> const KVIKIO_DETAIL_NVTX_CONCAT( \
    kvikio_nvtx_range_, __LINE__)                                                   \
  {                                                                                 \
    message                                                                         \
  }
