/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/statistics/summary.hpp>

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <utility>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/observation_recorder.hpp>

namespace kvikio::statistics {
namespace {

/**
 * Busy time: the union of the operations' spans, followed through one number, the operations in
 * flight. A stretch opens when it rises off zero and closes when it falls back. Starts and
 * finishes arrive in the order threads reach the monitor's lock, not in timestamp order, so:
 * - a stretch closes at the latest end among its operations, not at the last one reported;
 * - a stretch opens no earlier than the previous one closed, so no time is counted twice;
 * - a reading never returns less than an earlier one, so an interval is never negative.
 * Not thread-safe: the monitor holds its lock around every call.
 */
class BusyTracker {
 public:
  // Starts the span at `start`; operations in flight keep counting, from `start` on.
  void reset(TimePoint start) noexcept
  {
    closed_busy_  = Duration::zero();
    emitted_busy_ = Duration::zero();
    pending_end_  = TimePoint{};
    busy_since_   = start;
    last_closed_  = start;
  }

  void on_start(TimePoint start) noexcept
  {
    auto const from = std::max(start, last_closed_);
    busy_since_     = in_flight_++ == 0 ? from : std::min(busy_since_, from);
  }

  void on_finish(TimePoint end) noexcept
  {
    if (in_flight_ == 0) { return; }  // its start was never counted
    pending_end_ = std::max(pending_end_, end);
    if (--in_flight_ != 0) { return; }
    if (pending_end_ > busy_since_) { closed_busy_ += pending_end_ - busy_since_; }
    last_closed_ = std::max(last_closed_, pending_end_);
    pending_end_ = TimePoint{};
  }

  // Busy time up to `now`, the open stretch included.
  [[nodiscard]] Duration read(TimePoint now) noexcept
  {
    auto const open =
      (in_flight_ > 0 && now > busy_since_) ? Duration{now - busy_since_} : Duration::zero();
    emitted_busy_ = std::max(emitted_busy_, closed_busy_ + open);
    return emitted_busy_;
  }

 private:
  Duration closed_busy_{};     // the closed stretches, added up
  std::uint64_t in_flight_{};  // a stretch is open while this is not zero
  TimePoint busy_since_{};     // where the open stretch began
  TimePoint pending_end_{};    // the latest end among the open stretch's operations
  TimePoint last_closed_{};    // where the last stretch closed: the next opens no earlier
  Duration emitted_busy_{};    // the most read() has returned
};

}  // namespace

struct SummaryMonitor::Impl {
  // Serialises stop(), which cannot hold `mutex`: unregistering waits for callbacks that take it.
  std::mutex stopping;
  std::uint64_t registration{0};  // guarded by `stopping`; 0 once stopped

  mutable std::mutex mutex;  // guards everything below
  Counters counters_at_start{};
  Counters counters_at_stop{};
  Summary totals{};  // what a reading copies; get() fills in `end`, `busy` and `counters`
  // Operations that started before this are not ours: their finish may still reach us, as
  // notifications go to whoever is registered then. Until construction ends, none is ours.
  TimePoint registered{TimePoint::max()};
  TimePoint stopped_end{};
  bool stopped{false};
  BusyTracker busy;
  Callback on_destruction;  // set before registering, read only by the destructor
};

SummaryMonitor::SummaryMonitor() : SummaryMonitor(Callback{}) {}

SummaryMonitor::SummaryMonitor(Callback on_destruction) : impl_{std::make_unique<Impl>()}
{
  impl_->on_destruction = std::move(on_destruction);
  impl_->registration   = register_monitor(this);
  std::lock_guard const lock{impl_->mutex};
  auto const t             = detail::now();
  impl_->totals.start      = t;
  impl_->totals.anchor     = ClockAnchor::now();
  impl_->registered        = t;
  impl_->counters_at_start = counters();
  impl_->busy.reset(t);
}

SummaryMonitor::~SummaryMonitor()
{
  stop();
  if (!impl_->on_destruction) { return; }
  try {
    impl_->on_destruction(get());
  } catch (std::exception const& e) {
    KVIKIO_LOG_ERROR(std::string{"SummaryMonitor callback threw: "} + e.what());
  } catch (...) {
    KVIKIO_LOG_ERROR("SummaryMonitor callback threw an unknown exception");
  }
}

void SummaryMonitor::on_start(Observation const& observation) noexcept
{
  std::lock_guard const lock{impl_->mutex};
  if (observation.start < impl_->registered) { return; }
  impl_->busy.on_start(observation.start);
}

void SummaryMonitor::on_finish(Observation const& observation) noexcept
{
  auto& m = *impl_;
  std::lock_guard const lock{m.mutex};
  if (observation.start < m.registered) { return; }
  // Always, so that the count in flight stays balanced across a reset().
  m.busy.on_finish(observation.end);
  // Begun before the last reset(): it belongs to a span that is gone.
  if (observation.start < m.totals.start) { return; }

  auto& t        = m.totals;
  auto const n   = static_cast<std::uint64_t>(observation.bytes_transferred);
  auto const dur = observation.duration();
  ++t.num_ops;
  t.bytes_requested += observation.size;
  t.bytes_transferred += n;
  t.total_duration += dur;
  auto const backend = static_cast<std::size_t>(observation.backend);
  if (backend < t.by_backend.size()) {
    auto& part = t.by_backend[backend];
    ++part.num_ops;
    part.bytes_transferred += n;
    part.total_duration += dur;
    if (!observation.ok) { ++part.num_errors; }
  }
  if (observation.direction == TransferDirection::READ) {
    ++t.num_reads;
    t.bytes_read += n;
  } else {
    ++t.num_writes;
    t.bytes_written += n;
  }
  if (!observation.ok) { ++t.num_errors; }
}

Summary SummaryMonitor::get() const
{
  auto const current = counters();  // lock-free, so outside the lock
  std::lock_guard const lock{impl_->mutex};
  Summary out = impl_->totals;
  out.counters =
    (impl_->stopped ? impl_->counters_at_stop : current).since(impl_->counters_at_start);
  out.end  = impl_->stopped ? impl_->stopped_end : detail::now();
  out.busy = impl_->busy.read(out.end);
  return out;
}

void SummaryMonitor::reset()
{
  std::lock_guard const lock{impl_->mutex};
  auto const t             = detail::now();
  auto const anchor        = impl_->totals.anchor;
  impl_->totals            = Summary{};
  impl_->totals.start      = t;
  impl_->totals.anchor     = anchor;
  impl_->counters_at_start = counters();
  impl_->busy.reset(t);
}

Summary SummaryMonitor::since(Summary const& previous) const { return get().since(previous); }

void SummaryMonitor::stop()
{
  std::lock_guard const stopping{impl_->stopping};
  if (impl_->registration == 0) { return; }
  unregister_monitor(impl_->registration);  // waits for callbacks in progress
  impl_->registration       = 0;
  auto const final_counters = counters();
  std::lock_guard const lock{impl_->mutex};
  impl_->counters_at_stop = final_counters;
  impl_->stopped_end      = detail::now();
  impl_->stopped          = true;
}

}  // namespace kvikio::statistics
