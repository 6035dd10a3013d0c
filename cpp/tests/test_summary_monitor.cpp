/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * SummaryMonitor: what a monitor counts and what it ignores, busy time against timestamps
 * delivered by hand and completions reported out of order, reset() and stop(), and the
 * destruction callback. Most operations come from the recorder the library's calls use; a
 * few are real host reads and writes.
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/statistics/summary.hpp>

#include "common/recorded_io.hpp"

using kvikio::IoBackend;
using kvikio::Observation;
using kvikio::TimePoint;
using kvikio::TransferDirection;
using kvikio::statistics::ReportRows;
using kvikio::statistics::Summary;
using kvikio::statistics::SummaryMonitor;
using kvikio::test::begin_operation;
using kvikio::test::contains;
using kvikio::test::HostFile;
using kvikio::test::operation;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t n = 1 << 20;

// Delivers by hand the start (end and bytes still zero) or the finish of an operation.
void deliver(bool finish, TimePoint start, TimePoint end = {})
{
  Observation o;
  o.start             = start;
  o.end               = end;
  o.size              = 8;
  o.bytes_transferred = finish ? 8 : 0;
  finish ? kvikio::detail::notify_finished(o) : kvikio::detail::notify_started(o);
}
void started(TimePoint start) { deliver(false, start); }
void finished(TimePoint start, TimePoint end) { deliver(true, start, end); }

// The index of `backend` in Summary::by_backend.
std::size_t slot(IoBackend backend = IoBackend::POSIX) { return static_cast<std::size_t>(backend); }

}  // namespace

TEST(SummaryMonitor, a_monitor_counts_the_calls_it_spans)
{
  HostFile file{n};
  SummaryMonitor const monitor;
  ASSERT_EQ(file.write(), n);
  ASSERT_EQ(file.read(), n);
  ASSERT_EQ(file.read(), n);
  auto const s = monitor.get();
  EXPECT_EQ(s.num_ops, 3U);
  EXPECT_EQ(s.bytes_requested, 3 * n);
  EXPECT_EQ(s.bytes_transferred, 3 * n);
  EXPECT_EQ(s.num_errors, 0U);
  EXPECT_EQ(s.num_reads, 2U);
  EXPECT_EQ(s.num_writes, 1U);
  EXPECT_EQ(s.bytes_read, 2 * n);
  EXPECT_EQ(s.bytes_written, n);
  EXPECT_GT(s.wall(), 0ns);
  EXPECT_GT(s.busy, 0ns);
  EXPECT_LE(s.busy, s.wall());
  EXPECT_GT(s.busy_bytes_per_sec(), 0.0);
  EXPECT_GT(s.mean_duration(), 0ns);
  EXPECT_LE(s.busy_fraction(), 1.0);
  EXPECT_LE(s.total_duration, s.busy);  // one call after another: the union is the sum
  EXPECT_EQ(s.by_backend[slot()].num_ops, 3U);
  EXPECT_EQ(s.by_backend[slot()].total_duration, s.total_duration);
}

TEST(SummaryMonitor, the_backends_that_carried_the_work_are_counted_apart)
{
  SummaryMonitor const monitor;
  operation(1024, 1024, IoBackend::GDS);
  operation(512, 512, IoBackend::POSIX);
  operation(256, 256, IoBackend::POSIX, TransferDirection::WRITE);
  auto const s = monitor.get();
  EXPECT_EQ(s.by_backend[slot(IoBackend::GDS)].num_ops, 1U);
  EXPECT_EQ(s.by_backend[slot(IoBackend::GDS)].bytes_transferred, 1024U);
  EXPECT_EQ(s.by_backend[slot()].num_ops, 2U);
  EXPECT_EQ(s.by_backend[slot()].bytes_transferred, 768U);
  EXPECT_EQ(s.by_backend[slot(IoBackend::MMAP)].num_ops, 0U);
  Summary::BackendTotals sum;
  for (auto const& part : s.by_backend) {
    sum.num_ops += part.num_ops;
    sum.bytes_transferred += part.bytes_transferred;
    sum.total_duration += part.total_duration;
  }
  EXPECT_EQ(sum.num_ops, s.num_ops);
  EXPECT_EQ(sum.bytes_transferred, s.bytes_transferred);
  EXPECT_EQ(sum.total_duration, s.total_duration);
  auto const report = s.report();
  EXPECT_TRUE(contains(report, "  backend GDS          1 KiB in 1 ops")) << report;
  EXPECT_TRUE(contains(report, "  backend POSIX        768 B in 2 ops")) << report;
  EXPECT_FALSE(contains(report, "backend MMAP")) << report;
  EXPECT_TRUE(contains(s.report(ReportRows::ALL), "  backend MMAP         unused\n"));
  EXPECT_TRUE(contains(s.to_json(), "\"by_backend\""));
}

