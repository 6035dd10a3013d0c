/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/io_uring_io.hpp>

#include <liburing.h>
#include <sys/uio.h>

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
#include <thread>
#include <utility>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/local_backend.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/error.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

std::atomic<int> forced_setup_errno{0};
std::atomic<std::size_t> piece_size{std::size_t{1} << 20};
std::atomic<unsigned> queue_depth{64};
std::atomic<int> probed{0};  // 0: not yet, 1: usable, 2: not usable
std::atomic<bool> registered_buffers{true};
std::atomic<unsigned> max_workers{0};  // kernel workers per ring for file requests; 0: automatic
std::atomic<IoUringFault::Kind> fault_kind{IoUringFault::Kind::none};
std::atomic<unsigned> fault_every{0};
std::atomic<int> fault_error{0};
std::atomic<unsigned> fault_count{0};

unsigned machine_cores() noexcept
{
  static unsigned const cores = std::max(1U, std::thread::hardware_concurrency());
  return cores;
}

// The threads whose rings share the machine: those of the pool running the transfer (0: the
// global pool's setting), at least one.
std::size_t threads_sharing_the_cores(std::size_t pool_threads)
{
  return std::max<std::size_t>(pool_threads > 0 ? pool_threads : defaults::thread_pool_nthreads(),
                               1);
}

// Registered-buffer table entries per thread ring: staging buffers of the transfers on the thread
// (the default shape takes 4), with room for settings that take more.
constexpr unsigned registered_table_size = 64;

// What the engine is told a request moved: the kernel's result, or an injected fault (tests).
int reported_result(int res) noexcept
{
  unsigned const every = fault_every.load(std::memory_order_relaxed);
  if (every == 0 || res < 0 || fault_count.fetch_add(1) % every != every - 1) { return res; }
  switch (fault_kind.load()) {
    case IoUringFault::Kind::short_transfer: return res > 1 ? res / 2 : res;
    case IoUringFault::Kind::eintr: return -EINTR;
    case IoUringFault::Kind::eagain: return -EAGAIN;
    case IoUringFault::Kind::error: return -fault_error.load();
    default: return res;
  }
}

int setup(unsigned entries, io_uring* ring) noexcept
{
  int const forced = forced_setup_errno.load();
  return forced != 0 ? -forced : io_uring_queue_init(entries, ring, 0);
}

/**
 * This thread's ring, set up at its first transfer and torn down when the thread ends, with a
 * sparse table of registered buffers: pool staging buffers are registered at their first use on
 * the thread, so that their requests go as fixed reads and writes (the kernel neither looks up
 * nor pins their pages per request). A registration keeps its pages referenced; when the pool
 * frees any buffer, its address may come back as another buffer, so the table is emptied.
 */
class ThreadRing {
 public:
  ThreadRing()
  {
    if (int const r = setup(io_uring_max_depth, &ring_); r < 0) {
      throw_system_error(-r, __FILE__, __LINE__, "io_uring_queue_init failed");
    }
    registrable_ = io_uring_register_buffers_sparse(&ring_, registered_table_size) == 0;
  }
  ~ThreadRing() noexcept { io_uring_queue_exit(&ring_); }
  ThreadRing(ThreadRing const&)            = delete;
  ThreadRing& operator=(ThreadRing const&) = delete;
  io_uring* get() noexcept { return &ring_; }

  /// The table index of pool buffer `buffer` (`size` bytes), registered now if it is not yet;
  /// -1 where registration is off, refused or the table is full (plain requests then).
  int registered_index(void* buffer, std::size_t size)
  {
    if (!registrable_ || !registered_buffers.load()) { return -1; }
    std::size_t const freed = BounceBufferPool<>::instance().num_freed();
    if (freed != pool_freed_seen_) {
      forget_registered();
      pool_freed_seen_ = freed;
    }
    if (auto it = registered_.find(buffer); it != registered_.end() && it->second.size >= size) {
      return it->second.index;
    }
    if (registered_.size() >= registered_table_size) { return -1; }
    auto const index = static_cast<int>(registered_.size());
    iovec iov{buffer, size};
    __u64 tag = 0;
    if (int const r = io_uring_register_buffers_update_tag(&ring_, index, &iov, &tag, 1); r < 0) {
      registrable_ = false;
      KVIKIO_LOG_DEBUG("io_uring: registering a staging buffer failed (",
                       std::strerror(-r),
                       "): this thread's requests use plain buffers");
      return -1;
    }
    registered_[buffer] = Registered{size, index};
    return index;
  }
  [[nodiscard]] std::size_t registered_count() const noexcept { return registered_.size(); }

