/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Summary as a value: derived quantities, since() (intervals that partition a run, and the
 * readings it refuses), the span's share of the counters, the report's and the JSON's exact
 * layout (whatever the global locale), and serialize()/deserialize() with every kind of bytes
 * it refuses. SummaryMonitor's counting is in test_summary_monitor.cpp.
 */
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <locale>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/statistics/summary.hpp>

#include "common/recorded_io.hpp"

using kvikio::IoBackend;
using kvikio::TimePoint;
using kvikio::statistics::ReportRows;
using kvikio::statistics::Summary;
using kvikio::statistics::SummaryMonitor;
using kvikio::test::contains;
using kvikio::test::operation;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t n = 1 << 20;

// A local run with a failed write, as upstream 26.10 reported it.
Summary local_run()
{
  Summary s;
  s.anchor.wall       = std::chrono::system_clock::time_point{1796675677049157171ns};
  s.end               = s.start + 3439548ns;
  s.num_ops           = 5;
  s.num_reads         = 3;
  s.num_writes        = 2;
  s.bytes_requested   = 16780800;
  s.bytes_transferred = 16779776;
  s.bytes_read        = 16778752;
  s.bytes_written     = 1024;
  s.num_errors        = 1;
  s.by_backend[static_cast<std::size_t>(IoBackend::POSIX)] = {4, 16778240, 3298991ns, 1};
  s.by_backend[static_cast<std::size_t>(IoBackend::MMAP)]  = {1, 1536, 7932ns, 0};
  s.total_duration                                         = 3306923ns;
  s.busy                                                   = 3306923ns;
  return s;
}

std::string const head =
  "KvikIO I/O summary\n"
  "  wall time            0 s\n"
  "  busy time            0 s (0.00 % of the wall time)\n"
  "  busy bandwidth       0 B/s\n"
  "  operations           0 (0 read, 0 write)\n"
  "  mean duration        0 s\n"
  "  bytes                0 B of 0 B requested (0 B read, 0 B written)\n"
  "  errors               0\n";

void expect_invalid_argument(auto&& call, std::string const& message)
{
  try {
    call();
    ADD_FAILURE() << "no exception; expected: " << message;
  } catch (std::invalid_argument const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(what.ends_with(message)) << what;
  }
}

std::string const not_a_reading =
  "`previous` must be an earlier reading of the same span, from `get()` rather than from "
  "`since()`";

struct DecimalComma : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

}  // namespace

TEST(Summary, the_report_has_a_fixed_layout)
{
  EXPECT_EQ(local_run().report(),
            "KvikIO I/O summary\n"
            "  wall time            3.44 ms\n"
            "  busy time            3.31 ms (96.14 % of the wall time)\n"
            "  busy bandwidth       5.07 GB/s\n"
            "  operations           5 (3 read, 2 write)\n"
            "  mean duration        661.38 us\n"
            "  bytes                16 MiB of 16 MiB requested (16 MiB read, 1 KiB written)\n"
            "  errors               1\n"
            "  backend POSIX        16 MiB in 4 ops, 3.30 ms, 5.09 GB/s, 1 failed\n"
            "  backend MMAP         1.50 KiB in 1 ops, 7.93 us, 193.65 MB/s\n");
  EXPECT_EQ(Summary{}.report(), head);
  EXPECT_EQ(Summary{}.report(ReportRows::ALL),
            head +
              "  backend POSIX        unused\n"
              "  backend GDS          unused\n"
              "  backend MMAP         unused\n"
              "  backend REMOTE_HTTP  unused\n"
              "  backend REMOTE_HDFS  unused\n"
              "  http size probes     0 probes, 0 s\n"
              "  http handshake       0 connections, 0 s dns, 0 s tcp, 0 s tls\n"
              "  http retries         0 retries, 0 s backoff\n");
  Summary failed;
  failed.by_backend[0] = {1, 0, 101ns, 1};
  EXPECT_TRUE(
    contains(failed.report(), "  backend POSIX        0 B in 1 ops, 101 ns, 0 B/s, 1 failed\n"));
}

