/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/in_flight.hpp"

namespace kvikio::detail {

InFlight::~InFlight() noexcept { close_and_wait(); }

InFlight::Lease InFlight::enter()
{
  if ((count_.fetch_add(1, std::memory_order_acq_rel) & closing_bit) != 0) {
    leave();  // closing: this lease is not given
    return nullptr;
  }
  // The lease owns nothing: its deleter, run when the last copy is dropped, is the point (and
  // runs at once, undoing the count, if the lease cannot be allocated).
  return Lease{static_cast<void*>(this), [](void* self) { static_cast<InFlight*>(self)->leave(); }};
}

void InFlight::leave() noexcept
{
  // The last lease out of a closing handle wakes close_and_wait().
  if (count_.fetch_sub(1, std::memory_order_acq_rel) == (closing_bit | 1)) { count_.notify_all(); }
}

void InFlight::close_and_wait() noexcept
{
  auto seen = count_.fetch_or(closing_bit, std::memory_order_acq_rel) | closing_bit;
  while (seen != closing_bit) {
    count_.wait(seen, std::memory_order_acquire);
    seen = count_.load(std::memory_order_acquire);
  }
}

std::size_t InFlight::leases() const noexcept
{
  return static_cast<std::size_t>(count_.load(std::memory_order_acquire) & ~closing_bit);
}

}  // namespace kvikio::detail
