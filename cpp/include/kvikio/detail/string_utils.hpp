/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/string_utils.hpp
 * @brief Sizes, rates and durations as people read them ("1.50 KiB", "5.07 GB/s", "243.80 ms"),
 * for reports such as kvikio::statistics::Summary::report().
 *
 * The number is printed with a fixed count of decimals through a stream of the global locale,
 * so a program that set a decimal-comma locale reads "1,50 us". Text meant for other programs
 * (JSON) does not come from here.
 */

#include <cstdint>
#include <string>

#include <kvikio/observation.hpp>

namespace kvikio::detail {

/// @brief Whether a fraction of nothing but zeros is printed ("1.00 KiB") or left out ("1 KiB").
enum class TrimZeroFraction : std::uint8_t {
  NO,  ///< print every decimal
  YES  ///< drop the decimal point and the decimals when they are all zero
};

/**
 * @brief A byte count in binary units: B, KiB, MiB, ... YiB (a step every 1024).
 *
 * `1536` gives "1.50 KiB", `1024` gives "1 KiB" (or "1.00 KiB" with TrimZeroFraction::NO).
 *
 * @param nbytes the count; unsigned, since a count past `INT64_MAX` is not a negative one.
 * @param num_decimals decimals after the point.
 * @param trim_zero_fraction whether an all-zero fraction is dropped.
 * @return "<number> <unit>".
 */
[[nodiscard]] std::string format_nbytes(
  std::uint64_t nbytes,
  int num_decimals                    = 2,
  TrimZeroFraction trim_zero_fraction = TrimZeroFraction::YES);

/**
 * @brief A throughput in decimal units: B/s, kB/s, MB/s, GB/s, TB/s, PB/s (a step every 1000,
 * as storage and networks quote it). A negative rate keeps its sign; an infinite or NaN one is
 * printed in B/s.
 *
 * @param bytes_per_sec the rate.
 * @param num_decimals decimals after the point.
 * @param trim_zero_fraction whether an all-zero fraction is dropped.
 * @return "<number> <unit>", e.g. "1.34 GB/s".
 */
[[nodiscard]] std::string format_rate(double bytes_per_sec,
                                      int num_decimals                    = 2,
                                      TrimZeroFraction trim_zero_fraction = TrimZeroFraction::YES);

/**
 * @brief A duration in the largest of d, h, min that it reaches; below a second, in the largest
 * of ms, us, ns that it reaches; otherwise (zero included) in s. A negative duration (a signed
 * difference) keeps its sign.
 *
 * @param duration the duration.
 * @param num_decimals decimals after the point.
 * @param trim_zero_fraction whether an all-zero fraction is dropped.
 * @return "<number> <unit>", e.g. "1.50 min" for 90 s, "0 s" for zero.
 */
[[nodiscard]] std::string format_duration(
  Duration duration,
  int num_decimals                    = 2,
  TrimZeroFraction trim_zero_fraction = TrimZeroFraction::YES);

}  // namespace kvikio::detail