TEST(Summary, the_json_has_every_key_in_a_fixed_order)
{
  std::string const zero_backend =
    "{\"num_ops\": 0, \"bytes_transferred\": 0, \"total_duration_ns\": 0, \"num_errors\": 0}";
  EXPECT_EQ(local_run().to_json(),
            "{\"start_unix_ns\": 1796675677049157171, \"end_unix_ns\": 1796675677052596719, "
            "\"wall_ns\": 3439548, \"num_ops\": 5, \"num_reads\": 3, \"num_writes\": 2, "
            "\"bytes_requested\": 16780800, \"bytes_transferred\": 16779776, "
            "\"bytes_read\": 16778752, \"bytes_written\": 1024, \"num_errors\": 1, "
            "\"busy_ns\": 3306923, \"total_duration_ns\": 3306923, "
            "\"busy_bytes_per_sec\": 5.07414e+09, \"busy_fraction\": 0.961441, "
            "\"mean_duration_ns\": 661384, \"counters\": " +
              kvikio::statistics::Counters{}.to_json() +
              ", \"by_backend\": {\"POSIX\": {\"num_ops\": 4, \"bytes_transferred\": 16778240, "
              "\"total_duration_ns\": 3298991, \"num_errors\": 1}, \"GDS\": " +
              zero_backend +
              ", \"MMAP\": {\"num_ops\": 1, \"bytes_transferred\": 1536, "
              "\"total_duration_ns\": 7932, \"num_errors\": 0}, \"REMOTE_HTTP\": " +
              zero_backend + ", \"REMOTE_HDFS\": " + zero_backend + "}}");
  auto const empty = Summary{}.to_json();
  EXPECT_TRUE(empty.starts_with("{\"start_unix_ns\": 0, \"end_unix_ns\": 0, \"wall_ns\": 0,"));
  EXPECT_TRUE(contains(empty, "\"busy_bytes_per_sec\": 0, \"busy_fraction\": 0,"));
}

TEST(Summary, json_survives_a_locale_with_a_decimal_comma)
{
  SummaryMonitor const monitor;
  operation(n, n, IoBackend::POSIX, kvikio::TransferDirection::READ, 1ms);
  std::this_thread::sleep_for(1ms);
  auto const s        = monitor.get();
  auto const previous = std::locale::global(std::locale{std::locale::classic(), new DecimalComma});
  auto const json     = s.to_json();
  auto const report   = s.report();
  std::locale::global(previous);
  EXPECT_TRUE(contains(json, "\"busy_fraction\": 0.")) << json;
  EXPECT_TRUE(contains(json, "\"bytes_transferred\": 1048576,")) << json;
  // The report is for people, in their locale: there the zero fraction is kept.
  EXPECT_TRUE(contains(report, "1,00 MiB of 1,00 MiB requested")) << report;
}

TEST(Summary, derived_values_of_an_empty_or_reversed_span_are_zero)
{
  Summary s;
  s.start = TimePoint{} + 10s;  // after `end`, as reset() leaves a stopped monitor
  s.busy  = 1s;
  EXPECT_EQ(s.wall(), 0ns);
  EXPECT_EQ(s.busy_fraction(), 0.0);
  EXPECT_EQ(s.mean_duration(), 0ns);
  EXPECT_EQ(s.busy_bytes_per_sec(), 0.0);
  s.num_ops           = 3;
  s.total_duration    = 10ns;
  s.bytes_transferred = 500;
  s.busy              = 250ms;
  EXPECT_EQ(s.mean_duration(), 3ns);  // whole nanoseconds
  EXPECT_DOUBLE_EQ(s.busy_bytes_per_sec(), 2000.0);
}

TEST(Summary, an_interval_is_the_difference_and_never_negative)
{
  auto const later              = local_run();
  auto earlier                  = later;
  earlier.end                   = later.start + 1ms;
  earlier.num_ops               = 2;
  earlier.by_backend[0].num_ops = 9;  // more than `later`: saturates, not wraps
  earlier.busy                  = 1ms;
  earlier.counters.http_retries = 3;
  auto const d                  = later.since(earlier);
  EXPECT_EQ(d.start, earlier.end);
  EXPECT_EQ(d.end, later.end);
  EXPECT_EQ(d.anchor.wall, later.anchor.wall);
  EXPECT_EQ(d.num_ops, 3U);
  EXPECT_EQ(d.num_reads, 0U);
  EXPECT_EQ(d.by_backend[0].num_ops, 0U);
  EXPECT_EQ(d.busy, later.busy - 1ms);
  EXPECT_EQ(d.counters.http_retries, 0U);
}

