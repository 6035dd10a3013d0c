/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <liburing.h>

#include <cstddef>
#include <map>

namespace kvikio::detail::uring {

/**
 * This thread's ring, set up at its first transfer and torn down when the thread ends, with a
 * sparse table of registered buffers: pool staging buffers are registered at their first use on
 * the thread, so that their requests go as fixed reads and writes (the kernel neither looks up
 * nor pins their pages per request). A registration keeps its pages referenced; when the pool
 * frees any buffer, its address may come back as another buffer, so the table is emptied.
 */
class ThreadRing {
 public:
  ThreadRing();
  ~ThreadRing() noexcept;
  ThreadRing(ThreadRing const&)            = delete;
  ThreadRing& operator=(ThreadRing const&) = delete;
  io_uring* get() noexcept { return &ring_; }

  /// The table index of pool buffer `buffer` (`size` bytes), registered now if it is not yet;
  /// -1 where registration is off, refused or the table is full (plain requests then).
  int registered_index(void* buffer, std::size_t size);
  [[nodiscard]] std::size_t registered_count() const noexcept { return registered_.size(); }

  /// Bounds this ring's kernel workers (both kinds: buffered file requests run on either) to
  /// what io_uring_max_workers() says, or by default to this thread's share of the cores, if
  /// that changed since the last transfer.
  void apply_max_workers(std::size_t pool_threads) noexcept;

 private:
  struct Registered {
    std::size_t size;
    int index;
  };
  void forget_registered() noexcept;

  io_uring ring_{};
  unsigned applied_workers_{0};
  bool registrable_{false};
  std::size_t pool_freed_seen_{0};
  std::map<void*, Registered> registered_;
};

/// This thread's ring, or null where it cannot be set up (a per-thread limit, say, after the
/// process's probe succeeded): then this thread's I/O goes through POSIX (logged once).
ThreadRing* this_thread_ring_object() noexcept;

/// The ring of this_thread_ring_object(), or null.
io_uring* this_thread_ring() noexcept;

}  // namespace kvikio::detail::uring
