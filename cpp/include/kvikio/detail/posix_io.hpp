/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/posix_io.hpp
 * @brief The POSIX backend: the staged algorithms (StagedBackend) over `pread`/`pwrite` calls,
 * retried on EINTR and short transfers.
 */

#include <kvikio/detail/local_backend.hpp>

namespace kvikio::detail {

/// @brief The POSIX backend, for host and device memory (one object for the process).
StagedBackend& posix_backend() noexcept;

}  // namespace kvikio::detail
