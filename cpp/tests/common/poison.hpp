/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvikio::test {

/// The byte every destination is filled with before a transfer: not zero (a transfer that wrote
/// zeros, or nothing, must not pass) and not a byte the tests' content patterns repeat.
inline constexpr std::uint8_t poison = 0xEE;

/// The poisoned bytes kept on each side of a destination, checked untouched after a transfer.
inline constexpr std::size_t guard = 64;

}  // namespace kvikio::test
