/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file statistics/summary.hpp
 * @brief Totals of the I/O the process did over a span (Summary), and the monitor that keeps
 * them (SummaryMonitor).
 */

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>  // not used here; upstream's header includes it, and programs lean on that
#include <string>
#include <vector>

#include <kvikio/observation.hpp>
#include <kvikio/shim/utils.hpp>
#include <kvikio/statistics/counters.hpp>

namespace kvikio::statistics {

/**
 * @brief The totals of a span of the process's I/O, counted in *logical* operations: one
 * `pread()` is one operation however many reads it made, and its duration runs from the call to
 * its completion.
 *
 * A plain value without padding; its field order is also that of serialize().
 */
struct Summary {
  TimePoint start{};     ///< when the span began (the monitor's creation or last reset())
  TimePoint end{};       ///< when the reading was taken (or the monitor stopped)
  ClockAnchor anchor{};  ///< places `start` and `end` on the wall clock; taken at creation

  std::uint64_t num_ops{};            ///< operations finished in the span
  std::uint64_t num_reads{};          ///< of those, reads
  std::uint64_t num_writes{};         ///< of those, writes
  std::uint64_t bytes_requested{};    ///< bytes the operations asked for
  std::uint64_t bytes_transferred{};  ///< bytes they moved (less on a short read or a failure)
  std::uint64_t bytes_read{};         ///< of those, bytes read
  std::uint64_t bytes_written{};      ///< of those, bytes written
  std::uint64_t num_errors{};         ///< operations that failed (counted in num_ops too)

  /**
   * @brief What one backend carried. Every operation has one backend, so these add up to the
   * summary's totals; busy time has no share here, as two backends at work at once would both
   * claim the same stretch.
   */
  struct BackendTotals {
    std::uint64_t num_ops{};            ///< operations it finished
    std::uint64_t bytes_transferred{};  ///< bytes it moved
    Duration total_duration{};          ///< its operations' durations, added up
    std::uint64_t num_errors{};         ///< its operations that failed
  };

  /// What each backend carried, indexed by IoBackend (compat mode shows here: GDS against POSIX).
  std::array<BackendTotals, num_io_backends> by_backend{};

  /// The process-wide counters' share of the span (costs of no single operation).
  Counters counters{};

  /// Every operation's duration, added up (overlapping operations each count in full).
  Duration total_duration{};

  /**
   * @brief Time in the span with at least one operation in flight: the union of the operations'
   * spans, gaps excluded, an unfinished operation counted up to the reading. Never more than
   * wall(); a completion reported late by its thread can make it slightly approximate.
   */
  Duration busy{};

  /// @brief `end - start`, or zero if the span is empty or reversed.
  [[nodiscard]] Duration wall() const noexcept;

  /// @brief Bytes moved per second of busy time (zero without busy time).
  [[nodiscard]] double busy_bytes_per_sec() const noexcept;

  /// @brief `busy / wall()`, between 0 and 1 (zero for an empty span).
  [[nodiscard]] double busy_fraction() const noexcept;

  /// @brief `total_duration / num_ops`, in whole nanoseconds (zero without operations).
  [[nodiscard]] Duration mean_duration() const noexcept;

  /**
   * @brief The interval from `previous` to this reading: it starts at `previous.end`, and each
   * total is the difference of the two (never negative). An operation counts whole in the
   * interval it finished in. Consecutive intervals abut, and add up to the difference of their
   * outer readings.
   * @param previous an earlier reading of the same span, from SummaryMonitor::get().
   * @throws std::invalid_argument if it is not one: an interval, a reading of another monitor,
   * one from before a reset(), or a later reading.
   */
  [[nodiscard]] Summary since(Summary const& previous) const;

  /**
   * @brief One-line JSON object of every field and derived value, whatever the global locale.
   * Timestamps are nanoseconds since the Unix epoch (`start_unix_ns`, `end_unix_ns`), so other
   * programs can line them up with their own; every backend is always present.
   */
  [[nodiscard]] std::string to_json() const;

