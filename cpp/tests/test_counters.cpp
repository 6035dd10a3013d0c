/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The process-wide counters: differencing every field without wrapping, the recording
 * functions and ScopedTimer, and the report and JSON of a reading.
 */
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <kvikio/statistics/counters.hpp>

using kvikio::statistics::Counters;
using kvikio::statistics::counters;
using kvikio::statistics::ReportRows;
using namespace std::chrono_literals;

namespace {

using Words = std::array<std::uint64_t, 8>;

Counters from_words(Words const& words) { return std::bit_cast<Counters>(words); }
Words to_words(Counters const& c) { return std::bit_cast<Words>(c); }

bool contains(std::string const& text, std::string const& part)
{
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(Counters, every_counter_is_differenced_and_none_of_them_wrap)
{
  EXPECT_TRUE(counters().since(counters()).empty());
  static_assert(sizeof(Counters) == sizeof(Words));

  Words later{};
  Words earlier{};
  for (std::size_t i = 0; i < later.size(); ++i) {
    later[i]   = (i + 1) * 10;
    earlier[i] = i + 1;
  }
  auto const forward = to_words(from_words(later).since(from_words(earlier)));
  for (std::size_t i = 0; i < forward.size(); ++i) {
    EXPECT_EQ(forward[i], (i + 1) * 9) << "word " << i;
  }
  // Backwards, each field saturates at zero rather than wrapping.
  EXPECT_TRUE(from_words(earlier).since(from_words(later)).empty());

  Counters one;
  one.http_retries = 7;
  auto const d     = one.since(Counters{});
  EXPECT_EQ(d.http_retries, 7U);
  EXPECT_EQ(d.http_connections, 0U);
  EXPECT_FALSE(d.empty());
}

TEST(Counters, each_field_alone_makes_a_reading_non_empty)
{
  for (std::size_t i = 0; i < 8; ++i) {
    Words words{};
    words[i] = 1;
    EXPECT_FALSE(from_words(words).empty()) << "word " << i;
  }
}

TEST(Counters, the_recorders_add_to_the_process_totals)
{
  auto const before = counters();
  kvikio::detail::count_remote_size_probe(3ms);
  kvikio::detail::count_http_connection(2, 1ms, 2ms, 3ms);
  kvikio::detail::count_http_connection(0, 0ns, 0ns, 0ns);  // a reused connection
  kvikio::detail::count_http_retry(500ms);
  kvikio::detail::count_http_retry(1s);
  auto const d = counters().since(before);
  EXPECT_EQ(d.remote_size_probes, 1U);
  EXPECT_EQ(d.remote_size_probing, 3ms);
  EXPECT_EQ(d.http_connections, 2U);
  EXPECT_EQ(d.http_dns, 1ms);
  EXPECT_EQ(d.http_tcp, 2ms);
  EXPECT_EQ(d.http_tls, 3ms);
  EXPECT_EQ(d.http_retries, 2U);
  EXPECT_EQ(d.http_retry_backoff, 1500ms);
}

TEST(Counters, a_scoped_timer_records_however_the_scope_is_left)
{
  auto const before = counters();
  {
    kvikio::detail::ScopedTimer const timer{kvikio::detail::count_remote_size_probe};
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_THROW(
    {
      kvikio::detail::ScopedTimer const timer{kvikio::detail::count_remote_size_probe};
      throw std::runtime_error("probe failed");
    },
    std::runtime_error);
  auto const d = counters().since(before);
  EXPECT_EQ(d.remote_size_probes, 2U);
  EXPECT_GE(d.remote_size_probing, 2ms);

  kvikio::Duration seen{-1};
  {
    kvikio::detail::ScopedTimer const timer{[&](kvikio::Duration took) { seen = took; }};
  }
  EXPECT_GE(seen, 0ns);
}

TEST(Counters, a_reading_formats_only_what_was_paid_for)
{
  EXPECT_EQ(Counters{}.report(), "");
  EXPECT_TRUE(contains(Counters{}.report(ReportRows::ALL), "http"));
  EXPECT_EQ(Counters{}.report(ReportRows::ALL),
            "  http size probes     0 probes, 0 s\n"
            "  http handshake       0 connections, 0 s dns, 0 s tcp, 0 s tls\n"
            "  http retries         0 retries, 0 s backoff\n");

  Counters c;
  c.remote_size_probes  = 12;
  c.remote_size_probing = 600ms;
  c.http_connections    = 128;
  c.http_dns            = 40ms;
  c.http_tcp            = 900ms;
  c.http_tls            = 1900ms;
  c.http_retries        = 7;
  c.http_retry_backoff  = 1200ms;
  auto const report     = c.report();
  EXPECT_TRUE(contains(report, "  http size probes     12 probes, 600 ms\n")) << report;
  EXPECT_TRUE(contains(report, "128 connections, 40 ms dns, 900 ms tcp, 1.90 s tls")) << report;
  EXPECT_TRUE(contains(report, "  http retries         7 retries, 1.20 s backoff\n")) << report;

  auto const json = c.to_json();
  EXPECT_TRUE(contains(json, "\"http_retries\": 7")) << json;
  EXPECT_TRUE(contains(json, "\"http_retry_backoff_ns\": 1200000000")) << json;
  EXPECT_TRUE(contains(Counters{}.to_json(), "\"http_connections\": 0"));
}

TEST(Counters, the_json_has_every_key_in_order)
{
  Counters c;
  c.remote_size_probes  = 1;
  c.remote_size_probing = 7677954ns;
  c.http_connections    = 5;
  c.http_dns            = 110us;
  c.http_tcp            = 508us;
  EXPECT_EQ(c.to_json(),
            "{\"remote_size_probes\": 1, \"remote_size_probing_ns\": 7677954, "
            "\"http_connections\": 5, \"http_dns_ns\": 110000, \"http_tcp_ns\": 508000, "
            "\"http_tls_ns\": 0, \"http_retries\": 0, \"http_retry_backoff_ns\": 0}");
}
