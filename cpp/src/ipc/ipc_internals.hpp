/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file ipc/ipc_internals.hpp
 * @brief Internals of the IPC handle caches that several of its files (and tests) share.
 */

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda.h>

#include <kvikio/ipc.hpp>

namespace kvikio::ipc::detail {

/// @brief 64-bit FNV-1a of `size` bytes.
[[nodiscard]] std::uint64_t fnv1a(void const* data, std::size_t size) noexcept;

/// @brief Sets the magic number, version and checksum of a filled-in handle.
void seal(IpcHandle& h) noexcept;
void seal(IpcEventHandle& h) noexcept;

/// @brief Throws std::invalid_argument (prefixed with `what`) unless `h` is a sealed handle of
/// this version whose range lies inside its allocation.
void check_handle(IpcHandle const& h, std::string const& what);
void check_handle(IpcEventHandle const& h, std::string const& what);

/// @brief The UUID of device `ordinal` (cached).
[[nodiscard]] std::array<std::uint8_t, 16> device_uuid(int ordinal);

/// @brief The primary context of the device with this UUID.
/// @throws std::invalid_argument if no device of this process has it.
[[nodiscard]] CUcontext context_of_device(std::array<std::uint8_t, 16> const& uuid);

/// @brief Throws CUfileException (prefixed with `what`) unless the allocation a handle of this
/// process names is still the one it was made from (same start, size and buffer id): a handle
/// outlives its allocation, and the address may hold another one by now.
void check_own_allocation(IpcHandle const& h, std::string const& what);

/// @brief Empties the export cache and zeroes its counters (for ipc::clear()).
void clear_export_cache();

}  // namespace kvikio::ipc::detail
