/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/io_uring/io_uring_io.hpp"
#include "io/io_uring/test_hooks.hpp"

#include <liburing.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <system_error>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>

#include "core/threadpool_internals.hpp"
#include "io/io_uring/thread_ring.hpp"

namespace kvikio::detail {
namespace uring {
namespace {

std::atomic<int> forced_setup_errno{0};
std::atomic<int> probed{0};  // 0: not yet, 1: usable, 2: not usable
std::atomic<bool> registered_buffers{true};
std::atomic<unsigned> max_workers{0};  // kernel workers per ring for file requests; 0: automatic

// Registered-buffer table entries per thread ring: staging buffers of the transfers on the thread
// (the default shape takes 4), with room for settings that take more.
constexpr unsigned registered_table_size = 64;

// A ring refused for want of descriptors or memory may be granted later: such a refusal sends
// one call to posix and is not remembered (a full descriptor table at the first use would
// otherwise turn io_uring off for the process, or the thread, for good).
bool refused_for_now(int errno_value) noexcept
{
  return errno_value == EMFILE || errno_value == ENFILE || errno_value == ENOMEM ||
         errno_value == EAGAIN;
}

int setup(unsigned entries, io_uring* ring) noexcept
{
  int const forced = forced_setup_errno.load();
  return forced != 0 ? -forced : io_uring_queue_init(entries, ring, 0);
}

}  // namespace

ThreadRing::ThreadRing()
{
  if (int const r = setup(io_uring_max_depth, &ring_); r < 0) {
    throw_system_error(-r, __FILE__, __LINE__, "io_uring_queue_init failed");
  }
  registrable_ = io_uring_register_buffers_sparse(&ring_, registered_table_size) == 0;
}

ThreadRing::~ThreadRing() noexcept { io_uring_queue_exit(&ring_); }

int ThreadRing::registered_index(void* buffer, std::size_t size)
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

void ThreadRing::apply_max_workers(std::size_t pool_threads) noexcept
{
  unsigned wanted = max_workers.load();
  if (wanted == 0) {
    // Each pool thread has its own ring, and each ring's workers would otherwise grow to the
    // kernel's bound (4 per CPU): with 8 threads on 16 cores the copies then fight over the
    // cores, and device reads, whose copies need cores too, slow down.
    unsigned const cores = machine_cores();
    auto const threads   = static_cast<unsigned>(std::clamp<std::size_t>(pool_threads, 1, cores));
    wanted               = std::max(1U, cores / threads);
  }
  if (wanted == applied_workers_) { return; }
  unsigned values[2] = {wanted, wanted};
  if (io_uring_register_iowq_max_workers(&ring_, values) == 0) { applied_workers_ = wanted; }
}

void ThreadRing::forget_registered() noexcept
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

ThreadRing* this_thread_ring_object() noexcept
{
  static std::atomic<bool> logged{false};
  thread_local std::unique_ptr<ThreadRing> ring;
  thread_local unsigned int ring_generation = 0;
  thread_local bool refused                 = false;
  if (ring && ring_generation != detail::fork_generation()) {
    // This thread forked: the ring's queues are shared with the parent's same ring, and closing
    // it would unregister the parent's buffers. The child leaves it alone and makes its own.
    (void)ring.release();
  }
  if (!ring && !refused) {
    ring_generation = detail::fork_generation();
    try {
      ring = std::make_unique<ThreadRing>();
    } catch (std::exception const& e) {
      auto const* system = dynamic_cast<std::system_error const*>(&e);
      if (system != nullptr && refused_for_now(system->code().value())) { return nullptr; }
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

}  // namespace uring

using uring::probed;
using uring::refused_for_now;
using uring::setup;
using uring::this_thread_ring;

bool io_uring_available() noexcept
{
  int state = probed.load(std::memory_order_acquire);
  if (state != 0) { return state == 1; }
  io_uring ring{};
  int const r = setup(4, &ring);
  if (r == 0) { io_uring_queue_exit(&ring); }
  if (r != 0 && refused_for_now(-r)) { return false; }
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

void set_io_uring_max_workers(unsigned workers) noexcept { uring::max_workers.store(workers); }

unsigned io_uring_max_workers() noexcept { return uring::max_workers.load(); }

std::size_t threads_sharing_the_cores(std::size_t pool_threads)
{
  std::size_t const of_the_call =
    pool_threads > 0 ? pool_threads : defaults::thread_pool_nthreads();
  return std::max({of_the_call, threads_of_live_pools(), std::size_t{1}});
}

void override_io_uring_setup(int errno_value, bool forget_probe) noexcept
{
  uring::forced_setup_errno.store(errno_value);
  if (forget_probe) { probed.store(0); }
}

void set_io_uring_registered_buffers(bool on) noexcept { uring::registered_buffers.store(on); }

std::size_t io_uring_registered_buffer_count() noexcept
{
  uring::ThreadRing* const ring = uring::this_thread_ring_object();
  return ring == nullptr ? 0 : ring->registered_count();
}

}  // namespace kvikio::detail
