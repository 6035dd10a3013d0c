/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/io_uring_io.hpp>

#include <liburing.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/posix_io.hpp>
#include <kvikio/error.hpp>

namespace kvikio::detail {
namespace {

std::atomic<int> forced_setup_errno{0};
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
    if (int const r = setup(io_uring_queue_depth, &ring_); r < 0) {
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

struct Piece {
  std::size_t pos;  // from the start of the transfer
  std::size_t len;
};

[[noreturn]] void fail(int err, bool read, int fd, Piece p, std::size_t offset)
{
  throw_system_error(err,
                     __FILE__,
                     __LINE__,
                     std::string{"io_uring "} + (read ? "read" : "write") + "(fd " +
                       std::to_string(fd) + ", " + std::to_string(p.len) + " bytes at offset " +
                       std::to_string(offset + p.pos) + ") failed");
}

// The ring itself failed (not a request): requests in flight may still write into the caller's
// buffer and prepared ones would go out with the next transfer, so there is no safe way on.
[[noreturn]] void broken(char const* call, int r) noexcept
{
  KVIKIO_LOG_ERROR("io_uring: ", call, " failed (", std::strerror(-r), "): aborting");
  std::abort();
}

}  // namespace

bool io_uring_usable() noexcept
{
  int state = probed.load(std::memory_order_acquire);
  if (state != 0) { return state == 1; }
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
  return probed.load() == 1;
}

void override_io_uring_setup(int errno_value) noexcept
{
  forced_setup_errno.store(errno_value);
  probed.store(0);
}

void io_uring_transfer_all(bool read, int fd, std::byte* buf, std::size_t size, std::size_t offset)
{
  thread_local ThreadRing thread_ring;
  io_uring* const ring = thread_ring.get();
  std::array<Piece, io_uring_queue_depth> slots{};
  std::vector<unsigned> free_slots;
  for (unsigned i = 0; i < io_uring_queue_depth; ++i) {
    free_slots.push_back(io_uring_queue_depth - 1 - i);
  }
  std::vector<Piece> again;  // short transfers and interrupted requests
  std::size_t next   = 0;    // the first byte no request has asked for yet
  unsigned pending   = 0;    // prepared, not yet taken by the kernel
  unsigned in_flight = 0;    // taken, not yet completed
  std::exception_ptr error;
  auto record = [&](std::exception_ptr e) {
    if (!error) { error = std::move(e); }
  };
  while (true) {
    unsigned prepared = 0;
    while (!error && !free_slots.empty() && (!again.empty() || next < size)) {
      Piece p{};
      if (!again.empty()) {
        p = again.back();
        again.pop_back();
      } else {
        p = Piece{next, std::min(io_uring_piece_size, size - next)};
        next += p.len;
      }
      unsigned const slot = free_slots.back();
      free_slots.pop_back();
      slots[slot]       = p;
      io_uring_sqe* sqe = io_uring_get_sqe(ring);  // the queue holds depth entries: never null
      auto const length = static_cast<unsigned>(p.len);
      auto const at     = static_cast<__u64>(offset + p.pos);
      if (read) {
        io_uring_prep_read(sqe, fd, buf + p.pos, length, at);
      } else {
        io_uring_prep_write(sqe, fd, buf + p.pos, length, at);
      }
      sqe->flags |= IOSQE_ASYNC;
      io_uring_sqe_set_data64(sqe, slot);
      ++prepared;
    }
    pending += prepared;
    if (pending > 0) {
      int const r = io_uring_submit(ring);
      if (r > 0) {
        in_flight += static_cast<unsigned>(r);
        pending -= static_cast<unsigned>(r);
      } else if (r != -EINTR && r != -EAGAIN && r != -EBUSY && r != 0) {
        broken("io_uring_submit", r);
      }
    }
    if (in_flight == 0) {
      if (pending == 0) { break; }
      continue;  // the kernel was short of resources: submit again
    }
    io_uring_cqe* cqe = nullptr;
    if (int const w = io_uring_wait_cqe(ring, &cqe); w < 0) {
      if (w == -EINTR) { continue; }
      broken("io_uring_wait_cqe", w);
    }
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring, head, cqe)
    {
      ++seen;
      auto const slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      Piece const p   = slots[slot];
      free_slots.push_back(slot);
      --in_flight;
      int const res = cqe->res;
      if (res == -EINTR || res == -EAGAIN) {
        again.push_back(p);
      } else if (res < 0) {
        try {
          fail(-res, read, fd, p, offset);
        } catch (...) {
          record(std::current_exception());
        }
      } else if (res == 0) {
        try {
          if (read) { throw_read_past_end(fd, size, offset); }
          fail(EIO, read, fd, p, offset);
        } catch (...) {
          record(std::current_exception());
        }
      } else if (static_cast<std::size_t>(res) < p.len) {
        again.push_back(Piece{p.pos + static_cast<std::size_t>(res), p.len - res});
      }
    }
    io_uring_cq_advance(ring, seen);
  }
  if (error) { std::rethrow_exception(error); }
}

}  // namespace kvikio::detail
