/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/io_uring_io.hpp>

#include <liburing.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/posix_io.hpp>
#include <kvikio/error.hpp>

namespace kvikio::detail {
namespace {

std::atomic<int> forced_setup_errno{0};
std::atomic<std::size_t> piece_size{std::size_t{1} << 20};
std::atomic<unsigned> queue_depth{64};
std::atomic<int> probed{0};  // 0: not yet, 1: usable, 2: not usable

int setup(unsigned entries, io_uring* ring) noexcept
{
  int const forced = forced_setup_errno.load();
  return forced != 0 ? -forced : io_uring_queue_init(entries, ring, 0);
}

/// This thread's ring, set up at its first transfer and torn down when the thread ends.
class ThreadRing {
 public:
  ThreadRing()
  {
    if (int const r = setup(io_uring_max_depth, &ring_); r < 0) {
      throw_system_error(-r, __FILE__, __LINE__, "io_uring_queue_init failed");
    }
  }
  ~ThreadRing() noexcept { io_uring_queue_exit(&ring_); }
  ThreadRing(ThreadRing const&)            = delete;
  ThreadRing& operator=(ThreadRing const&) = delete;
  io_uring* get() noexcept { return &ring_; }

 private:
  io_uring ring_{};
};

/// This thread's ring, or null where it cannot be set up (a per-thread limit, say, after the
/// process's probe succeeded): then this thread's I/O goes through POSIX (logged once).
io_uring* this_thread_ring() noexcept
{
  static std::atomic<bool> logged{false};
  thread_local std::unique_ptr<ThreadRing> ring;
  thread_local bool refused = false;
  if (!ring && !refused) {
    try {
      ring = std::make_unique<ThreadRing>();
    } catch (std::exception const& e) {
      refused = true;
      if (!logged.exchange(true)) {
        KVIKIO_LOG_WARN("io_uring: a thread's ring cannot be set up (",
                        e.what(),
                        "): that thread's local I/O uses posix");
      }
    }
  }
  return ring ? ring->get() : nullptr;
}

// The ring itself failed (not a request): requests in flight may still write into the caller's
// buffer and prepared ones would go out with the next transfer, so there is no safe way on.
[[noreturn]] void broken(char const* call, int r) noexcept
{
  KVIKIO_LOG_ERROR("io_uring: ", call, " failed (", std::strerror(-r), "): aborting");
  std::abort();
}

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
  Requests(bool read, int fd, std::size_t size, std::size_t offset, bool buffered = true)
    : read_{read},
      buffered_{buffered},
      fd_{fd},
      size_{size},
      offset_{offset},
      piece_{io_uring_piece_size()},
      slots_(io_uring_queue_depth())
  {
    ring_ = this_thread_ring();
    KVIKIO_EXPECT(ring_ != nullptr,
                  "io_uring: this thread has no ring (io_uring_setup refused)",
                  std::runtime_error);
    for (auto i = static_cast<unsigned>(slots_.size()); i > 0; --i) {
      free_.push_back(i - 1);
    }
  }
  ~Requests() noexcept
  {
    failed_ = true;  // whatever is left: only what is in flight is waited for
    while (in_flight_ > 0 || pending_ > 0) {
      step();
    }
  }
  Requests(Requests const&)            = delete;
  Requests& operator=(Requests const&) = delete;

  /// Queues `len` bytes of `buf`, at file offset `offset`, as group `group`.
  void add(std::byte* buf, std::size_t len, std::size_t offset, std::size_t group)
  {
    for (std::size_t pos = 0; pos < len; pos += piece_) {
      queued_.push_back(Piece{buf + pos, std::min(piece_, len - pos), offset + pos, group});
      ++left_[group];
    }
  }

  /// Runs until group `group` is done.
  void wait_group(std::size_t group)
  {
    while (left_[group] > 0) {
      step();
    }
    left_.erase(group);
  }

  /// Runs until every group is done.
  void wait_all()
  {
    while (!queued_.empty() || pending_ > 0 || in_flight_ > 0) {
      step();
    }
  }

  [[nodiscard]] std::exception_ptr const& error() const noexcept { return error_; }

 private:
  struct Piece {
    std::byte* buf;
    std::size_t len;
    std::size_t offset;
    std::size_t group;
  };

  // Prepares what fits, submits, waits for a completion and handles every one there is.
  void step()
  {
    while (!failed_ && !free_.empty() && !queued_.empty()) {
      Piece const p = queued_.front();
      queued_.pop_front();
      unsigned const slot = free_.back();
      free_.pop_back();
      slots_[slot]      = p;
      io_uring_sqe* sqe = io_uring_get_sqe(ring_);  // the queue holds depth entries: never null
      auto const length = static_cast<unsigned>(p.len);
      if (read_) {
        io_uring_prep_read(sqe, fd_, p.buf, length, p.offset);
      } else {
        io_uring_prep_write(sqe, fd_, p.buf, length, p.offset);
      }
      if (buffered_) { sqe->flags |= IOSQE_ASYNC; }
      io_uring_sqe_set_data64(sqe, slot);
      ++pending_;
    }
    if (failed_) {  // what is queued never goes out
      for (auto const& p : queued_) {
        --left_[p.group];
      }
      queued_.clear();
    }
    if (pending_ > 0) {
      int const r = io_uring_submit(ring_);
      if (r > 0) {
        in_flight_ += static_cast<unsigned>(r);
        pending_ -= static_cast<unsigned>(r);
      } else if (r != -EINTR && r != -EAGAIN && r != -EBUSY && r != 0) {
        broken("io_uring_submit", r);
      }
    }
    if (in_flight_ == 0) { return; }  // nothing taken (the kernel was short): submit again
    io_uring_cqe* cqe = nullptr;
    if (int const w = io_uring_wait_cqe(ring_, &cqe); w < 0) {
      if (w == -EINTR) { return; }
      broken("io_uring_wait_cqe", w);
    }
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring_, head, cqe)
    {
      ++seen;
      auto const slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      completed(slots_[slot], cqe->res);
      free_.push_back(slot);
      --in_flight_;
    }
    io_uring_cq_advance(ring_, seen);
  }

