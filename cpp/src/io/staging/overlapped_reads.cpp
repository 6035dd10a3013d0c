/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/staging/device_staging.hpp"

#include <exception>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "core/worker_leftovers.hpp"
#include "cuda/stream_cache.hpp"
#include "io/staging/host_split.hpp"

namespace kvikio::detail {
namespace {

// Reads packed into one slot whose copies start together, in one call into the driver: the
// driver issues single copies one at a time, at a fixed cost each whatever the threads, and a
// batch of them at a fraction of that cost per copy.
constexpr std::size_t max_reads_per_slot = 8;

/**
 * The overlapped device reads of one pool worker: a ring of pinned slots of its own (a pool
 * buffer, taken while reads are pending and given back when the worker finishes them). A read
 * goes into the open slot (page-aligned); the slot's copies start at once when none of the
 * worker's copies are in flight, and otherwise when those are done, when the slot is full
 * (8 reads, or the next does not fit), when the worker runs out of reads, or before anything
 * else. So a lone read waits for nobody, and under load the reads that arrive while copies run
 * gather into one batch. Slots are used in turn, so the oldest slot in flight is the one the
 * next slot needs.
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

  // Reads into the open slot; `done` is moved in only once nothing can throw.
  void read(ByteMover& mover,
            LocalFile const& file,
            CUdeviceptr dst,
            std::size_t size,
            std::size_t file_offset,
            ObservedPromise& done)
  {
    CUcontext ctx{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&ctx));
    auto const shape = staging_ring_shape();
    // A ring's events and stream belong to one context, and its slots to the settings it was
    // made with.
    if (ring_ && (ctx != ctx_ || shape != shape_)) { finish(); }
    if (open_.holds_reads() &&
        (open_.reads.size() == max_reads_per_slot || open_.end + size > ring_->slot_size())) {
      start_open_copies();
    }
    if (ring_ && !open_.reserved && in_flight_.size() == ring_->num_slots()) {
      complete_oldest(true);
    }
    // (A failed wait above ends everything, the ring included.)
    if (!ring_) {
      ring_.emplace(shape.slots, 1, shape.max_slot);
      shape_ = shape;
      ctx_   = ctx;
      in_flight_.reserve(ring_->num_slots());
    }
    KVIKIO_EXPECT(size <= ring_->slot_size(),
                  "overlapped device read of more bytes than a slot holds",
                  std::invalid_argument);
    if (!open_.reserved) {
      // Room for the slot's reads first: nothing allocates once a read's promise is moved in.
      open_.pieces.reserve(max_reads_per_slot);
      open_.reads.reserve(max_reads_per_slot);
      open_.slot     = ring_->reserve();
      open_.reserved = true;
    }
    auto* const into = static_cast<std::byte*>(ring_->data(open_.slot)) + open_.end;
    host_io(mover, true, file, {into, size, file_offset});
    open_.pieces.push_back({dst, open_.end, size});
    open_.reads.push_back(Pending{size, std::move(done)});
    std::size_t const page = get_page_size();
    open_.end              = (open_.end + size + page - 1) / page * page;
    while (!in_flight_.empty() && complete_oldest(false)) {}
    if (in_flight_.empty()) { start_open_copies(); }
  }

  bool progress(bool another_task_follows) noexcept override
  {
    while (!in_flight_.empty() && complete_oldest(false)) {}
    if (open_.holds_reads() && (in_flight_.empty() || !another_task_follows)) {
      start_open_copies();
    }
    bool const left = !in_flight_.empty() || open_.holds_reads();
    if (!left) { release_ring(); }
    return left;
  }

  // The copies first, then the ring back to the pool, then the futures: whoever waits for the
  // last of them finds the pinned buffer and the events back in their pools.
  void finish() noexcept override
  {
    if (open_.holds_reads()) { start_open_copies(); }
    std::vector<Batch> ended;
    ended.swap(in_flight_);
    for (auto& batch : ended) {
      try {
        (void)ring_->wait(batch.slot);
      } catch (...) {
        batch.error = std::current_exception();
      }
    }
    release_ring();
    for (auto& batch : ended) {
      end_reads(batch.reads, batch.error);
    }
  }

 private:
  struct Pending {
    std::size_t size;
    ObservedPromise done;
  };
  // The reads of one slot, their copies started together.
  struct Batch {
    std::size_t slot{0};
    std::vector<Pending> reads;
    std::exception_ptr error{};  // of waiting for its copies, once finish() has
  };
  // The slot being filled: reserved in the ring, its copies not started yet.
  struct OpenSlot {
    bool reserved{false};
    std::size_t slot{0};
    std::size_t end{0};  // where the next read goes, page-aligned
    std::vector<BounceBufferRing<>::Piece> pieces;
    std::vector<Pending> reads;
    [[nodiscard]] bool holds_reads() const noexcept { return !reads.empty(); }
  };

  static void end_reads(std::vector<Pending>& reads, std::exception_ptr const& error) noexcept
  {
    for (auto& read : reads) {
      if (error) {
        read.done.set_exception(error);
      } else {
        read.done.set_value(read.size);
      }
    }
  }

  // Starts the open slot's copies, in the context the reads were made in (this may run between
  // tasks, where no context is current). If the driver refuses the batch, each read's copy is
  // tried alone, so that only the reads whose copy fails (a destination freed meanwhile) end
  // with the error.
  void start_open_copies() noexcept
  {
    if (!open_.holds_reads()) { return; }
    Batch batch{open_.slot, std::move(open_.reads)};
    auto const pieces = std::move(open_.pieces);
    open_             = OpenSlot{};
    using Pieces      = std::span<BounceBufferRing<>::Piece const>;
    auto const submit = [&](Pieces some) {
      PushAndPopContext const context{ctx_};
      ring_->submit_h2d(batch.slot, some, stream_for_this_thread(ctx_));
    };
    try {
      submit(Pieces{pieces});
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      std::size_t kept         = 0;
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (pieces.size() > 1) {
          try {
            submit(Pieces{&pieces[i], 1});
            if (kept != i) { batch.reads[kept] = std::move(batch.reads[i]); }
            ++kept;
            continue;
          } catch (...) {
            error = std::current_exception();
          }
        }
        batch.reads[i].done.set_exception(error);
      }
      batch.reads.resize(kept);
    }
    // Even with no read left it keeps its place: copies may still read the slot.
    in_flight_.push_back(std::move(batch));
  }

  // Completes the reads of the oldest slot in flight, waiting for its copies, or (`wait` false)
  // only if they are done already; returns whether it did. The last reads pending give the
  // ring back before their futures are ready. A failed copy ends them all (finish()).
  bool complete_oldest(bool wait) noexcept
  {
    auto& oldest = in_flight_.front();
    std::exception_ptr error;
    try {
      if (wait) {
        (void)ring_->wait(oldest.slot);
      } else {
        // is_free() counts from the slot last reserved.
        std::size_t const n     = ring_->num_slots();
        std::size_t const ahead = (oldest.slot + n - newest_reserved()) % n;
        if (!ring_->is_free(ahead)) { return false; }
      }
    } catch (...) {
      error = std::current_exception();
    }
    auto reads = std::move(oldest.reads);
    in_flight_.erase(in_flight_.begin());
    if (error) {
      finish();
    } else if (in_flight_.empty() && !open_.holds_reads()) {
      release_ring();  // nothing in flight: the buffer back to the pool
    }
    end_reads(reads, error);
    return true;
  }

  [[nodiscard]] std::size_t newest_reserved() const noexcept
  {
    return open_.reserved ? open_.slot : in_flight_.back().slot;
  }

  void release_ring() noexcept
  {
    open_ = OpenSlot{};
    ring_.reset();
  }

  std::optional<BounceBufferRing<>> ring_;
  StagingRingShape shape_{};
  CUcontext ctx_{};
  OpenSlot open_;
  std::vector<Batch> in_flight_;  // oldest first; at most one per slot (room reserved)
};

}  // namespace

void read_overlapped(ByteMover& mover,
                     LocalFile const& file,
                     void* dst,
                     std::size_t size,
                     std::size_t file_offset,
                     ObservedPromise done) noexcept
{
  KVIKIO_NVTX_FUNC_RANGE();
  try {
    auto* const reads =
      size > 0 && size <= overlapped_read_limit() ? OverlappedReads::for_this_worker() : nullptr;
    if (reads != nullptr) {
      reads->read(mover, file, convert_void2deviceptr(dst), size, file_offset, done);
      return;
    }
    ChunkCursor cursor{size};
    done.set_value(read_to_device(mover, file, dst, 0, file_offset, cursor));
  } catch (...) {
    done.set_exception(std::current_exception());
  }
}

}  // namespace kvikio::detail