  /**
   * @brief The summary as bytes (always the same number), for this very build only: a header
   * (magic, format version, size, byte-order mark) and the struct as it is in memory, so the
   * result of deserialize() is still a valid `previous` for since(). For other programs, use
   * to_json().
   */
  [[nodiscard]] std::vector<std::byte> serialize() const;

  /**
   * @brief The summary that serialize() wrote.
   * @param bytes what serialize() returned, in a build of this version on this architecture.
   * @throws std::invalid_argument if the bytes are not a summary, have the wrong length, or
   * come from another build or byte order.
   */
  [[nodiscard]] static Summary deserialize(std::vector<std::byte> const& bytes);

  /**
   * @brief A report for people, one row per line, in readable units:
   * @code
   * KvikIO I/O summary
   *   wall time            3.44 ms
   *   busy time            3.31 ms (96.14 % of the wall time)
   *   ...
   *   backend POSIX        16 MiB in 4 ops, 3.30 ms, 5.09 GB/s, 1 failed
   * @endcode
   * @param rows under ReportRows::USED, backends with no operation and counter groups with
   * nothing counted are left out (the HTTP rows stay when the span did remote I/O).
   * @return the report, each line ending in a newline.
   */
  [[nodiscard]] std::string report(ReportRows rows = ReportRows::USED) const;
};

/**
 * @brief Counts the process's I/O while it exists: creating one turns statistics on.
 *
 * @code
 * kvikio::statistics::SummaryMonitor const monitor;
 * auto const before = monitor.get();
 * run_a_phase();
 * std::cout << monitor.since(before).report();
 * @endcode
 *
 * A monitor sees every thread's I/O, not only its creator's, and cannot tell calls apart: it
 * measures a block of code only where nothing else does I/O meanwhile. It counts what Monitor
 * is told of (see kvikio::Monitor). An operation already running when the monitor is created is
 * ignored altogether. Monitors are independent: any number may exist, and resetting one leaves
 * the others alone. get(), reset() and stop() are thread-safe, also while I/O runs.
 */
class SummaryMonitor final : private kvikio::Monitor {
 public:
  /// @brief What the destructor hands the final totals to.
  using Callback = std::function<void(Summary const&)>;

  /**
   * @brief Registers the monitor and starts counting.
   * @throws std::runtime_error inside a monitor's callback.
   */
  SummaryMonitor();

  /**
   * @brief As SummaryMonitor(), and the destructor calls `on_destruction` with the totals. An
   * exception it throws is logged (at the error level), not propagated.
   */
  explicit SummaryMonitor(Callback on_destruction);

  /// @brief stop(), then the callback, if any. No callback of the monitor runs after this.
  ~SummaryMonitor() override;

  SummaryMonitor(SummaryMonitor const&)            = delete;
  SummaryMonitor& operator=(SummaryMonitor const&) = delete;
  SummaryMonitor(SummaryMonitor&&)                 = delete;
  SummaryMonitor& operator=(SummaryMonitor&&)      = delete;

  /**
   * @brief The totals since creation or the last reset(), as of now (or of stop()).
   *
   * A snapshot: operations still running, and finished ones whose report has not arrived yet,
   * are not in it (they come in a later reading).
   */
  [[nodiscard]] Summary get() const;

  /**
   * @brief Zeroes the totals and starts the span again, as if the monitor were new (the clock
   * anchor is kept). On a stopped monitor, this leaves an empty summary of an empty span.
   */
  void reset();

  /**
   * @brief `get().since(previous)`: the interval from an earlier reading to now. To report
   * periodically, difference consecutive get() readings instead, as two calls leave a gap.
   * @throws std::invalid_argument as Summary::since() does.
   */
  [[nodiscard]] Summary since(Summary const& previous) const;

  /**
   * @brief Stops counting for good; get() returns the final totals and span from then on.
   * Idempotent, and safe from several threads at once.
   * @throws std::runtime_error inside a monitor's callback.
   */
  void stop();

 private:
  void on_start(Observation const& observation) noexcept override;
  void on_finish(Observation const& observation) noexcept override;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvikio::statistics