TEST(Summary, consecutive_intervals_partition_the_run)
{
  SummaryMonitor const monitor;
  operation(n, n);
  std::vector<Summary> readings{monitor.get()};
  for (int tick = 0; tick < 3; ++tick) {
    operation(n, n);
    readings.push_back(monitor.get());
  }
  auto const& first = readings.front();
  auto const& last  = readings.back();
  std::vector<Summary> intervals;
  for (std::size_t i = 1; i < readings.size(); ++i) {
    intervals.push_back(readings[i].since(readings[i - 1]));
  }
  auto const& one = intervals.front();
  EXPECT_EQ(one.num_ops, 1U);
  EXPECT_EQ(one.num_reads, 1U);
  EXPECT_EQ(one.bytes_transferred, n);
  EXPECT_LE(one.busy, last.busy);
  EXPECT_LT(one.total_duration, last.total_duration);
  Summary sum;
  for (auto const& interval : intervals) {
    sum.num_ops += interval.num_ops;
    sum.bytes_transferred += interval.bytes_transferred;
    sum.total_duration += interval.total_duration;
    sum.busy += interval.busy;
  }
  EXPECT_EQ(sum.num_ops, last.num_ops - first.num_ops);
  EXPECT_EQ(sum.bytes_transferred, last.bytes_transferred - first.bytes_transferred);
  EXPECT_EQ(sum.total_duration, last.total_duration - first.total_duration);
  EXPECT_EQ(sum.busy, last.busy - first.busy);
  EXPECT_EQ(intervals.front().start, first.end);
  EXPECT_EQ(intervals.back().end, last.end);
  for (std::size_t i = 1; i < intervals.size(); ++i) {
    EXPECT_EQ(intervals[i].start, intervals[i - 1].end);
  }
}

TEST(Summary, since_refuses_a_baseline_it_cannot_subtract)
{
  SummaryMonitor monitor;
  operation(n, n);
  auto const first = monitor.get();
  operation(n, n);
  auto const interval = monitor.since(first);
  EXPECT_EQ(interval.num_ops, 1U);
  expect_invalid_argument([&] { (void)monitor.since(interval); }, not_a_reading);
  SummaryMonitor const other;
  expect_invalid_argument([&] { (void)other.since(first); }, not_a_reading);
  auto const later = monitor.get();
  expect_invalid_argument([&] { (void)first.since(later); }, not_a_reading);
  monitor.reset();
  expect_invalid_argument([&] { (void)monitor.since(first); }, not_a_reading);
}

TEST(Summary, a_span_that_did_remote_io_reports_the_http_rows_even_when_they_are_zero)
{
  SummaryMonitor const monitor;
  operation(n, n, IoBackend::REMOTE_HTTP);
  auto const s = monitor.get();
  EXPECT_TRUE(s.counters.empty());
  EXPECT_TRUE(contains(s.report(), "  http handshake       0 connections")) << s.report();
  EXPECT_TRUE(contains(s.report(), "  http retries         0 retries")) << s.report();
  EXPECT_FALSE(contains(Summary{}.report(), "http"));
}

TEST(Summary, what_arrived_is_reported_against_what_was_asked_for)
{
  SummaryMonitor const monitor;
  operation(1024, 1024);
  EXPECT_TRUE(contains(monitor.get().report(), "  bytes                1 KiB of 1 KiB requested"));
  operation(1024, 768);
  auto const s = monitor.get();
  EXPECT_EQ(s.bytes_requested, 2048U);
  EXPECT_EQ(s.bytes_transferred, 1792U);
  EXPECT_TRUE(contains(s.report(), "  bytes                1.75 KiB of 2 KiB requested"));
}

