/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace kvikio::detail {

/**
 * @brief The operations still using a handle's resource (a descriptor, a mapping, an endpoint).
 *
 * The lifetime rule of every handle: an operation takes a lease before it touches the resource
 * and drops it when its last task is done; closing the handle refuses new leases, then waits for
 * the leases out, and only then closes the resource. So a descriptor number is never closed (and
 * reused by the process for another file) under a running read or write, and a mapping or an
 * endpoint is never freed under one. A remote transfer watches closing(): it is not retried
 * once its handle is closing, and is cut if it stalls then (see RangeRequest).
 *
 * The object must stay at its address while leases are out: handles hold it by `unique_ptr`.
 */
class InFlight {
 public:
  /// @brief Held, shared by the tasks of one operation, while it uses the resource.
  using Lease = std::shared_ptr<void>;

  InFlight() noexcept                  = default;
  InFlight(InFlight const&)            = delete;
  InFlight& operator=(InFlight const&) = delete;
  /// @brief Waits for the leases still out (as close_and_wait()).
  ~InFlight() noexcept;

  /**
   * @brief A lease on the resource, or an empty one once closing has started (the caller then
   * reports the handle closed). @throws std::bad_alloc
   */
  [[nodiscard]] Lease enter();

  /// @brief Refuses new leases and returns when every lease taken before has been dropped.
  void close_and_wait() noexcept;

  /// @brief Whether closing has started (transfers poll it to end early).
  [[nodiscard]] bool closing() const noexcept
  {
    return (count_.load(std::memory_order_acquire) & closing_bit) != 0;
  }

  /// @brief The object a non-empty lease was taken from.
  [[nodiscard]] static InFlight const* owner_of(Lease const& lease) noexcept
  {
    return static_cast<InFlight const*>(lease.get());
  }

  /// @brief Leases out now (for tests).
  [[nodiscard]] std::size_t leases() const noexcept;

 private:
  void leave() noexcept;

  // The leases out, and closing_bit once closing has started: one atomic, no lock, because every
  // read of every caller and pool thread takes and drops a lease (a mutex here was contended by
  // all of them at once).
  static constexpr std::uint64_t closing_bit = std::uint64_t{1} << 63;
  std::atomic<std::uint64_t> count_{0};
};

}  // namespace kvikio::detail
