/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "parallel/stream_ordered.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "parallel/stream_side.hpp"
#include "parallel/stream_staging.hpp"
#include "parallel/stream_workers.hpp"

namespace kvikio::detail {
namespace {

// The least slot of a stream's ring where the bounce buffers allow it: each slot a call fills
// costs about three driver operations, and a stream holds about 1000 before enqueuing blocks
// (a pool of one thread and 4 MiB tasks would otherwise fill a 64 MiB call's slots 1 MiB at a
// time, as would 64 KiB tasks with any pool).
constexpr std::size_t least_slot = std::size_t{4} << 20;

std::mutex kind_mutex;
std::optional<StreamWaitKind> forced_kind;
std::optional<StreamWaitKind> last_kind;
bool memops_refused = false;  // the driver said CUDA_ERROR_NOT_SUPPORTED once: stop asking

/// One use of a slot: the bytes it stages and the generation of the use.
struct Group {
  CUdeviceptr device;
  std::size_t size;
  std::size_t file_offset;
  StagingSlot* slot;
  std::uint32_t generation;
  bool previous_use_was_write;
  std::atomic<std::size_t> pieces_left;
};

/// One operation's host part, run by the stream-ordered workers piece by piece.
struct Operation final : ReadyPieces {
  std::shared_ptr<StagingRing> ring;
  bool to_device{};
  StreamOrderedHostIo host_io;
  std::function<void(ssize_t, std::exception_ptr)> on_done;
  std::uint32_t number{};
  std::unique_ptr<Group[]> groups;
  std::size_t num_groups{};
  std::size_t piece_size{};
  std::size_t pieces_per_group{};
  std::size_t num_pieces{};
  std::atomic<std::size_t> next_piece{0};
  std::atomic<std::size_t> pieces_left{0};
  std::atomic<bool> failed{false};  // a piece failed or enqueuing did: the rest skip their I/O

  std::mutex mutex;
  std::size_t bytes{0};
  std::exception_ptr error;

  /// Whether the GPU has done what piece `p` needs: a read's slot is free (its previous use is
  /// complete), a write's bytes are in the slot. A failed operation waits too: counters only
  /// grow, so a slot's use is never counted done before the one before it.
  [[nodiscard]] bool ready(std::size_t p) const noexcept
  {
    auto const& group = groups[p / pieces_per_group];
    auto const& slot  = *group.slot;
    if (to_device) {
      return reached(slot.stream_done.load(), group.generation - 1) &&
             reached(slot.host_done.load(), group.generation - 1);
    }
    return reached(slot.stream_done.load(), group.generation);
  }

  std::optional<std::size_t> claim_ready() noexcept override
  {
    std::size_t p = next_piece.load(std::memory_order_relaxed);
    while (p < num_pieces && ready(p)) {
      if (next_piece.compare_exchange_weak(p, p + 1, std::memory_order_relaxed)) { return p; }
    }
    return std::nullopt;
  }

  [[nodiscard]] bool all_claimed() const noexcept override
  {
    return next_piece.load(std::memory_order_relaxed) >= num_pieces;
  }

  /// One piece: move the bytes, count the slot's host part done; the last piece reports.
  void run(std::size_t p) noexcept override
  {
    auto& group            = groups[p / pieces_per_group];
    std::size_t const skip = (p % pieces_per_group) * piece_size;
    std::size_t const n    = std::min(piece_size, group.size - skip);
    auto& slot             = *group.slot;
    if (!failed.load(std::memory_order_acquire)) {
      try {
        std::size_t const moved =
          host_io(static_cast<std::byte*>(slot.memory) + skip, n, group.file_offset + skip);
        if (moved != n) {
          throw std::runtime_error("stream-ordered I/O: " + std::to_string(moved) + " of " +
                                   std::to_string(n) + " bytes at offset " +
                                   std::to_string(group.file_offset + skip));
        }
        std::lock_guard const lock{mutex};
        bytes += n;
      } catch (...) {
        std::lock_guard const lock{mutex};
        if (!error) { error = std::current_exception(); }
        failed.store(true, std::memory_order_release);
      }
    }
    if (group.pieces_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      slot.host_done.store(group.generation);
    }
    if (pieces_left.fetch_sub(1, std::memory_order_acq_rel) == 1) { report(); }
  }

  /// After the last piece: the result to the caller, then the stream's last wait released.
  void report() noexcept
  {
    try {
      on_done(error ? -1 : static_cast<ssize_t>(bytes), error);
    } catch (std::exception const& e) {
      KVIKIO_LOG_ERROR("stream-ordered I/O: reporting the result failed: ", e.what());
    }
    ring->end_operation(number, num_groups);
  }

