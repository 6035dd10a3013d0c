/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file event.hpp
 * @brief A process-wide pool of CUDA events, one free list per context, and the RAII Event.
 *
 * Creating an event costs a driver call; the bounce-buffer ring needs one per slot per task, so
 * events are reused. Events are created with CU_EVENT_DISABLE_TIMING.
 */

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include <cuda.h>

namespace kvikio {

class EventPool;

/**
 * @brief An event of the pool; returns to its context's free list when destroyed.
 */
class Event {
 public:
  /// @brief Takes over the event of `o`, which is left empty.
  Event(Event&& o) noexcept;
  /// @brief Returns this event, if any, to the pool, then takes over the event of `o`.
  Event& operator=(Event&& o) noexcept;
  Event(Event const&)            = delete;
  Event& operator=(Event const&) = delete;
  ~Event() noexcept;

  /// @brief Records the event on `stream`. @throws kvikio::CUfileException
  void record(CUstream stream);
  /// @brief Waits for the last record to complete. @throws kvikio::CUfileException
  void synchronize();
  /// @brief Whether the last record has completed (true if never recorded).
  [[nodiscard]] bool is_done();
  /// @brief The CUDA event, still owned by this object (null once moved from).
  [[nodiscard]] CUevent get() const noexcept { return event_; }
  /// @brief The context the event was created in (null once moved from).
  [[nodiscard]] CUcontext context() const noexcept { return ctx_; }

 private:
  friend class EventPool;
  Event(CUevent event, CUcontext ctx) noexcept : event_{event}, ctx_{ctx} {}
  CUevent event_{nullptr};
  CUcontext ctx_{nullptr};
};

/**
 * @brief Free events per CUDA context, LIFO. Thread-safe; never destroyed (it holds CUDA
 * resources that must not be released after the driver is torn down at exit).
 */
class EventPool {
 public:
  /// @brief The process-wide pool (created at first use, never destroyed).
  static EventPool& instance();

  /**
   * @brief An event of the current context: a free one, or a new one (created outside the lock).
   * @throws kvikio::CUfileException with no current context, or if creation fails.
   */
  [[nodiscard]] Event get();

  /// @brief Free events of `ctx`.
  [[nodiscard]] std::size_t num_free_events(CUcontext ctx) const;
  /// @brief Free events of every context.
  [[nodiscard]] std::size_t total_free_events() const;

 private:
  friend class Event;
  EventPool() = default;
  void put(CUevent event, CUcontext ctx) noexcept;

  mutable std::mutex mutex_;
  std::map<CUcontext, std::vector<CUevent>> free_;
};

}  // namespace kvikio
