/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/stream_ordered.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/event.hpp>
#include <kvikio/shim/cuda.hpp>

namespace kvikio::detail {
namespace {

/**
 * Pinned, device-mapped 32-bit flags for cuStreamWaitValue32. A flag is reused only once the
 * stream that waited on it has gone past the wait (an event recorded after the wait says so),
 * since another operation setting it early would release that stream too soon.
 */
class FlagPool {
 public:
  struct Flag {
    std::atomic<std::uint32_t>* host;
    CUdeviceptr device;
  };

  static FlagPool& instance()
  {
    static auto* const pool = new FlagPool();  // never destroyed: streams may still read flags
    return *pool;
  }

  /// A flag set to 0. The caller has pushed a context.
  Flag get()
  {
    std::lock_guard const lock{mutex_};
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second.is_done()) {
        free_.push_back(it->first);
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    if (free_.empty()) { grow(); }
    Flag const flag = free_.back();
    free_.pop_back();
    flag.host->store(0, std::memory_order_relaxed);
    return flag;
  }

  /// `flag` can be reused once `passed` (recorded after the wait) has completed.
  void put(Flag flag, Event passed)
  {
    std::lock_guard const lock{mutex_};
    waiting_.emplace_back(flag, std::move(passed));
  }

 private:
  void grow()
  {
    constexpr std::size_t page = 4096;
    void* mem                  = nullptr;
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemHostAlloc(
      &mem, page, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr dev{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemHostGetDevicePointer(&dev, mem, 0));
    auto* words = static_cast<std::atomic<std::uint32_t>*>(mem);
    for (std::size_t i = 0; i < page / sizeof(std::uint32_t); ++i) {
      new (words + i) std::atomic<std::uint32_t>{0};
      free_.push_back(Flag{words + i, dev + i * sizeof(std::uint32_t)});
    }
  }
  std::mutex mutex_;
  std::vector<Flag> free_;
  std::vector<std::pair<Flag, Event>> waiting_;
};

std::mutex kind_mutex;
std::optional<StreamWaitKind> forced_kind;
std::optional<StreamWaitKind> last_kind;
bool memops_refused = false;  // the driver said CUDA_ERROR_NOT_SUPPORTED once: stop asking

/// What the tasks of one operation share.
struct Operation {
  std::mutex mutex;
  std::condition_variable ended_cv;
  std::size_t remaining;
  std::size_t bytes{0};
  std::exception_ptr error;
  bool ended{false};
  std::function<void(ssize_t, std::exception_ptr)> on_done;
  std::optional<FlagPool::Flag> flag;  // stream_memops
  std::optional<Event> start;          // recorded on the caller's stream

  /// Called by each task as it ends; the last one reports and releases the stream.
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
    ended = true;
    if (flag) { flag->host->store(1, std::memory_order_release); }
    lock.unlock();
    ended_cv.notify_all();
  }
};

void host_function_waits(void* user)
{
  auto* op = static_cast<std::shared_ptr<Operation>*>(user);
  {
    std::unique_lock lock{(*op)->mutex};
    (*op)->ended_cv.wait(lock, [&] { return (*op)->ended; });
  }
  delete op;
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

void run_stream_ordered(CUstream stream,
                        std::vector<StreamOrderedTask> tasks,
                        ThreadPool& pool,
                        std::function<void(ssize_t bytes, std::exception_ptr error)> on_done)
{
  auto& api     = cudaAPI::instance();
  auto op       = std::make_shared<Operation>();
  op->remaining = tasks.size();
  op->on_done   = std::move(on_done);
  if (tasks.empty()) {
    op->on_done(0, nullptr);
    return;
  }
  op->start.emplace(EventPool::instance().get());
  op->start->record(stream);

  StreamWaitKind kind{};
  {
    std::lock_guard const lock{kind_mutex};
    kind = forced_kind.value_or(memops_refused ? StreamWaitKind::host_function
                                               : StreamWaitKind::stream_memops);
  }
  if (kind == StreamWaitKind::stream_memops) {
    op->flag         = FlagPool::instance().get();
    CUresult const r = api.StreamWaitValue32(stream, op->flag->device, 1, CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS) {
      Event passed = EventPool::instance().get();
      passed.record(stream);
      FlagPool::instance().put(*op->flag, std::move(passed));
    } else if (r == CUDA_ERROR_NOT_SUPPORTED && !forced_kind) {
      KVIKIO_LOG_INFO("stream-ordered I/O: no stream memory operations, using host functions");
      FlagPool::instance().put(*op->flag, EventPool::instance().get());  // never waited on
      op->flag.reset();
      std::lock_guard const lock{kind_mutex};
      memops_refused = true;
      kind           = StreamWaitKind::host_function;
    } else {
      KVIKIO_CUDA_DRIVER_TRY(r);
    }
  }
  if (kind == StreamWaitKind::host_function) {
    auto* held       = new std::shared_ptr<Operation>(op);
    CUresult const r = api.LaunchHostFunc(stream, &host_function_waits, held);
    if (r != CUDA_SUCCESS) {
      delete held;
      KVIKIO_CUDA_DRIVER_TRY(r);
    }
  }
  {
    std::lock_guard const lock{kind_mutex};
    last_kind = kind;
  }
  // From here on the stream waits for the tasks: each must report, whatever happens.
  CUevent const after = op->start->get();
  for (auto& task : tasks) {
    try {
      (void)pool.submit_task([op, after, task = std::move(task)]() noexcept {
        std::size_t moved = 0;
        std::exception_ptr error;
        try {
          moved = task(after);
        } catch (...) {
          error = std::current_exception();
        }
        op->task_ended(moved, std::move(error));
      });
    } catch (...) {
      op->task_ended(0, std::current_exception());  // could not even be submitted
    }
  }
}

}  // namespace kvikio::detail
