/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/observation_recorder.hpp
 * @brief How the library emits observations (observation.hpp): the registry's notifications and
 * a recorder that turns one call into one start and one finish.
 */

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <kvikio/observation.hpp>

namespace kvikio::detail {

/// @brief Throws std::runtime_error ("a monitor must not call back into KvikIO") inside a
/// monitor's callback; the I/O entry points call it first.
void expect_not_in_monitor();

/// @brief Clock::now().
[[nodiscard]] TimePoint now() noexcept;

/// @brief Tells every monitor of `observation.kind` that it started (none inside a callback).
void notify_started(Observation const& observation) noexcept;
/// @brief Tells every monitor of `observation.kind` that it finished (none inside a callback).
void notify_finished(Observation const& observation) noexcept;

/// @brief Whether any monitor is registered: the one check an unobserved call pays.
[[nodiscard]] bool monitoring_enabled() noexcept;

/**
 * @brief One user call as an observation (its `source` views a string its handle owns, which
 * outlives the call): made at the call (on_start() then, if any monitor is
 * registered; otherwise it records nothing at all), finished once by finish() or
 * finish_with_failure(), whichever comes first; one destroyed unfinished counts as failed.
 * Shared with a call's tasks through a std::shared_ptr when they finish it.
 */
class LogicalObservationRecorder {
 public:
  /// @brief Starts the observation of one call (if anyone watches).
  LogicalObservationRecorder(IoBackend backend,
                             TransferDirection direction,
                             MemoryKind memory_kind,
                             std::size_t offset,
                             std::size_t size,
                             std::string_view source = {},
                             char const* http_method = nullptr) noexcept;
  /// @brief As above, sharing the string `source` views, so that it outlives the observation
  /// whatever happens to the handle that made it.
  LogicalObservationRecorder(IoBackend backend,
                             TransferDirection direction,
                             MemoryKind memory_kind,
                             std::size_t offset,
                             std::size_t size,
                             std::shared_ptr<std::string const> source,
                             char const* http_method = nullptr) noexcept;
  ~LogicalObservationRecorder();
  LogicalObservationRecorder(LogicalObservationRecorder const&)            = delete;
  LogicalObservationRecorder& operator=(LogicalObservationRecorder const&) = delete;

  /// @brief The call moved `bytes_transferred` bytes (the first finish counts).
  void finish(std::size_t bytes_transferred) noexcept;
  /// @brief The call failed (the first finish counts).
  void finish_with_failure() noexcept;

 private:
  void emit() noexcept;
  std::shared_ptr<std::string const> source_;  // what observation_.source views, if shared
  Observation observation_{};
  bool active_{false};
  std::atomic<bool> emitted_{false};
};

}  // namespace kvikio::detail