  /// Bounds this ring's kernel workers (both kinds: buffered file requests run on either) to
  /// what io_uring_max_workers() says, or by default to this thread's share of the cores, if
  /// that changed since the last transfer.
  void apply_max_workers(std::size_t pool_threads) noexcept
  {
    unsigned wanted = max_workers.load();
    if (wanted == 0) {
      // Each pool thread has its own ring, and each ring's workers would otherwise grow to the
      // kernel's bound (4 per CPU): with 8 threads on 16 cores the copies then fight over the
      // cores. Device reads measured 38-42 GB/s so, 44-50 with the cores shared out
      // (docs/benchmarks.md).
      unsigned const cores = machine_cores();
      auto const threads   = static_cast<unsigned>(std::clamp<std::size_t>(pool_threads, 1, cores));
      wanted               = std::max(1U, cores / threads);
    }
    if (wanted == applied_workers_) { return; }
    unsigned values[2] = {wanted, wanted};
    if (io_uring_register_iowq_max_workers(&ring_, values) == 0) { applied_workers_ = wanted; }
  }

 private:
  struct Registered {
    std::size_t size;
    int index;
  };
  void forget_registered() noexcept
  {
    if (registered_.empty()) { return; }
    std::vector<iovec> none(registered_.size(), iovec{nullptr, 0});
    std::vector<__u64> tags(registered_.size(), 0);
    if (io_uring_register_buffers_update_tag(
          &ring_, 0, none.data(), tags.data(), static_cast<unsigned>(none.size())) < 0) {
      registrable_ = false;  // the old entries stay: never use the table again
    }
    registered_.clear();
  }
  io_uring ring_{};
  unsigned applied_workers_{0};
  bool registrable_{false};
  std::size_t pool_freed_seen_{0};
  std::map<void*, Registered> registered_;
};

ThreadRing* this_thread_ring_object() noexcept;

/// This thread's ring, or null where it cannot be set up (a per-thread limit, say, after the
/// process's probe succeeded): then this thread's I/O goes through POSIX (logged once).
ThreadRing* this_thread_ring_object() noexcept
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
  return ring.get();
}

io_uring* this_thread_ring() noexcept
{
  ThreadRing* const ring = this_thread_ring_object();
  return ring != nullptr ? ring->get() : nullptr;
}

// The ring itself failed (not a request): requests in flight may still write into the caller's
// buffer and prepared ones would go out with the next transfer, so there is no safe way on.
[[noreturn]] void broken(char const* call, int r) noexcept
{
  KVIKIO_LOG_ERROR("io_uring: ", call, " failed (", std::strerror(-r), "): aborting");
  std::abort();
}

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

