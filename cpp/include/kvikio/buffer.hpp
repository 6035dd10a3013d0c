/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file buffer.hpp
 * @brief Registering device buffers with cuFile (no-ops where cuFile is not used).
 */

#include <cstddef>
#include <vector>

namespace kvikio {

/**
 * @brief Registers `[devPtr_base, devPtr_base + size)` with cuFile (cuFileBufRegister), which
 * speeds up GDS transfers from it. A no-op in compat mode.
 * @param devPtr_base start of the device memory to register.
 * @param size bytes to register.
 * @param flags passed to cuFileBufRegister unchanged.
 * @param errors_to_ignore cuFile error codes (CUfileOpError) to treat as success.
 * @throws kvikio::CUfileException on any other cuFile error.
 */
void buffer_register(void const* devPtr_base,
                     std::size_t size,
                     int flags                                = 0,
                     std::vector<int> const& errors_to_ignore = std::vector<int>());

/// @brief Undoes buffer_register(). A no-op in compat mode.
void buffer_deregister(void const* devPtr_base);

/// @brief buffer_register() of the whole allocation that contains `devPtr`.
void memory_register(void const* devPtr,
                     int flags                                = 0,
                     std::vector<int> const& errors_to_ignore = {});

/// @brief buffer_deregister() of the whole allocation that contains `devPtr`.
void memory_deregister(void const* devPtr);

}  // namespace kvikio
