/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/string_utils.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <iomanip>
#include <sstream>
#include <string_view>

namespace kvikio::detail {
namespace {

// "<sign><magnitude> <unit>". The stream takes the global locale, as these are read by people;
// under a decimal-comma locale there is no '.', so nothing is trimmed.
std::string compose(bool negative,
                    double magnitude,
                    std::string_view unit,
                    int num_decimals,
                    TrimZeroFraction trim_zero_fraction)
{
  std::ostringstream number;
  number << std::fixed << std::setprecision(num_decimals) << magnitude;
  std::string text = number.str();
  if (trim_zero_fraction == TrimZeroFraction::YES) {
    auto const point = text.find('.');
    if (point != std::string::npos && text.find_first_not_of('0', point + 1) == std::string::npos) {
      text.erase(point);
    }
  }
  std::string out;
  out.reserve(text.size() + unit.size() + 2);
  if (negative) { out += '-'; }
  out += text;
  out += ' ';
  out += unit;
  return out;
}

}  // namespace

std::string format_nbytes(std::uint64_t nbytes,
                          int num_decimals,
                          TrimZeroFraction trim_zero_fraction)
{
  constexpr std::array<std::string_view, 9> units{
    "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  auto value      = static_cast<double>(nbytes);
  std::size_t idx = 0;
  while (value >= 1024.0 && idx + 1 < units.size()) {
    value /= 1024.0;
    ++idx;
  }
  return compose(false, value, units[idx], num_decimals, trim_zero_fraction);
}

std::string format_rate(double bytes_per_sec, int num_decimals, TrimZeroFraction trim_zero_fraction)
{
  constexpr std::array<std::string_view, 6> units{"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"};
  auto value      = std::abs(bytes_per_sec);
  std::size_t idx = 0;
  // An infinite rate would never stop dividing; it stays in B/s, as does NaN.
  if (std::isfinite(value)) {
    while (value >= 1000.0 && idx + 1 < units.size()) {
      value /= 1000.0;
      ++idx;
    }
  }
  return compose(bytes_per_sec < 0.0, value, units[idx], num_decimals, trim_zero_fraction);
}

std::string format_duration(Duration duration,
                            int num_decimals,
                            TrimZeroFraction trim_zero_fraction)
{
  struct Unit {
    std::string_view name;
    std::uint64_t ns;
  };
  constexpr std::uint64_t second = 1'000'000'000;
  constexpr std::array<Unit, 3> above_second{
    Unit{"d", 86'400 * second}, Unit{"h", 3'600 * second}, Unit{"min", 60 * second}};
  constexpr std::array<Unit, 3> below_second{
    Unit{"ms", 1'000'000}, Unit{"us", 1'000}, Unit{"ns", 1}};
  auto const count    = duration.count();
  bool const negative = count < 0;
  // In unsigned arithmetic, so that the most negative count has a magnitude too.
  std::uint64_t const magnitude = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(count)
                                           : static_cast<std::uint64_t>(count);
  // The largest unit the magnitude reaches; seconds when it reaches none (zero included).
  Unit unit{"s", second};
  for (auto const& candidate : magnitude >= second ? above_second : below_second) {
    if (magnitude >= candidate.ns) {
      unit = candidate;
      break;
    }
  }
  auto const value = static_cast<double>(magnitude) / static_cast<double>(unit.ns);
  return compose(negative, value, unit.name, num_decimals, trim_zero_fraction);
}

}  // namespace kvikio::detail
