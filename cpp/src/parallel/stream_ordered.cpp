/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/stream_ordered.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/posix_io.hpp>
#include <kvikio/error.hpp>
#include <kvikio/event.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

using Word = std::atomic<std::uint32_t>;

struct Flag {
  Word* host;
  CUdeviceptr device;
};

/**
 * Pinned, device-mapped 32-bit flags, and the retirement of what an operation's stream still
 * uses after its tasks ended: its flags (set early by a next user, a flag would release that
 * stream too soon) and its staging buffers (the stream's last copies read or write them). Both
 * are released once an event recorded after the operation's last wait has completed: checked
 * when flags are taken and by reclaim().
 */
class FlagPool {
 public:
  static FlagPool& instance()
  {
    static auto* const pool = new FlagPool();  // never destroyed: streams may still read flags
    return *pool;
  }

  /// `n` flags set to 0. The caller has pushed a context.
  std::vector<Flag> get(std::size_t n)
  {
    std::lock_guard const lock{mutex_};
    reclaim_locked();
    while (free_.size() < n) {
      grow();
    }
    std::vector<Flag> out(free_.end() - static_cast<std::ptrdiff_t>(n), free_.end());
    free_.resize(free_.size() - n);
    for (auto const& f : out) {
      f.host->store(0, std::memory_order_relaxed);
    }
    return out;
  }

  /// `flags` and `buffers` are released once `passed` has completed.
  void retire(std::vector<Flag> flags,
              std::vector<BounceBufferPool<>::Buffer> buffers,
              Event passed)
  {
    std::lock_guard const lock{mutex_};
    retired_.push_back(Retired{std::move(flags), std::move(buffers), std::move(passed)});
  }

  void reclaim()
  {
    std::lock_guard const lock{mutex_};
    reclaim_locked();
  }

 private:
  struct Retired {
    std::vector<Flag> flags;
    std::vector<BounceBufferPool<>::Buffer> buffers;
    Event passed;
  };
  void reclaim_locked()
  {
    for (auto it = retired_.begin(); it != retired_.end();) {
      if (it->passed.is_done()) {
        free_.insert(free_.end(), it->flags.begin(), it->flags.end());
        it = retired_.erase(it);  // the buffers go back to their pool
      } else {
        ++it;
      }
    }
  }