TEST(SummaryMonitor, completions_reported_out_of_order_are_still_counted_exactly)
{
  kvikio::test::CompletionDelayer
    delayer;  // registered first: it hears of a completion before the summary does
  SummaryMonitor const monitor;
  auto a = begin_operation(n);
  std::this_thread::sleep_for(1ms);
  auto const b = begin_operation(n);
  std::this_thread::sleep_for(1ms);
  delayer.arm();
  std::thread finisher{[&] { a->finish(n); }};
  delayer.wait_until_stalled();
  b->finish(n);  // reported before `a`, which ended first
  finisher.join();
  auto const s = monitor.get();
  EXPECT_EQ(s.num_ops, 2U);
  EXPECT_LE(s.busy, s.wall());
  EXPECT_LT(s.busy, s.total_duration);  // the two overlapped
}

TEST(SummaryMonitor, a_monitor_counts_from_where_it_started_and_only_its_own)
{
  HostFile file{n};
  file.read();  // before any monitor: nobody counts it
  SummaryMonitor a;
  file.read();
  SummaryMonitor const b;
  file.read();
  EXPECT_EQ(a.get().num_ops, 2U);
  EXPECT_EQ(a.get().bytes_transferred, 2 * n);
  EXPECT_EQ(b.get().num_ops, 1U);
  a.reset();
  EXPECT_EQ(a.get().num_ops, 0U);
  EXPECT_EQ(b.get().num_ops, 1U);
}

TEST(SummaryMonitor, a_failed_call_is_counted_as_an_error)
{
  HostFile file{n};
  SummaryMonitor const monitor;
  EXPECT_ANY_THROW(file.write_read_only());
  auto const s = monitor.get();
  EXPECT_EQ(s.num_ops, 1U);
  EXPECT_EQ(s.num_errors, 1U);
  EXPECT_EQ(s.bytes_transferred, 0U);
  EXPECT_EQ(s.bytes_requested, n);
  EXPECT_EQ(s.num_writes, 1U);
  EXPECT_EQ(s.by_backend[slot()].num_errors, 1U);
}

TEST(SummaryMonitor, busy_time_ignores_idle)
{
  HostFile file{n};
  SummaryMonitor const monitor;
  file.read();
  std::this_thread::sleep_for(50ms);
  auto const s = monitor.get();
  EXPECT_LT(s.busy, s.wall());
  EXPECT_LT(s.busy_fraction(), 0.9);
  EXPECT_GT(
    s.busy_bytes_per_sec(),
    static_cast<double>(s.bytes_transferred) / std::chrono::duration<double>(s.wall()).count());
}

TEST(SummaryMonitor, a_snapshot_is_self_consistent)
{
  SummaryMonitor const monitor;
  std::atomic<bool> done{false};
  std::atomic<int> inconsistent{0};
  std::thread reader{[&] {
    while (!done) {
      auto const s = monitor.get();
      if (s.busy > s.wall() || s.busy_fraction() > 1.0 || s.bytes_transferred > s.bytes_requested) {
        ++inconsistent;
      }
    }
  }};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([] {
      for (std::size_t i = 0; i < 200; ++i) {
        operation(4096, 4096 - i, IoBackend::POSIX, TransferDirection::READ, 10us);
      }
    });
  }
  for (auto& w : workers) {
    w.join();
  }
  done = true;
  reader.join();
  EXPECT_EQ(inconsistent, 0);
  EXPECT_EQ(monitor.get().num_ops, 400U);
}

TEST(SummaryMonitor, a_reading_never_goes_backwards)
{
  kvikio::test::CompletionDelayer delayer;
  SummaryMonitor const monitor;
  auto a = begin_operation(n);
  delayer.arm();
  std::thread finisher{[&] { a->finish(n); }};
  delayer.wait_until_stalled();
  std::this_thread::sleep_for(10ms);  // the open stretch now runs past the operation's end
  auto const during = monitor.get();
  finisher.join();
  auto const after = monitor.get();
  EXPECT_EQ(after.num_ops, 1U);
  EXPECT_GE(after.busy, during.busy);
  EXPECT_EQ(after.since(during).busy, after.busy - during.busy);
}

TEST(SummaryMonitor, an_operation_still_running_counts_as_busy)
{
  SummaryMonitor const monitor;
  auto const running = begin_operation(n);
  std::this_thread::sleep_for(20ms);
  auto const during = monitor.get();
  EXPECT_EQ(during.num_ops, 0U);
  EXPECT_GE(during.busy, 15ms);
  EXPECT_LE(during.busy, during.wall());
  running->finish(n);
  auto const after = monitor.get();
  EXPECT_EQ(after.num_ops, 1U);
  EXPECT_GE(after.busy, 20ms);
}

TEST(SummaryMonitor, a_finish_from_an_earlier_monitor_is_ignored)
{
  SummaryMonitor const outer;  // so that `older` is recorded at all
  auto const older = begin_operation(n);
  SummaryMonitor const monitor;
  auto const own = begin_operation(n);
  std::this_thread::sleep_for(10ms);
  older->finish(n);  // began before `monitor`: not its business
  std::this_thread::sleep_for(10ms);
  own->finish(n);
  auto const s = monitor.get();
  EXPECT_EQ(s.num_ops, 1U);
  EXPECT_GE(s.busy, 18ms);
  EXPECT_LE(s.busy, s.wall());
  EXPECT_EQ(outer.get().num_ops, 2U);
}

