/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <liburing.h>

#include <cstddef>
#include <exception>
#include <utility>
#include <vector>

namespace kvikio::detail::uring {

/// A piece of a transfer: one request when it goes out.
struct Piece {
  std::byte* buf;
  std::size_t len;
  std::size_t offset;
  std::size_t group;
  int registered;
};

/// Pieces waiting for room on the ring, first out first; a retried piece goes back in front.
/// A vector read from `head_`, so that its memory stays from one transfer to the next.
class PieceQueue {
 public:
  [[nodiscard]] bool empty() const noexcept { return head_ == pieces_.size(); }
  void push_back(Piece const& p) { pieces_.push_back(p); }
  void push_front(Piece const& p)
  {
    if (head_ > 0) {
      pieces_[--head_] = p;
    } else {
      pieces_.insert(pieces_.begin(), p);  // a retry when nothing was taken since a refill
    }
  }
  Piece pop_front() noexcept
  {
    Piece const p = pieces_[head_++];
    if (empty()) { clear(); }
    return p;
  }
  void clear() noexcept
  {
    pieces_.clear();
    head_ = 0;
  }
  template <typename F>
  void for_each(F f) const
  {
    for (std::size_t i = head_; i < pieces_.size(); ++i) {
      f(pieces_[i]);
    }
  }

 private:
  std::vector<Piece> pieces_;
  std::size_t head_{0};
};

/**
 * The bookkeeping of a thread's transfers, kept from one to the next so that a transfer
 * allocates nothing once the thread has made one of its shape: the requests in flight by the
 * index each carries, the free indices, the pieces waiting for room, and per group the pieces
 * not done (few groups are open at once: a transfer's staging slots).
 */
struct RequestState {
  std::vector<Piece> slots;
  std::vector<unsigned> free;
  PieceQueue queued;
  std::vector<std::pair<std::size_t, std::size_t>> left;  // (group, pieces not done)
  bool in_use{false};

  std::size_t& left_of(std::size_t group)
  {
    for (auto& [g, n] : left) {
      if (g == group) { return n; }
    }
    return left.emplace_back(group, 0).second;
  }
  void erase_group(std::size_t group)
  {
    std::erase_if(left, [group](auto const& entry) { return entry.first == group; });
  }
};

/**
 * The requests of one transfer on this thread's ring: buffers cut into pieces, each piece in a
 * group (a staging slot, say); a group is done once all its pieces are. Pieces wait in a queue
 * until the ring has room. After a failure the queued pieces are dropped (their groups count
 * them done) and the first error is kept; the destructor waits for every request in flight, so
 * none outlives the buffers it writes.
 */
class Requests {
 public:
  /// `size` bytes at `offset`: the whole transfer, named in a read-past-the-end error.
  Requests(bool read,
           int fd,
           std::size_t size,
           std::size_t offset,
           bool buffered,
           std::size_t pool_threads);
  ~Requests() noexcept;
  Requests(Requests const&)            = delete;
  Requests& operator=(Requests const&) = delete;

  /// Queues `len` bytes of `buf`, at file offset `offset`, as group `group`; `registered`: the
  /// table index of the registered buffer that holds them (-1: none).
  void add(
    std::byte* buf, std::size_t len, std::size_t offset, std::size_t group, int registered = -1);

  /// Runs until group `group` is done.
  void wait_group(std::size_t group);

  /// Runs until every group is done.
  void wait_all();

  [[nodiscard]] std::exception_ptr const& error() const noexcept { return error_; }

 private:
  // Submits what fits, waits for a completion and handles every one there is.
  void step();
  void prepare_and_submit();
  void completed(Piece const& p, int res);

  io_uring* ring_;
  bool read_;
  bool buffered_;
  int fd_;
  std::size_t size_;
  std::size_t offset_;
  std::size_t piece_;
  RequestState& state_;
  std::vector<Piece>& slots_;  // by the index each request carries
  std::vector<unsigned>& free_;
  PieceQueue& queued_;
  unsigned pending_{0};    // prepared, not yet taken by the kernel
  unsigned in_flight_{0};  // taken, not yet completed
  bool failed_{false};
  std::exception_ptr error_;
};

}  // namespace kvikio::detail::uring
