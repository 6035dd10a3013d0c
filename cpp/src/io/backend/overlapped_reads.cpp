/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/local_backend.hpp>

#include <deque>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/worker_leftovers.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

// The shape of read_device()'s ring for the settings now: k slots, each at most a task's share.
struct RingShape {
  std::size_t slots{0};
  std::size_t max_slot{0};
  bool operator==(RingShape const&) const = default;
};

RingShape ring_shape()
{
  std::size_t const k = defaults::num_bounce_buffers();
  return {k, defaults::task_size() / k};
}

}  // namespace

/**
 * The overlapped device reads of one pool worker: a ring of pinned slots of its own (a pool
 * buffer, taken while reads are pending and given back when the worker finishes them) and the
 * reads whose copies are in flight, oldest first. Slots are used in turn, so the oldest pending
 * read holds the slot the next read needs.
 */
class OverlappedReads final : public WorkerLeftovers {
 public:
  /// This thread's, or nullptr if the thread is not a pool worker (nobody would finish them).
  static OverlappedReads* for_this_worker()
  {
    thread_local OverlappedReads reads;
    thread_local bool const registered = register_worker_leftovers(reads);
    return registered ? &reads : nullptr;
  }

  // Reads into a slot and starts its copy; `done` is moved in only once nothing can throw.
  void read(StagedBackend& backend,
            LocalFile const& file,
            CUdeviceptr dst,
            std::size_t size,
            std::size_t file_offset,
            std::promise<std::size_t>& done)
  {
    CUcontext ctx{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&ctx));
    auto const shape = ring_shape();
    // A ring's events and stream belong to one context, and its slots to the settings it was
    // made with.
    if (ring_ && (ctx != ctx_ || shape != shape_)) { finish(); }
    if (ring_ && pending_.size() == ring_->num_slots()) { complete_oldest(true); }
    if (!ring_) {
      ring_.emplace(shape.slots, 1, shape.max_slot);
      shape_ = shape;
      ctx_   = ctx;
    }
    KVIKIO_EXPECT(size <= ring_->slot_size(),
                  "overlapped device read of more bytes than a slot holds",
                  std::invalid_argument);
    std::size_t const slot = ring_->reserve();
    newest_slot_           = slot;
    backend.host_io(true, file, static_cast<std::byte*>(ring_->data(slot)), size, file_offset);
    ring_->submit_h2d(slot, dst, size, StagedBackend::current_context_stream());
    pending_.push_back(Pending{slot, size, std::move(done)});
  }

  bool progress() noexcept override
  {
    while (!pending_.empty() && complete_oldest(false)) {}
    return !pending_.empty();
  }

  // The copies first, then the ring back to the pool, then the futures: whoever waits for the
  // last of them finds the pinned buffer and the events back in their pools.
  void finish() noexcept override
  {
    if (pending_.empty()) {
      ring_.reset();
      return;
    }
    std::deque<Pending> ended;
    ended.swap(pending_);
    std::vector<std::exception_ptr> errors(ended.size());
    for (std::size_t i = 0; i < ended.size(); ++i) {
      try {
        (void)ring_->wait(ended[i].slot);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    ring_.reset();
    for (std::size_t i = 0; i < ended.size(); ++i) {
      if (errors[i]) {
        ended[i].done.set_exception(errors[i]);
      } else {
        ended[i].done.set_value(ended[i].size);
      }
    }
  }

 private:
  struct Pending {
    std::size_t slot;
    std::size_t size;
    std::promise<std::size_t> done;
  };

  // Completes the oldest pending read, waiting for its copy, or (`wait` false) only if that is
  // done already; returns whether it did. The last pending read gives the ring back before its
  // future is ready. A failed copy ends them all (finish()): the ring's state after a driver
  // error is not trusted.
  bool complete_oldest(bool wait) noexcept
  {
    auto& oldest = pending_.front();
    std::exception_ptr error;
    try {
      if (wait) {
        (void)ring_->wait(oldest.slot);
      } else {
        // is_free() counts from the slot last reserved.
        std::size_t const n     = ring_->num_slots();
        std::size_t const ahead = (oldest.slot + n - newest_slot_) % n;
        if (!ring_->is_free(ahead)) { return false; }
      }
    } catch (...) {
      error = std::current_exception();
    }
    auto done              = std::move(oldest.done);
    std::size_t const size = oldest.size;
    pending_.pop_front();
    if (error) {
      finish();
      done.set_exception(error);
      return true;
    }
    if (pending_.empty()) { ring_.reset(); }  // nothing in flight: the buffer back to the pool
    done.set_value(size);
    return true;
  }

  std::optional<BounceBufferRing<>> ring_;
  RingShape shape_{};
  CUcontext ctx_{};
  std::size_t newest_slot_{0};
  std::deque<Pending> pending_;
};

std::size_t StagedBackend::overlapped_read_limit() const
{
  auto const shape = ring_shape();
  return BounceBufferRing<>::slot_size_for(
    defaults::bounce_buffer_size(), shape.slots, shape.max_slot);
}

void StagedBackend::read_device_overlapped(LocalFile const& file,
                                           void* dst,
                                           std::size_t size,
                                           std::size_t file_offset,
                                           std::promise<std::size_t> done) noexcept
{
  KVIKIO_NVTX_FUNC_RANGE();
  try {
    auto* const reads =
      size > 0 && size <= overlapped_read_limit() ? OverlappedReads::for_this_worker() : nullptr;
    if (reads != nullptr) {
      reads->read(*this, file, convert_void2deviceptr(dst), size, file_offset, done);
      return;
    }
    ChunkCursor cursor{size};
    done.set_value(read_device(file, dst, 0, file_offset, cursor));
  } catch (...) {
    done.set_exception(std::current_exception());
  }
}

void DeviceBackend::read_device_overlapped(LocalFile const& file,
                                           void* dst,
                                           std::size_t size,
                                           std::size_t file_offset,
                                           std::promise<std::size_t> done) noexcept
{
  try {
    ChunkCursor cursor{size};
    done.set_value(read_device(file, dst, 0, file_offset, cursor));
  } catch (...) {
    done.set_exception(std::current_exception());
  }
}

}  // namespace kvikio::detail
