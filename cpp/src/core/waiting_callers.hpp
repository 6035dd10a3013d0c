/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file core/waiting_callers.hpp
 * @brief Whether the calling thread waits for each read before it asks for the next: such a
 * caller gains nothing from a pool thread (its read is not overlapped with anything) and pays
 * for the hand-off (a wake-up and a context switch each way), so a read of one task runs on it.
 *
 * The evidence is the caller's own reads handed to a pool: when it asks for a read and the last
 * one it handed off has ended, it waited for it (a caller keeping reads in flight finds its last
 * one still running). After two such calls in a row the thread counts as waiting; one of its
 * reads in sixteen is handed off even then (a probe), so that a caller that starts keeping reads
 * in flight is seen. Each probe that finds it waiting doubles the interval, up to one in 64.
 */

#include <atomic>
#include <cstdint>
#include <memory>

namespace kvikio::detail {

/// @brief Held by a read handed to a pool: ended() tells the thread that handed it off.
class HandOffMark {
 public:
  HandOffMark() noexcept = default;
  HandOffMark(std::shared_ptr<std::atomic<std::uint64_t>> last_ended,
              std::uint64_t sequence,
              bool probe)
    : last_ended_{std::move(last_ended)}, sequence_{sequence}, probe_{probe}
  {
  }
  /// @brief Marks the read ended: called before its result is published, so that a caller
  /// woken by the result sees it. The pool thread that ran a waiting caller's probe sleeps once
  /// idle rather than spin: the caller's next reads run on the caller.
  void ended() noexcept;

 private:
  std::shared_ptr<std::atomic<std::uint64_t>> last_ended_;
  std::uint64_t sequence_{0};
  bool probe_{false};
};

/// @brief Ends a HandOffMark as the scope ends: as a task returns or throws, before the pool
/// publishes its result.
class EndOfHandOff {
 public:
  explicit EndOfHandOff(HandOffMark& mark) noexcept : mark_{mark} {}
  EndOfHandOff(EndOfHandOff const&)            = delete;
  EndOfHandOff& operator=(EndOfHandOff const&) = delete;
  ~EndOfHandOff() { mark_.ended(); }

 private:
  HandOffMark& mark_;
};

/**
 * @brief Whether the calling thread's next read of one task runs on it (it waits for each of
 * its reads); otherwise the caller hands the read off and records it with handing_off().
 */
[[nodiscard]] bool caller_waits_for_each_read() noexcept;

/// @brief Records that the calling thread hands a read of one task to a pool: the task holds
/// the mark and calls its ended() before publishing its result.
[[nodiscard]] HandOffMark handing_off();

}  // namespace kvikio::detail