  void grow()
  {
    constexpr std::size_t page = 4096;
    void* mem                  = nullptr;
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemHostAlloc(
      &mem, page, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr dev{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemHostGetDevicePointer(&dev, mem, 0));
    auto* words = static_cast<Word*>(mem);
    for (std::size_t i = 0; i < page / sizeof(Word); ++i) {
      new (words + i) Word{0};
      free_.push_back(Flag{words + i, dev + i * sizeof(Word)});
    }
  }
  std::mutex mutex_;
  std::vector<Flag> free_;
  std::vector<Retired> retired_;
};

std::mutex kind_mutex;
std::optional<StreamWaitKind> forced_kind;
std::optional<StreamWaitKind> last_kind;
bool memops_refused = false;  // the driver said CUDA_ERROR_NOT_SUPPORTED once: stop asking

/// Waits on the host until the stream (or a task) has set `word`: spins briefly, then sleeps.
void wait_host(Word const* word) noexcept
{
  for (int i = 0; word->load(std::memory_order_acquire) == 0; ++i) {
    if (i < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

void set_host(Word* word) noexcept { word->store(1, std::memory_order_release); }

/// The stream's side of the flags: stream memory operations, or host functions.
class StreamSide {
 public:
  StreamSide(CUstream stream, StreamWaitKind kind) : stream_{stream}, kind_{kind} {}
  /// The stream goes on once `flag` is set.
  CUresult wait(Flag flag)
  {
    if (kind_ == StreamWaitKind::stream_memops) {
      return cudaAPI::instance().StreamWaitValue32(
        stream_, flag.device, 1, CU_STREAM_WAIT_VALUE_GEQ);
    }
    return cudaAPI::instance().LaunchHostFunc(
      stream_, [](void* w) { wait_host(static_cast<Word*>(w)); }, flag.host);
  }
  /// The stream sets `flag` when it gets there.
  CUresult signal(Flag flag)
  {
    if (kind_ == StreamWaitKind::stream_memops) {
      return cudaAPI::instance().StreamWriteValue32(stream_, flag.device, 1, 0);
    }
    return cudaAPI::instance().LaunchHostFunc(
      stream_, [](void* w) { set_host(static_cast<Word*>(w)); }, flag.host);
  }

 private:
  CUstream stream_;
  StreamWaitKind kind_;
};

/// What the tasks of one operation share.
struct Operation {
  std::mutex mutex;
  std::size_t remaining{0};
  std::size_t bytes{0};
  std::exception_ptr error;
  std::function<void(ssize_t, std::exception_ptr)> on_done;
  Flag done_flag{};
  std::atomic<bool> aborted{false};  // enqueuing failed: tasks only release their waits
  Word ended{0};                     // set once the last task has reported

  void task_ended(std::size_t moved, std::exception_ptr task_error) noexcept
  {
    std::unique_lock lock{mutex};
    bytes += moved;
    if (task_error && !error) { error = std::move(task_error); }
    if (--remaining > 0) { return; }
    try {
      on_done(error ? -1 : static_cast<ssize_t>(bytes), error);
    } catch (std::exception const& e) {
      KVIKIO_LOG_ERROR("stream-ordered I/O: reporting the result failed: ", e.what());
    }
    set_host(done_flag.host);  // the stream's last wait
    set_host(&ended);
  }
};

/// One chunk: its device memory, size, file offset, staging slot and flags.
struct Chunk {
  CUdeviceptr device;
  std::size_t size;
  std::size_t file_offset;
  void* slot;
  Flag host_side;         // reads: the slot is filled; writes: the slot is written to the file
  Flag stream_side;       // the stream's copy of the chunk is done
  std::size_t reuses{0};  // 1 + index of the chunk that used the slot before, 0 if none
};

}  // namespace

void reclaim_stream_ordered() { FlagPool::instance().reclaim(); }

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

void run_stream_ordered(CUstream stream,
                        bool to_device,
                        std::vector<StreamOrderedRange> const& ranges,
                        StreamOrderedHostIo host_io,
                        ThreadPool& pool,
                        std::function<void(ssize_t bytes, std::exception_ptr error)> on_done)
{
  auto op     = std::make_shared<Operation>();
  op->on_done = std::move(on_done);
  // Chunks of a slot each, in order, chunk i in slot i mod M. M: k slots per range (one pool
  // buffer each), but no more slots than chunks, so a small call pins little. A chunk reusing a
  // slot waits for the chunk M before it.
  // Slots are whole pages, as the ring cuts them. Every chunk costs three driver operations on
  // the stream (which holds about 1000 pending: then enqueuing blocks), so slots are as large as
  // overlap allows: k per buffer for one range, fewer as ranges (and buffers) add slots of their
  // own, down to one per buffer from four ranges on.
  std::size_t const buffer_size = defaults::bounce_buffer_size();
  std::size_t const wanted_k    = std::max<std::size_t>(
    1,
    std::min(defaults::num_bounce_buffers(),
             (4 + ranges.size() - 1) / std::max<std::size_t>(ranges.size(), 1)));
  std::size_t const k = std::min(wanted_k, std::max<std::size_t>(buffer_size / page_size(), 1));
  std::size_t const slot_size =
    std::max(buffer_size / k / page_size() * page_size(), std::min(page_size(), buffer_size));
  std::size_t n_chunks = 0;
  for (auto const& range : ranges) {
    n_chunks += (range.size + slot_size - 1) / slot_size;
  }
  std::size_t const slots = std::min(ranges.size() * k, n_chunks);
  std::vector<BounceBufferPool<>::Buffer> buffers;
  for (std::size_t b = 0; b < (slots + k - 1) / k; ++b) {
    buffers.push_back(BounceBufferPool<>::instance().get());
    KVIKIO_EXPECT(buffers.back().size() >= k * slot_size,
                  "stream-ordered I/O: KVIKIO_BOUNCE_BUFFER_SIZE changed during the call");
  }
  std::vector<Chunk> chunks;
  for (auto const& range : ranges) {
    for (std::size_t done = 0; done < range.size; done += slot_size) {
      std::size_t const i = chunks.size();
      auto& buffer        = buffers[(i % slots) / k];
      chunks.push_back(Chunk{range.device + done,
                             std::min(slot_size, range.size - done),
                             range.file_offset + done,
                             static_cast<std::byte*>(buffer.get()) + (i % slots % k) * slot_size,
                             {},
                             {},
                             i >= slots ? i - slots + 1 : 0});
    }
  }
  if (chunks.empty()) {
    op->on_done(0, nullptr);
    return;
  }
  auto flags    = FlagPool::instance().get(2 * chunks.size() + 1);
  op->done_flag = flags.back();
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    chunks[i].host_side   = flags[2 * i];
    chunks[i].stream_side = flags[2 * i + 1];
  }

  // The host side, on the pool: tasks of k consecutive chunks, submitted in chunk order, so
  // that a task only ever waits for chunks of tasks submitted before it (no deadlock, whatever
  // the number of threads). A failing task still releases the stream's waits. They start before
  // the stream's side is enqueued: enqueuing blocks once the stream holds about 1000 pending
  // operations, until it has run some, which may need these tasks.
  auto shared_chunks        = std::make_shared<std::vector<Chunk>>(std::move(chunks));
  std::size_t const n_tasks = (shared_chunks->size() + k - 1) / k;
  op->remaining             = n_tasks;
  for (std::size_t t = 0; t < n_tasks; ++t) {
    auto task = [op, shared_chunks, host_io, to_device, first = t * k, k]() noexcept {
      auto& all              = *shared_chunks;
      std::size_t const last = std::min(first + k, all.size());
      std::size_t moved      = 0;
      std::exception_ptr error;
      for (std::size_t i = first; i < last; ++i) {
        auto const& c = all[i];
        if (to_device) {
          if (c.reuses > 0) { wait_host(all[c.reuses - 1].stream_side.host); }
        } else {
          wait_host(c.stream_side.host);
        }
        if (!error && !op->aborted.load(std::memory_order_acquire)) {
          try {
            std::size_t const n = host_io(c.slot, c.size, c.file_offset);
            if (n != c.size) {
              throw std::runtime_error("stream-ordered I/O: " + std::to_string(n) + " of " +
                                       std::to_string(c.size) + " bytes at offset " +
                                       std::to_string(c.file_offset));
            }
            moved += n;
          } catch (...) {
            error = std::current_exception();
          }
        }
        set_host(c.host_side.host);
      }
      op->task_ended(moved, std::move(error));
    };
    try {
      (void)pool.submit_task(std::move(task));
    } catch (...) {
      // Not even submitted: the operation fails; release this task's waits, stop the others'.
      op->aborted.store(true, std::memory_order_release);
      auto& all = *shared_chunks;
      for (std::size_t i = t * k; i < std::min(t * k + k, all.size()); ++i) {
        set_host(all[i].host_side.host);
      }
      op->task_ended(0, std::current_exception());
    }
  }

  StreamWaitKind kind{};
  {
    std::lock_guard const lock{kind_mutex};
    kind = forced_kind.value_or(memops_refused ? StreamWaitKind::host_function
                                               : StreamWaitKind::stream_memops);
  }
  // Enqueue the stream's side. Reads: wait until the chunk is in its slot, copy, say so (if a
  // later chunk needs the slot). Writes: wait until the slot's previous chunk is in the file,
  // copy into the slot, say so.
  auto& api    = cudaAPI::instance();
  auto enqueue = [&](StreamWaitKind with) -> CUresult {
    StreamSide side{stream, with};
    auto const& all = *shared_chunks;
    for (std::size_t i = 0; i < all.size(); ++i) {
      auto const& c = all[i];
      CUresult r    = CUDA_SUCCESS;
      if (to_device) {
        if ((r = side.wait(c.host_side)) != CUDA_SUCCESS) { return r; }
        KVIKIO_CUDA_DRIVER_TRY(api.MemcpyHtoDAsync(c.device, c.slot, c.size, stream));
      } else {
        if (c.reuses > 0 && (r = side.wait(all[c.reuses - 1].host_side)) != CUDA_SUCCESS) {
          return r;
        }
        KVIKIO_CUDA_DRIVER_TRY(api.MemcpyDtoHAsync(c.slot, c.device, c.size, stream));
      }
      // A read's copy is awaited only by the chunk that reuses its slot; a write's, always.
      bool const awaited = !to_device || i + slots < all.size();
      if (awaited && (r = side.signal(c.stream_side)) != CUDA_SUCCESS) { return r; }
    }
    return side.wait(op->done_flag);
  };
  try {
    CUresult r = enqueue(kind);
    if (r == CUDA_ERROR_NOT_SUPPORTED && kind == StreamWaitKind::stream_memops && !forced_kind) {
      // Refused: no stream memory operations on this driver. What was enqueued before the
      // refusal (a write's first copy) is harmless: the same copy follows.
      KVIKIO_LOG_INFO("stream-ordered I/O: no stream memory operations, using host functions");
      {
        std::lock_guard const lock{kind_mutex};
        memops_refused = true;
      }
      kind = StreamWaitKind::host_function;
      r    = enqueue(kind);
    }
    KVIKIO_CUDA_DRIVER_TRY(r);
  } catch (...) {
    // Part of the stream's side may be enqueued: stop the tasks' I/O, release every wait, let
    // the stream get past it, then report (the tasks end on their own).
    op->aborted.store(true, std::memory_order_release);
    for (auto const& f : flags) {
      set_host(f.host);
    }
    wait_host(&op->ended);  // the tasks report through the caller's pointers: let them finish
    (void)api.StreamSynchronize(stream);
    try {
      FlagPool::instance().retire(
        std::move(flags), std::move(buffers), EventPool::instance().get());  // never recorded
    } catch (...) {  // the flags are lost; the buffers, the stream being past them, go back
    }
    throw;
  }
  Event passed = EventPool::instance().get();
  passed.record(stream);
  FlagPool::instance().retire(std::move(flags), std::move(buffers), std::move(passed));
  {
    std::lock_guard const lock{kind_mutex};
    last_kind = kind;
  }
}

}  // namespace kvikio::detail
