/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/io_uring/io_uring_io.hpp"
#include "io/io_uring/test_hooks.hpp"

#include <liburing.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>

#include "io/io_uring/requests.hpp"
#include "io/io_uring/thread_ring.hpp"

namespace kvikio::detail {
namespace uring {
namespace {

std::atomic<std::size_t> piece_size{std::size_t{1} << 20};
std::atomic<unsigned> queue_depth{64};
std::atomic<IoUringFault::Kind> fault_kind{IoUringFault::Kind::none};
std::atomic<unsigned> fault_every{0};
std::atomic<int> fault_error{0};
std::atomic<unsigned> fault_count{0};

// What the engine is told a request moved: the kernel's result, or an injected fault (tests).
int reported_result(int res) noexcept
{
  unsigned const every = fault_every.load(std::memory_order_relaxed);
  if (every == 0 || res < 0 || fault_count.fetch_add(1) % every != every - 1) { return res; }
  switch (fault_kind.load()) {
    case IoUringFault::Kind::short_transfer: return res > 1 ? res / 2 : res;
    case IoUringFault::Kind::eintr: return -EINTR;
    case IoUringFault::Kind::eagain: return -EAGAIN;
    case IoUringFault::Kind::cancelled: return -ECANCELED;
    case IoUringFault::Kind::error: return -fault_error.load();
    default: return res;
  }
}

// The ring itself failed (not a request): requests in flight may still write into the caller's
// buffer and prepared ones would go out with the next transfer, so there is no safe way on.
[[noreturn]] void broken(char const* call, int r) noexcept
{
  KVIKIO_LOG_ERROR("io_uring: ", call, " failed (", std::strerror(-r), "): aborting");
  std::abort();
}

RequestState& this_thread_request_state() noexcept
{
  thread_local RequestState state;
  return state;
}

}  // namespace

Requests::Requests(
  bool read, int fd, std::size_t size, std::size_t offset, bool buffered, std::size_t pool_threads)
  : read_{read},
    buffered_{buffered},
    fd_{fd},
    size_{size},
    offset_{offset},
    piece_{io_uring_piece_size()},
    state_{this_thread_request_state()},
    slots_{state_.slots},
    free_{state_.free},
    queued_{state_.queued}
{
  ThreadRing* const ring = this_thread_ring_object();
  KVIKIO_EXPECT(ring != nullptr,
                "io_uring: this thread has no ring (io_uring_setup refused)",
                std::runtime_error);
  // Completions of the ring are matched to this transfer's requests by index alone.
  KVIKIO_EXPECT(!state_.in_use, "io_uring: a second transfer on one thread's ring at once");
  ring->apply_max_workers(threads_sharing_the_cores(pool_threads));
  ring_ = ring->get();
  slots_.resize(io_uring_queue_depth());
  free_.clear();
  for (auto i = static_cast<unsigned>(slots_.size()); i > 0; --i) {
    free_.push_back(i - 1);
  }
  queued_.clear();
  state_.left.clear();
  state_.in_use = true;  // last: a constructor that threw above runs no destructor
}

Requests::~Requests() noexcept
{
  failed_ = true;  // whatever is left: only what is in flight is waited for
  while (in_flight_ > 0 || pending_ > 0) {
    step();
  }
  state_.in_use = false;
}

void Requests::add(
  std::byte* buf, std::size_t len, std::size_t offset, std::size_t group, int registered)
{
  for (std::size_t pos = 0; pos < len; pos += piece_) {
    queued_.push_back(
      Piece{buf + pos, std::min(piece_, len - pos), offset + pos, group, registered});
    ++state_.left_of(group);
  }
}

void Requests::wait_group(std::size_t group)
{
  while (state_.left_of(group) > 0) {
    step();
  }
  state_.erase_group(group);
}

void Requests::wait_all()
{
  while (!queued_.empty() || pending_ > 0 || in_flight_ > 0) {
    step();
  }
}

void Requests::step()
{
  prepare_and_submit();
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
    completed(slots_[slot], reported_result(cqe->res));
    free_.push_back(slot);
    --in_flight_;
  }
  io_uring_cq_advance(ring_, seen);
}

void Requests::prepare_and_submit()
{
  while (!failed_ && !free_.empty() && !queued_.empty()) {
    Piece const p       = queued_.pop_front();
    unsigned const slot = free_.back();
    free_.pop_back();
    slots_[slot]      = p;
    io_uring_sqe* sqe = io_uring_get_sqe(ring_);  // the queue holds depth entries: never null
    auto const length = static_cast<unsigned>(p.len);
    if (p.registered >= 0) {  // staging of device reads
      io_uring_prep_read_fixed(sqe, fd_, p.buf, length, p.offset, p.registered);
    } else if (read_) {
      io_uring_prep_read(sqe, fd_, p.buf, length, p.offset);
    } else {
      io_uring_prep_write(sqe, fd_, p.buf, length, p.offset);
    }
    if (buffered_ && read_) { sqe->flags |= IOSQE_ASYNC; }  // see io_uring_transfer_all()
    io_uring_sqe_set_data64(sqe, slot);
    ++pending_;
  }
  if (failed_) {  // what is queued never goes out
    queued_.for_each([this](Piece const& p) { --state_.left_of(p.group); });
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
}

void Requests::completed(Piece const& p, int res)
{
  // Redone: interrupted or would-block requests.
  if ((res == -EINTR || res == -EAGAIN) && !failed_) {
    queued_.push_front(p);
    return;
  }
  // Cancelled: this engine never cancels, but the kernel cancels work it cannot start (no io-wq
  // worker: a pending signal interrupted its creation, or a limit on threads refuses it, for as
  // long as the limit holds). This thread moves the piece itself, which always makes progress.
  if (res == -ECANCELED && !failed_) {
    ssize_t const n = read_ ? ::pread(fd_, p.buf, p.len, static_cast<off_t>(p.offset))
                            : ::pwrite(fd_, p.buf, p.len, static_cast<off_t>(p.offset));
    completed(p, n >= 0 ? static_cast<int>(n) : -errno);
    return;
  }
  if (res > 0 && static_cast<std::size_t>(res) < p.len && !failed_) {  // short: the rest
    auto const n = static_cast<std::size_t>(res);
    queued_.push_front(Piece{p.buf + n, p.len - n, p.offset + n, p.group, p.registered});
    return;
  }
  --state_.left_of(p.group);
  if (res > 0 || failed_) { return; }
  failed_ = true;
  try {
    if (res == 0 && read_) { throw_read_past_end(fd_, size_, offset_); }
    throw_system_error(res == 0 ? EIO : -res,
                       __FILE__,
                       __LINE__,
                       std::string{"io_uring "} + (read_ ? "read" : "write") + "(" +
                         fd_for_message(fd_) + ", " + std::to_string(p.len) + " bytes at offset " +
                         std::to_string(p.offset) + ") failed");
  } catch (...) {
    error_ = std::current_exception();
  }
}

}  // namespace uring

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
  uring::piece_size.store(piece);
  uring::queue_depth.store(depth);
}

std::size_t io_uring_piece_size() noexcept { return uring::piece_size.load(); }

unsigned io_uring_queue_depth() noexcept { return uring::queue_depth.load(); }

void io_uring_transfer_all(bool read,
                           int fd,
                           std::byte* buf,
                           std::size_t size,
                           std::size_t offset,
                           bool buffered,
                           std::size_t pool_threads)
{
  uring::Requests requests{read, fd, size, offset, buffered, pool_threads};
  requests.add(buf, size, offset, 0);
  requests.wait_all();
  if (requests.error()) { std::rethrow_exception(requests.error()); }
}

void inject_io_uring_fault(IoUringFault fault) noexcept
{
  uring::fault_every.store(0);
  uring::fault_count.store(0);
  uring::fault_kind.store(fault.kind);
  uring::fault_error.store(fault.error);
  uring::fault_every.store(fault.kind == IoUringFault::Kind::none ? 0 : fault.every);
}

}  // namespace kvikio::detail
