/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/io_uring/io_uring_io.hpp"

#include <algorithm>
#include <cstddef>
#include <deque>
#include <exception>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>

#include "io/io_uring/requests.hpp"
#include "io/io_uring/thread_ring.hpp"

namespace kvikio::detail {

std::size_t io_uring_staging_buffers(std::size_t pool_threads, std::size_t transfer_bytes)
{
  // The pool's threads share one shape's bytes: more in flight than that only adds kernel
  // workers competing for the cores.
  std::size_t const threads = threads_sharing_the_cores(pool_threads);
  std::size_t const in_flight =
    std::min(io_uring_piece_size() * io_uring_queue_depth() / threads, transfer_bytes);
  std::size_t const buffer = detail::staging_buffer_size();
  return std::max<std::size_t>((in_flight + buffer - 1) / buffer, 1);
}

namespace {

/// A device transfer's staging: its ring and, per buffer, its registered index on this thread's
/// ring (-1: plain requests).
class Staging {
 public:
  Staging(std::size_t pool_threads, std::size_t transfer_bytes)
    : ring_{defaults::num_bounce_buffers(), io_uring_staging_buffers(pool_threads, transfer_bytes)},
      per_buffer_{ring_.num_slots() / ring_.num_buffers()}
  {
    uring::ThreadRing* const thread_ring = uring::this_thread_ring_object();
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
  Staging staging{pool_threads, cursor.size()};
  uring::Requests requests{true, fd, cursor.size(), offset, true, pool_threads};
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

}  // namespace kvikio::detail
