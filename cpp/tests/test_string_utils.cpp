/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The report's number formatting: sizes in binary units, rates in decimal units, durations in
 * the unit they reach, the zero-fraction trim, signs, and the global locale.
 */
#include <chrono>
#include <cstdint>
#include <limits>
#include <locale>

#include <gtest/gtest.h>

#include <kvikio/detail/string_utils.hpp>

using kvikio::detail::format_duration;
using kvikio::detail::format_nbytes;
using kvikio::detail::format_rate;
using kvikio::detail::TrimZeroFraction;
using namespace std::chrono_literals;

TEST(StringUtils, byte_counts_step_by_1024)
{
  EXPECT_EQ(format_nbytes(0), "0 B");
  EXPECT_EQ(format_nbytes(1023), "1023 B");
  EXPECT_EQ(format_nbytes(1024), "1 KiB");
  EXPECT_EQ(format_nbytes(1536), "1.50 KiB");
  EXPECT_EQ(format_nbytes(std::uint64_t{1} << 20), "1 MiB");
  EXPECT_EQ(format_nbytes(std::uint64_t{1} << 30), "1 GiB");
  EXPECT_EQ(format_nbytes(std::numeric_limits<std::uint64_t>::max()), "16 EiB");
  EXPECT_EQ(format_nbytes(std::uint64_t{1} << 63), "8 EiB");
}

TEST(StringUtils, the_fraction_is_trimmed_only_when_asked_and_only_when_zero)
{
  EXPECT_EQ(format_nbytes(1024, 2, TrimZeroFraction::NO), "1.00 KiB");
  EXPECT_EQ(format_nbytes(1536, 0), "2 KiB");
  EXPECT_EQ(format_nbytes(1536, 3), "1.500 KiB");
  EXPECT_EQ(format_duration(243'800'000ns), "243.80 ms");
}

TEST(StringUtils, rates_step_by_1000)
{
  EXPECT_EQ(format_rate(0.0), "0 B/s");
  EXPECT_EQ(format_rate(999.0), "999 B/s");
  EXPECT_EQ(format_rate(1500.0), "1.50 kB/s");
  EXPECT_EQ(format_rate(1.34e9), "1.34 GB/s");
  EXPECT_EQ(format_rate(-2e6), "-2 MB/s");
  EXPECT_EQ(format_rate(3e18), "3000 PB/s");
}

TEST(StringUtils, a_rate_that_is_not_finite_stays_in_bytes_per_second)
{
  auto const inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(format_rate(inf), "inf B/s");
  EXPECT_EQ(format_rate(-inf), "-inf B/s");
}

TEST(StringUtils, durations_take_the_unit_they_reach)
{
  EXPECT_EQ(format_duration(0ns), "0 s");
  EXPECT_EQ(format_duration(1ns), "1 ns");
  EXPECT_EQ(format_duration(500ns), "500 ns");
  EXPECT_EQ(format_duration(1500ns), "1.50 us");
  EXPECT_EQ(format_duration(1ms), "1 ms");
  EXPECT_EQ(format_duration(999'999'999ns), "1000 ms");  // rounds up, stays in ms
  EXPECT_EQ(format_duration(1s), "1 s");
  EXPECT_EQ(format_duration(1900ms), "1.90 s");
  EXPECT_EQ(format_duration(59s), "59 s");
  EXPECT_EQ(format_duration(60s), "1 min");
  EXPECT_EQ(format_duration(90s), "1.50 min");
  EXPECT_EQ(format_duration(2h), "2 h");
  EXPECT_EQ(format_duration(25h), "1.04 d");
}

TEST(StringUtils, a_negative_duration_keeps_its_sign)
{
  EXPECT_EQ(format_duration(-1500ns), "-1.50 us");
  EXPECT_EQ(format_duration(-90s), "-1.50 min");
  // The most negative count has no positive counterpart in the same type.
  EXPECT_EQ(format_duration(kvikio::Duration::min()).front(), '-');
}

namespace {

struct DecimalComma : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
};

// Sets the global locale for one test, and puts the previous one back.
class GlobalLocale {
 public:
  explicit GlobalLocale(std::locale const& locale) : previous_{std::locale::global(locale)} {}
  ~GlobalLocale() { std::locale::global(previous_); }
  GlobalLocale(GlobalLocale const&)            = delete;
  GlobalLocale& operator=(GlobalLocale const&) = delete;

 private:
  std::locale previous_;
};

}  // namespace

TEST(StringUtils, numbers_follow_the_global_locale)
{
  GlobalLocale const comma{std::locale{std::locale::classic(), new DecimalComma}};
  EXPECT_EQ(format_duration(1380ns), "1,38 us");
  // The trim looks for a '.', so a comma's zero fraction stays.
  EXPECT_EQ(format_nbytes(256), "256,00 B");
}
