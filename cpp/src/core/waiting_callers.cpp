/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/waiting_callers.hpp"

#include <algorithm>

#include "core/threadpool_internals.hpp"

namespace kvikio::detail {
namespace {

constexpr unsigned calls_to_count_as_waiting = 2;
// A waiting caller's reads per probe: from the first up to the last as probes keep finding it
// waiting (a probe costs a wake-up and a context switch each way, as much as a small read).
constexpr unsigned first_reads_per_probe = 16;
constexpr unsigned last_reads_per_probe  = 64;

struct CallerHabit {
  // The sequence number of the last hand-off whose read ended (the reads store it as they end;
  // one ending out of order stores an older number, which reads as still running).
  std::shared_ptr<std::atomic<std::uint64_t>> last_ended{
    std::make_shared<std::atomic<std::uint64_t>>(0)};
  std::uint64_t handed_off{0};  // sequence number of the last hand-off
  bool last_handed_off{false};  // whether the thread's last read was handed off
  unsigned waited_in_a_row{0};
  unsigned since_probe{0};
  unsigned reads_per_probe{first_reads_per_probe};
};

thread_local CallerHabit habit;

}  // namespace

bool caller_waits_for_each_read() noexcept
{
  CallerHabit& h = habit;
  if (h.last_handed_off) {
    bool const waited = h.last_ended->load(std::memory_order_acquire) == h.handed_off;
    if (waited && h.waited_in_a_row == calls_to_count_as_waiting) {  // a probe found it waiting
      h.reads_per_probe = std::min(2 * h.reads_per_probe, last_reads_per_probe);
    }
    if (!waited) { h.reads_per_probe = first_reads_per_probe; }
    h.waited_in_a_row = waited ? std::min(h.waited_in_a_row + 1, calls_to_count_as_waiting) : 0;
  }
  h.last_handed_off = false;
  if (h.waited_in_a_row < calls_to_count_as_waiting) { return false; }
  if (++h.since_probe >= h.reads_per_probe) {
    h.since_probe = 0;
    return false;
  }
  return true;
}

void HandOffMark::ended() noexcept
{
  if (!last_ended_) { return; }
  last_ended_->store(sequence_, std::memory_order_release);
  last_ended_.reset();
  if (probe_) { no_idle_spin_after_this_task(); }
}

HandOffMark handing_off()
{
  CallerHabit& h    = habit;
  h.last_handed_off = true;
  return HandOffMark{h.last_ended, ++h.handed_off, h.waited_in_a_row >= calls_to_count_as_waiting};
}

}  // namespace kvikio::detail