  void completed(Piece const& p, int res)
  {
    if ((res == -EINTR || res == -EAGAIN) && !failed_) {
      queued_.push_front(p);
      return;
    }
    if (res > 0 && static_cast<std::size_t>(res) < p.len && !failed_) {  // short: the rest
      auto const n = static_cast<std::size_t>(res);
      queued_.push_front(Piece{p.buf + n, p.len - n, p.offset + n, p.group});
      return;
    }
    --left_[p.group];
    if (res > 0 || failed_) { return; }
    failed_ = true;
    try {
      if (res == 0 && read_) { throw_read_past_end(fd_, size_, offset_); }
      throw_system_error(res == 0 ? EIO : -res,
                         __FILE__,
                         __LINE__,
                         std::string{"io_uring "} + (read_ ? "read" : "write") + "(fd " +
                           std::to_string(fd_) + ", " + std::to_string(p.len) +
                           " bytes at offset " + std::to_string(p.offset) + ") failed");
    } catch (...) {
      error_ = std::current_exception();
    }
  }

  io_uring* ring_;
  bool read_;
  bool buffered_;
  int fd_;
  std::size_t size_;
  std::size_t offset_;
  std::size_t piece_;
  std::vector<Piece> slots_;  // by the index each request carries
  std::vector<unsigned> free_;
  std::deque<Piece> queued_;
  std::map<std::size_t, std::size_t> left_;  // group -> pieces not done
  unsigned pending_{0};                      // prepared, not yet taken by the kernel
  unsigned in_flight_{0};                    // taken, not yet completed
  bool failed_{false};
  std::exception_ptr error_;
};

}  // namespace

bool io_uring_usable() noexcept
{
  int state = probed.load(std::memory_order_acquire);
  if (state != 0) { return state == 1 && this_thread_ring() != nullptr; }
  io_uring ring{};
  int const r = setup(4, &ring);
  if (r == 0) { io_uring_queue_exit(&ring); }
  int expected = 0;
  if (probed.compare_exchange_strong(expected, r == 0 ? 1 : 2) && r != 0) {
    KVIKIO_LOG_WARN("KVIKIO_LOCAL_IO_BACKEND=io_uring, but io_uring is unavailable here (",
                    "io_uring_setup: ",
                    std::strerror(-r),
                    "): local I/O uses posix");
  }
  return probed.load() == 1 && this_thread_ring() != nullptr;
}

bool io_uring_selected()
{
  return defaults::local_io_backend() == LocalIOBackend::IO_URING && io_uring_usable();
}

void set_io_uring_request_shape(std::size_t piece, unsigned depth)
{
  KVIKIO_EXPECT(piece > 0 && piece <= (std::size_t{1} << 30),
                "io_uring: the request size must be 1 byte to 1 GiB (a request's length is 32 "
                "bits), got " +
                  std::to_string(piece),
                std::invalid_argument);
  KVIKIO_EXPECT(depth >= 1 && depth <= io_uring_max_depth,
                "io_uring: requests in flight must be 1.." + std::to_string(io_uring_max_depth) +
                  ", got " + std::to_string(depth),
                std::invalid_argument);
  piece_size.store(piece);
  queue_depth.store(depth);
}

std::size_t io_uring_piece_size() noexcept { return piece_size.load(); }

unsigned io_uring_queue_depth() noexcept { return queue_depth.load(); }

void override_io_uring_setup(int errno_value, bool forget_probe) noexcept
{
  forced_setup_errno.store(errno_value);
  if (forget_probe) { probed.store(0); }
}

void io_uring_transfer_all(
  bool read, int fd, std::byte* buf, std::size_t size, std::size_t offset, bool buffered)
{
  Requests requests{read, fd, size, offset, buffered};
  requests.add(buf, size, offset, 0);
  requests.wait_all();
  if (requests.error()) { std::rethrow_exception(requests.error()); }
}

std::size_t io_uring_read_to_device(int fd,
                                    CUdeviceptr dev,
                                    std::size_t size,
                                    std::size_t offset,
                                    BounceBufferRing<>& ring,
                                    CUstream stream)
{
  Requests requests{true, fd, size, offset};
  struct Filling {
    std::size_t slot, pos, len, group;
  };
  std::deque<Filling> filling;  // in the order the slots were reserved
  std::size_t pos   = 0;
  std::size_t group = 0;
  while (pos < size || !filling.empty()) {
    while (!requests.error() && pos < size && filling.size() < ring.num_slots()) {
      std::size_t const slot = ring.reserve();  // waits for the slot's last copy only
      std::size_t const len  = std::min(ring.slot_size(), size - pos);
      requests.add(static_cast<std::byte*>(ring.data(slot)), len, offset + pos, group);
      filling.push_back({slot, pos, len, group++});
      pos += len;
    }
    if (filling.empty()) { break; }
    auto const oldest = filling.front();
    filling.pop_front();
    requests.wait_group(oldest.group);
    if (!requests.error()) { ring.submit_h2d(oldest.slot, dev + oldest.pos, oldest.len, stream); }
  }
  ring.finish();
  if (requests.error()) { std::rethrow_exception(requests.error()); }
  return size;
}

}  // namespace kvikio::detail