TEST(Summary, a_summary_survives_a_round_trip_through_bytes)
{
  SummaryMonitor const monitor;
  operation(n, n);
  auto const s     = monitor.get();
  auto const bytes = s.serialize();
  ASSERT_EQ(bytes.size(), 352U);
  std::vector<std::byte> const header{std::byte{'K'},
                                      std::byte{'V'},
                                      std::byte{'S'},
                                      std::byte{'M'},
                                      std::byte{2},
                                      std::byte{0},
                                      std::byte{0},
                                      std::byte{0},
                                      std::byte{0x50},
                                      std::byte{1},
                                      std::byte{0},
                                      std::byte{0}};
  EXPECT_TRUE(std::equal(header.begin(), header.end(), bytes.begin()));
  auto const back = Summary::deserialize(bytes);
  EXPECT_EQ(back.serialize(), bytes);
  EXPECT_EQ(back.report(), s.report());
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(back.start, s.start);
  EXPECT_EQ(back.end, s.end);
  operation(n, n);
  EXPECT_EQ(monitor.since(back).num_ops, 1U);  // still a reading of the monitor's span
}

TEST(Summary, bytes_that_are_not_a_summary_are_refused)
{
  auto const good   = local_run().serialize();
  auto const broken = [&](auto&& change) {
    auto bytes = good;
    change(bytes);
    return bytes;
  };
  std::string const what = "not a serialized kvikio::statistics::Summary: ";
  expect_invalid_argument([] { (void)Summary::deserialize({}); }, what + "wrong length");
  auto const shorter = broken([](auto& b) { b.pop_back(); });
  expect_invalid_argument([&] { (void)Summary::deserialize(shorter); }, what + "wrong length");
  auto const magic = broken([](auto& b) { b[0] = std::byte{'X'}; });
  expect_invalid_argument([&] { (void)Summary::deserialize(magic); }, what + "wrong magic");
  auto const version = broken([](auto& b) { b[4] = std::byte{99}; });
  expect_invalid_argument([&] { (void)Summary::deserialize(version); },
                          "serialized kvikio::statistics::Summary from a different build of "
                          "KvikIO, version 99 of 336 bytes against version 2 of 336");
  auto const swapped = broken([](auto& b) {
    std::swap(b[12], b[15]);
    std::swap(b[13], b[14]);
  });
  expect_invalid_argument([&] { (void)Summary::deserialize(swapped); },
                          "serialized kvikio::statistics::Summary written on a machine of a "
                          "different byte order, which this format does not translate");
}

TEST(Summary, the_internal_costs_are_those_of_the_span)
{
  kvikio::detail::count_http_retry(1s);  // before the span
  SummaryMonitor monitor;
  operation(n, n);
  auto const s = monitor.get();
  EXPECT_TRUE(s.counters.empty());
  EXPECT_FALSE(contains(s.report(), "size probes"));
  EXPECT_TRUE(contains(s.to_json(), "\"counters\": {"));
  kvikio::detail::count_http_retry(500ms);
  EXPECT_EQ(monitor.get().counters.http_retries, 1U);
  EXPECT_EQ(monitor.get().counters.http_retry_backoff, 500ms);
  EXPECT_TRUE(contains(monitor.get().report(), "  http retries         1 retries, 500 ms backoff"));
  monitor.reset();
  EXPECT_TRUE(monitor.get().counters.empty());
  kvikio::detail::count_http_retry(500ms);
  monitor.stop();
  kvikio::detail::count_http_retry(500ms);  // after the span
  EXPECT_EQ(monitor.get().counters.http_retries, 1U);
}

TEST(Summary, the_report_is_human_readable)
{
  kvikio::test::HostFile file{n};
  SummaryMonitor const monitor;
  ASSERT_EQ(file.read(), n);
  auto const s      = monitor.get();
  auto const report = s.report();
  EXPECT_TRUE(report.starts_with("KvikIO I/O summary\n"));
  for (auto const* label : {"wall time",
                            "busy time",
                            "busy bandwidth",
                            "operations",
                            "mean duration",
                            "bytes",
                            "errors",
                            "MiB",
                            "% of the wall time"}) {
    EXPECT_TRUE(contains(report, label)) << label << " in\n" << report;
  }
  auto const json = s.to_json();
  EXPECT_TRUE(contains(json, "\"num_ops\": 1,"));
  EXPECT_TRUE(contains(json, "\"start_unix_ns\""));
  EXPECT_TRUE(contains(json, "\"busy_ns\""));
  EXPECT_FALSE(contains(json, "\"start_ns\""));
  auto const now_unix   = std::chrono::system_clock::now().time_since_epoch();
  auto const start_unix = s.anchor.to_wall_clock(s.start).time_since_epoch();
  EXPECT_LT(now_unix - start_unix, 60s);
}
