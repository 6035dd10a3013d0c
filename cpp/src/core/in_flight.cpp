/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/in_flight.hpp>

namespace kvikio::detail {

InFlight::~InFlight() noexcept { close_and_wait(); }

InFlight::Lease InFlight::enter()
{
  {
    std::lock_guard const lock{mutex_};
    if (closing_.load(std::memory_order_relaxed)) { return nullptr; }
    ++leases_;
  }
  // The lease owns nothing: its deleter, run when the last copy is dropped, is the point (and
  // runs at once, undoing the count, if the lease cannot be allocated).
  return Lease{static_cast<void*>(this), [](void* self) { static_cast<InFlight*>(self)->leave(); }};
}

void InFlight::leave() noexcept
{
  std::lock_guard const lock{mutex_};
  if (--leases_ == 0) { idle_.notify_all(); }
}

void InFlight::close_and_wait() noexcept
{
  std::unique_lock lock{mutex_};
  closing_.store(true, std::memory_order_release);
  idle_.wait(lock, [this] { return leases_ == 0; });
}

std::size_t InFlight::leases() const noexcept
{
  std::lock_guard const lock{mutex_};
  return leases_;
}

}  // namespace kvikio::detail