RequestState& this_thread_request_state() noexcept
{
  thread_local RequestState state;
  return state;
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
  Requests(bool read,
           int fd,
           std::size_t size,
           std::size_t offset,
           bool buffered,
           std::size_t pool_threads)
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
  ~Requests() noexcept
  {
    failed_ = true;  // whatever is left: only what is in flight is waited for
    while (in_flight_ > 0 || pending_ > 0) {
      step();
    }
    state_.in_use = false;
  }
  Requests(Requests const&)            = delete;
  Requests& operator=(Requests const&) = delete;

  /// Queues `len` bytes of `buf`, at file offset `offset`, as group `group`; `registered`: the
  /// table index of the registered buffer that holds them (-1: none).
  void add(
    std::byte* buf, std::size_t len, std::size_t offset, std::size_t group, int registered = -1)
  {
    for (std::size_t pos = 0; pos < len; pos += piece_) {
      queued_.push_back(
        Piece{buf + pos, std::min(piece_, len - pos), offset + pos, group, registered});
      ++state_.left_of(group);
    }
  }

  /// Runs until group `group` is done.
  void wait_group(std::size_t group)
  {
    while (state_.left_of(group) > 0) {
      step();
    }
    state_.erase_group(group);
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
  // Submits what fits, waits for a completion and handles every one there is.
  void step()
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

  void prepare_and_submit()
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

  void completed(Piece const& p, int res)
  {
    // Redone: interrupted or would-block requests, and cancelled ones: this engine never
    // cancels, but the kernel cancels work it could not start (an io-wq worker whose creation
    // a pending signal interrupted: seen on the GPU machine's kernel under a signal storm).
    if ((res == -EINTR || res == -EAGAIN || res == -ECANCELED) && !failed_) {
      queued_.push_front(p);
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
  RequestState& state_;
  std::vector<Piece>& slots_;  // by the index each request carries
  std::vector<unsigned>& free_;
  PieceQueue& queued_;
  unsigned pending_{0};    // prepared, not yet taken by the kernel
  unsigned in_flight_{0};  // taken, not yet completed
  bool failed_{false};
  std::exception_ptr error_;
};

}  // namespace

bool io_uring_available() noexcept
{
  int state = probed.load(std::memory_order_acquire);
  if (state != 0) { return state == 1; }
  io_uring ring{};
  int const r = setup(4, &ring);
  if (r == 0) { io_uring_queue_exit(&ring); }
  int expected = 0;
  if (probed.compare_exchange_strong(expected, r == 0 ? 1 : 2) && r != 0) {
    if (defaults::local_io_backend() == LocalIOBackend::IO_URING) {
      KVIKIO_LOG_WARN("KVIKIO_LOCAL_IO_BACKEND=io_uring, but io_uring is unavailable here (",
                      "io_uring_setup: ",
                      std::strerror(-r),
                      "): local I/O uses posix");
    } else {
      KVIKIO_LOG_INFO("local I/O uses posix: io_uring is unavailable here (io_uring_setup: ",
                      std::strerror(-r),
                      ")");
    }
  }
  return probed.load() == 1;
}

bool io_uring_usable() noexcept { return io_uring_available() && this_thread_ring() != nullptr; }

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

void set_io_uring_max_workers(unsigned workers) noexcept { max_workers.store(workers); }

unsigned io_uring_max_workers() noexcept { return max_workers.load(); }

unsigned io_uring_queue_depth() noexcept { return queue_depth.load(); }

void override_io_uring_setup(int errno_value, bool forget_probe) noexcept
{
  forced_setup_errno.store(errno_value);
  if (forget_probe) { probed.store(0); }
}

void io_uring_transfer_all(bool read,
                           int fd,
                           std::byte* buf,
                           std::size_t size,
                           std::size_t offset,
                           bool buffered,
                           std::size_t pool_threads)
{
  Requests requests{read, fd, size, offset, buffered, pool_threads};
  requests.add(buf, size, offset, 0);
  requests.wait_all();
  if (requests.error()) { std::rethrow_exception(requests.error()); }
}

std::size_t io_uring_staging_buffers(std::size_t pool_threads)
{
  // The pool's threads share one shape's bytes: more in flight than that only adds kernel
  // workers competing for the cores (measured: 16 threads with 64 MiB each read slower than
  // with 16 MiB).
  std::size_t const threads   = threads_sharing_the_cores(pool_threads);
  std::size_t const in_flight = io_uring_piece_size() * io_uring_queue_depth() / threads;
  std::size_t const buffer    = defaults::bounce_buffer_size();
  return std::max<std::size_t>((in_flight + buffer - 1) / buffer, 1);
}

namespace {

/// A device transfer's staging: its ring and, per buffer, its registered index on this thread's
/// ring (-1: plain requests).
class Staging {
 public:
  explicit Staging(std::size_t pool_threads)
    : ring_{defaults::num_bounce_buffers(), io_uring_staging_buffers(pool_threads)},
      per_buffer_{ring_.num_slots() / ring_.num_buffers()}
  {
    ThreadRing* const thread_ring = this_thread_ring_object();
    for (std::size_t b = 0; b < ring_.num_buffers(); ++b) {
      registered_.push_back(thread_ring == nullptr ? -1
                                                   : thread_ring->registered_index(
                                                       ring_.buffer(b), ring_.buffer_span()));
    }
  }
  BounceBufferRing<>& ring() noexcept { return ring_; }
  [[nodiscard]] int registered(std::size_t slot) const
  {
    return registered_.at(slot / per_buffer_);
  }

 private:
  BounceBufferRing<> ring_;
  std::size_t per_buffer_;
  std::vector<int> registered_;
};

}  // namespace

std::size_t io_uring_read_to_device(int fd,
                                    CUdeviceptr dev,
                                    std::size_t size,
                                    std::size_t offset,
                                    CUstream stream,
                                    std::size_t pool_threads)
{
  ChunkCursor cursor{size};
  return io_uring_read_to_device(fd, dev, offset, cursor, stream, pool_threads);
}

std::size_t io_uring_read_to_device(int fd,
                                    CUdeviceptr dev,
                                    std::size_t offset,
                                    ChunkCursor& cursor,
                                    CUstream stream,
                                    std::size_t pool_threads)
{
  // The staging outlives the requests: on an error the requests' destructor waits for reads
  // still writing into its buffers before they go back to the pool.
  Staging staging{pool_threads};
  Requests requests{true, fd, cursor.size(), offset, true, pool_threads};
  auto& ring = staging.ring();
  struct Filling {
    std::size_t slot, pos, len, group;
  };
  std::deque<Filling> filling;  // in the order the slots were reserved
  std::size_t group = 0;
  std::size_t moved = 0;
  bool more         = true;
  while (more || !filling.empty()) {
    while (!requests.error() && more && filling.size() < ring.num_slots()) {
      auto const chunk = cursor.take(ring.slot_size());
      if (!chunk) {
        more = false;
        break;
      }
      std::size_t const slot = ring.reserve();  // waits for the slot's last copy only
      requests.add(static_cast<std::byte*>(ring.data(slot)),
                   chunk->length,
                   offset + chunk->first,
                   group,
                   staging.registered(slot));
      filling.push_back({slot, chunk->first, chunk->length, group++});
      moved += chunk->length;
    }
    if (filling.empty()) { break; }
    auto const oldest = filling.front();
    filling.pop_front();
    requests.wait_group(oldest.group);
    if (!requests.error()) { ring.submit_h2d(oldest.slot, dev + oldest.pos, oldest.len, stream); }
  }
  ring.finish();
  if (requests.error()) { std::rethrow_exception(requests.error()); }
  return moved;
}

namespace {

// The staged algorithms over this thread's ring; a thread whose ring was refused moves its bytes
// by system calls (this_thread_ring_object() logged why).
class IoUringBackend final : public StagedBackend {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "io_uring"; }
  [[nodiscard]] bool deep_queue() const noexcept override { return true; }
  // Buffered reads: a deeper staging whose slots all have requests in flight at once.
  std::size_t read_device(LocalFile const& file,
                          void* base,
                          std::size_t base_offset,
                          std::size_t file_offset,
                          ChunkCursor& cursor) override
  {
    if (file.fd_direct >= 0 || cursor.size() == 0 || this_thread_ring() == nullptr) {
      return StagedBackend::read_device(file, base, base_offset, file_offset, cursor);
    }
    KVIKIO_NVTX_FUNC_RANGE();
    return io_uring_read_to_device(file.fd,
                                   convert_void2deviceptr(base) + base_offset,
                                   file_offset,
                                   cursor,
                                   current_context_stream(),
                                   file.pool_threads);
  }

 protected:
  void transfer_all(bool read,
                    LocalFile const& file,
                    bool buffered,
                    std::byte* buf,
                    std::size_t size,
                    std::size_t offset) override
  {
    int const fd = descriptor(file, buffered);
    if (this_thread_ring() == nullptr) {
      transfer_by_syscalls(read, fd, buf, size, offset);
    } else {
      io_uring_transfer_all(read, fd, buf, size, offset, buffered, file.pool_threads);
    }
  }
};

}  // namespace

StagedBackend& io_uring_backend() noexcept
{
  static auto* const backend = new IoUringBackend();  // never destroyed: used until exit
  return *backend;
}

void set_io_uring_registered_buffers(bool on) noexcept { registered_buffers.store(on); }

std::size_t io_uring_registered_buffer_count() noexcept
{
  ThreadRing* const ring = this_thread_ring_object();
  return ring == nullptr ? 0 : ring->registered_count();
}

void inject_io_uring_fault(IoUringFault fault) noexcept
{
  fault_every.store(0);
  fault_count.store(0);
  fault_kind.store(fault.kind);
  fault_error.store(fault.error);
  fault_every.store(fault.kind == IoUringFault::Kind::none ? 0 : fault.every);
}

}  // namespace kvikio::detail