  /// The stream's part: reads wait for a slot's bytes, copy, count the copy done; writes wait
  /// for the slot to be free (if a write used it last), copy in, count the copy done.
  CUresult enqueue(CUstream stream, StreamWaitKind kind) const
  {
    StreamSide side{stream, kind};
    auto& api  = cudaAPI::instance();
    CUresult r = CUDA_SUCCESS;
    for (std::size_t i = 0; i < num_groups; ++i) {
      auto const& g = groups[i];
      auto& slot    = *g.slot;
      if (to_device) {
        if ((r = side.wait(slot.host_done, g.generation)) != CUDA_SUCCESS) { return r; }
      } else {
        // The slot's previous use is complete: a write's file write, or a read's copy out (on
        // this stream, unless a destroyed stream's handle was reused for this one).
        Counter const& previous = g.previous_use_was_write ? slot.host_done : slot.stream_done;
        if ((r = side.wait(previous, g.generation - 1)) != CUDA_SUCCESS) { return r; }
      }
      if ((r = side.flush()) != CUDA_SUCCESS) { return r; }
      r = to_device ? api.MemcpyHtoDAsync(g.device, slot.memory, g.size, stream)
                    : api.MemcpyDtoHAsync(slot.memory, g.device, g.size, stream);
      if (r != CUDA_SUCCESS) { return r; }
      if ((r = side.signal(slot.stream_done, g.generation)) != CUDA_SUCCESS) { return r; }
    }
    if ((r = side.wait(ring->operations_ended(), number)) != CUDA_SUCCESS) { return r; }
    return side.flush();
  }
};

StreamWaitKind chosen_kind()
{
  std::lock_guard const lock{kind_mutex};
  return forced_kind.value_or(memops_refused ? StreamWaitKind::host_function
                                             : StreamWaitKind::stream_memops);
}

}  // namespace

void force_stream_wait_kind(std::optional<StreamWaitKind> kind) noexcept
{
  std::lock_guard const lock{kind_mutex};
  forced_kind = kind;
}

std::optional<StreamWaitKind> last_stream_wait_kind() noexcept
{
  std::lock_guard const lock{kind_mutex};
  return last_kind;
}

std::function<void(ssize_t, std::exception_ptr)> report_stream_ordered(
  ssize_t* bytes_p, std::shared_ptr<std::exception_ptr> error, char const* what)
{
  return [bytes_p, error = std::move(error), what](ssize_t bytes, std::exception_ptr e) {
    *bytes_p = bytes;
    if (!e) { return; }
    if (error) {
      *error = e;
      return;
    }
    try {
      std::rethrow_exception(e);
    } catch (std::exception const& ex) {
      KVIKIO_LOG_ERROR(what, " failed: ", ex.what());
    }
  };
}

void run_stream_ordered(StreamOrderedRange const& range,
                        StreamOrderedHostIo host_io,
                        std::function<void(ssize_t bytes, std::exception_ptr error)> on_done)
{
  KVIKIO_NVTX_FUNC_RANGE();  // the caller's share of the call: planning and enqueuing
  CUstream const stream  = range.stream;
  std::size_t const size = range.size;
  KVIKIO_EXPECT(range.piece_size > 0,
                "stream-ordered I/O: the task size must be positive",
                std::invalid_argument);
  if (size == 0) {
    on_done(0, nullptr);
    return;
  }
  // The stream's ring: two slots per worker (at least KVIKIO_NUM_BOUNCE_BUFFERS), each of at
  // least a piece and least_slot, within every worker's bounce buffer (threads x bounce
  // buffer size, the pinned memory the settings allow a pool; smaller slots, and fewer of a
  // page each, where that is less). The stream copies the slots out in order: with one slot per
  // worker, a worker whose slot waits for its copy has nothing to fill; with two it fills the other
  // meanwhile. Big slots mean few driver operations per call.
  std::size_t const page = get_page_size();
  std::size_t const k    = defaults::num_bounce_buffers();
  std::size_t const most = range.threads * detail::staging_buffer_size();
  std::size_t const num_slots =
    std::max<std::size_t>(1, std::min(std::max(k, 2 * range.threads), most / page));
  std::size_t const whole     = std::max(least_slot, range.piece_size);
  std::size_t const slot_size = std::max(page, std::min(whole, most / num_slots) / page * page);
  auto op                     = std::make_shared<Operation>();
  // A slot's use costs the stream about three operations (a wait, a copy, a signal): a starter
  // ring's uses in flight stay under about 800 of them. Where the stream waits through
  // host functions, no starter: its small slots would double the host functions waiting on the
  // stream, and on the H100 (driver 580) a stream with a few hundred of them pending behind a
  // held host function blocked the caller.
  StreamWaitKind kind                 = chosen_kind();
  std::size_t const most_starter_uses = kind == StreamWaitKind::stream_memops ? 256 : 0;
  // The stream's ring, locked for planning; one the registry dropped meanwhile (it was idle)
  // must not be used (nothing would keep its memory once the operation ends): ask again.
  std::unique_lock<std::mutex> planning;
  while (true) {
    op->ring =
      staging_ring_for(stream,
                       {.num_slots = num_slots, .slot_size = slot_size, .starter_slots = k},
                       size,
                       most_starter_uses);
    planning = std::unique_lock{op->ring->mutex()};
    if (!op->ring->retired()) { break; }
    planning.unlock();
  }
  op->to_device               = range.to_device;
  op->host_io                 = std::move(host_io);
  op->on_done                 = std::move(on_done);
  auto& ring                  = *op->ring;
  std::size_t const staged    = ring.slot_size();  // the ring may keep an earlier shape a while
  op->piece_size              = std::min(range.piece_size, staged);
  op->pieces_per_group        = (staged + op->piece_size - 1) / op->piece_size;
  op->num_groups              = (size + staged - 1) / staged;
  op->groups                  = std::make_unique<Group[]>(op->num_groups);
  std::size_t const last_size = size - (op->num_groups - 1) * staged;
  op->num_pieces =
    (op->num_groups - 1) * op->pieces_per_group + (last_size + op->piece_size - 1) / op->piece_size;
  op->pieces_left.store(op->num_pieces, std::memory_order_relaxed);

  op->number = ring.begin_operation(op->num_groups);
  for (std::size_t i = 0; i < op->num_groups; ++i) {
    auto& g                  = op->groups[i];
    auto& slot               = ring.next_slot();
    g.device                 = range.device + i * staged;
    g.size                   = std::min(staged, size - i * staged);
    g.file_offset            = range.file_offset + i * staged;
    g.slot                   = &slot;
    g.generation             = ++slot.generation;
    g.previous_use_was_write = slot.last_use_was_write;
    g.pieces_left.store((g.size + op->piece_size - 1) / op->piece_size, std::memory_order_relaxed);
    slot.last_use_was_write = !range.to_device;
  }

  // The workers get the pieces before the stream's side is enqueued: enqueuing blocks once the
  // stream holds about 1000 pending operations, until it has run some, which may need them.
  try {
    run_when_ready(op, range.threads);
  } catch (...) {  // the operation never began: its uses count as done
    for (std::size_t i = 0; i < op->num_groups; ++i) {
      auto& slot = *op->groups[i].slot;
      slot.host_done.store(slot.generation);
      slot.stream_done.store(slot.generation);
    }
    ring.end_operation(op->number, op->num_groups);
    throw;
  }

  CUresult r = op->enqueue(stream, kind);
  if (r == CUDA_ERROR_NOT_SUPPORTED && kind == StreamWaitKind::stream_memops) {
    // No stream memory operations on this driver. What was enqueued before the refusal (a
    // write's first copy) is harmless: the same copy follows.
    KVIKIO_LOG_INFO("stream-ordered I/O: no stream memory operations, using host functions");
    {
      std::lock_guard const lock{kind_mutex};
      if (!forced_kind) { memops_refused = true; }
    }
    kind = StreamWaitKind::host_function;
    r    = op->enqueue(stream, kind);
  }
  if (r != CUDA_SUCCESS) {
    // Part of the stream's side may be enqueued: stop the tasks' I/O, let the stream run what
    // it has (the tasks release its waits), take its part of every use as done so that no task
    // waits for a copy that was never enqueued, let the tasks end (they report through the
    // caller's pointers), then throw.
    op->failed.store(true, std::memory_order_release);
    (void)cudaAPI::instance().StreamSynchronize(stream);
    ring.stream_caught_up();
    op->ring->operations_ended().wait_for(op->number);
    KVIKIO_CUDA_DRIVER_TRY(r);
  }
  std::lock_guard const lock{kind_mutex};
  last_kind = kind;
}

}  // namespace kvikio::detail
