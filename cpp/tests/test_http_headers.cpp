/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * remote/http_headers: reading what a server's headers say, strictly (the fuzz target
 * fuzz_content_range drives it with arbitrary lines).
 */
#include <stdexcept>

#include <gtest/gtest.h>

#include "remote/http_headers.hpp"

namespace {

TEST(HttpHeaders, ServerNumbersAreDecimalDigitsOnly)
{
  using kvikio::detail::decimal_length;
  EXPECT_EQ(decimal_length("0"), 0U);
  EXPECT_EQ(decimal_length("1234"), 1234U);
  EXPECT_EQ(decimal_length("18446744073709551615"), 18446744073709551615ULL);
  for (char const* bad :
       {"", "1e3", "0x10", "12abc", "+5", "-1", " 1", "1 ", "18446744073709551616", "1.0"}) {
    EXPECT_EQ(decimal_length(bad), std::nullopt) << bad;
  }
}

TEST(HttpHeaders, ContentRangeLengthsAreTheirDigits)
{
  using kvikio::detail::content_range_length;
  EXPECT_EQ(content_range_length("bytes 0-0/1234"), 1234U);
  for (char const* bad : {"bytes 0-0/1e3", "bytes 0-0/0x10", "bytes 0-0/*", "bytes 0-0/", "0"}) {
    EXPECT_THROW((void)content_range_length(bad), std::runtime_error) << bad;
  }
}

}  // namespace
