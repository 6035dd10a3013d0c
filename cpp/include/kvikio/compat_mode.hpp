/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file compat_mode.hpp
 * @brief Compatibility mode: whether I/O goes through cuFile (GDS) or POSIX.
 */

#include <cstdint>
#include <string_view>

namespace kvikio {

/**
 * @brief Compatibility mode requested by the user.
 *
 * - `OFF`: use cuFile; an error if it is unavailable.
 * - `ON`: use POSIX I/O (with bounce buffers for device memory); cuFile is never loaded.
 * - `AUTO`: use cuFile when `libcufile.so.0` loads and works, else POSIX.
 */
enum class CompatMode : uint8_t {
  OFF,
  ON,
  AUTO,
};

namespace detail {
/**
 * @brief Parses a compat mode, case-insensitively: `on|true|yes|1`, `off|false|no|0`, `auto`.
 *
 * @throws std::invalid_argument naming the value and the accepted spellings.
 */
CompatMode parse_compat_mode_str(std::string_view compat_mode_str);
}  // namespace detail

}  // namespace kvikio