TEST(SummaryMonitor, a_stretch_closes_at_the_last_operation_to_end)
{
  SummaryMonitor const monitor;
  auto const t0 = kvikio::detail::now();
  started(t0);        // A = [t0, t0 + 50]
  started(t0 + 1ns);  // B = [t0 + 1, t0 + 100]
  finished(t0 + 1ns, t0 + 100ns);
  finished(t0, t0 + 50ns);  // the last reported, not the last to end
  auto const s = monitor.get();
  EXPECT_EQ(s.num_ops, 2U);
  EXPECT_EQ(s.busy, 100ns);
  EXPECT_EQ(s.total_duration, 149ns);
}

TEST(SummaryMonitor, a_start_reported_late_extends_the_stretch_backwards)
{
  SummaryMonitor const monitor;
  auto const t0 = kvikio::detail::now();
  started(t0 + 50ns);  // A = [t0 + 50, t0 + 100], reported first
  started(t0);         // B = [t0, t0 + 100]
  finished(t0 + 50ns, t0 + 100ns);
  finished(t0, t0 + 100ns);
  EXPECT_EQ(monitor.get().busy, 100ns);
}

TEST(SummaryMonitor, a_record_from_before_a_reset_is_ignored)
{
  SummaryMonitor monitor;
  auto const before_reset = kvikio::detail::now();
  std::this_thread::sleep_for(1ms);
  monitor.reset();
  finished(before_reset, kvikio::detail::now());  // its start was never delivered
  auto s = monitor.get();
  EXPECT_EQ(s.num_ops, 0U);
  EXPECT_EQ(s.bytes_transferred, 0U);

  auto const spanning = begin_operation(n);
  std::this_thread::sleep_for(1ms);
  monitor.reset();
  spanning->finish(n);
  s = monitor.get();
  EXPECT_EQ(s.num_ops, 0U);
  EXPECT_EQ(s.bytes_transferred, 0U);
  EXPECT_EQ(s.total_duration, 0ns);
  EXPECT_LE(s.busy, s.wall());
}

TEST(SummaryMonitor, stop_freezes_the_totals_and_the_span)
{
  SummaryMonitor monitor;
  operation(n, n);
  monitor.stop();
  auto const first = monitor.get();
  operation(n, n);
  std::this_thread::sleep_for(30ms);
  monitor.stop();  // idempotent
  auto const later = monitor.get();
  EXPECT_EQ(later.num_ops, first.num_ops);
  EXPECT_EQ(later.end, first.end);
  EXPECT_EQ(later.wall(), first.wall());
  EXPECT_EQ(later.busy_fraction(), first.busy_fraction());
  EXPECT_EQ(monitor.since(first).end, first.end);
  monitor.reset();  // an empty summary of an empty span
  EXPECT_EQ(monitor.get().wall(), 0ns);
  EXPECT_EQ(monitor.get().num_ops, 0U);
}

TEST(SummaryMonitor, stopping_from_several_threads_at_once_is_safe)
{
  SummaryMonitor monitor;
  operation(n, n);
  std::vector<std::thread> stoppers;
  for (int i = 0; i < 8; ++i) {
    stoppers.emplace_back([&] { monitor.stop(); });
  }
  for (auto& t : stoppers) {
    t.join();
  }
  auto const s = monitor.get();
  EXPECT_EQ(s.num_ops, 1U);
  EXPECT_EQ(s.bytes_transferred, n);
  EXPECT_LE(s.busy, s.wall());
  EXPECT_FALSE(kvikio::detail::monitoring_enabled());
}

TEST(SummaryMonitor, a_monitor_reports_itself_on_destruction)
{
  Summary seen;
  int calls = 0;
  {
    SummaryMonitor const monitor{[&](Summary const& s) {
      seen = s;
      ++calls;
    }};
    operation(n, n);
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.num_ops, 1U);
  EXPECT_EQ(seen.bytes_transferred, n);
  EXPECT_NO_THROW(
    { SummaryMonitor const monitor{[](Summary const&) { throw std::runtime_error("boom"); }}; });
  EXPECT_NO_THROW({ SummaryMonitor const monitor{[](Summary const&) { throw 42; }}; });
}

TEST(SummaryMonitor, a_monitor_cannot_be_made_inside_a_callback)
{
  struct Maker final : kvikio::Monitor {
    void on_start(Observation const&) noexcept override {}
    void on_finish(Observation const&) noexcept override
    {
      try {
        SummaryMonitor const inner;
      } catch (std::runtime_error const&) {
        ++refused;
      }
    }
    int refused = 0;
  } maker;
  auto const id = kvikio::register_monitor(&maker);
  operation(8, 8);
  kvikio::unregister_monitor(id);
  EXPECT_EQ(maker.refused, 1);
}
