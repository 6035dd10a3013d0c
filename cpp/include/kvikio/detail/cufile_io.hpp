/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/cufile_io.hpp
 * @brief The cuFile backend: device memory through `cuFileRead`/`cuFileWrite` of a file's
 * registered handle (LocalFile::cufile), one request per range.
 */

#include <kvikio/detail/local_backend.hpp>

namespace kvikio::detail {

/// @brief The cuFile backend, for device memory (one object for the process).
DeviceBackend& cufile_backend() noexcept;

}  // namespace kvikio::detail
