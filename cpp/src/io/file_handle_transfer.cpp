/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_handle.hpp>

#include <algorithm>
#include <cstddef>
#include <future>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/parallel_operation.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "core/observed_promise.hpp"
#include "core/waiting_callers.hpp"
#include "core/worker_leftovers.hpp"
#include "io/cufile/cufile_io.hpp"
#include "io/file_state.hpp"
#include "io/local_plan.hpp"
#include "io/staging/device_staging.hpp"
#include "io/staging/host_split.hpp"

namespace kvikio {
namespace detail {

std::size_t host_transfer(
  ByteMover& mover, bool reading, FileState& state, LocalFile const& file, HostPiece piece)
{
  KVIKIO_NVTX_FUNC_RANGE();
  if (reading) { return host_io(mover, true, file, piece); }
  return state.counted_write(
    file.fd, piece.offset, [&] { return host_io(mover, false, file, piece); });
}

}  // namespace detail

namespace {

// Device memory in context `ctx` on the calling thread, through `mover` (nullptr: cuFile).
std::size_t device_transfer(detail::ByteMover* mover,
                            bool reading,
                            detail::FileState& state,
                            detail::LocalFile const& file,
                            CUcontext ctx,
                            void* devPtr_base,
                            std::size_t size,
                            std::size_t file_offset,
                            std::size_t devPtr_offset,
                            bool sync_default_stream)
{
  PushAndPopContext const context{ctx};
  if (mover == nullptr) {
    // cuFile is not ordered with the legacy default stream: its work lands first. (Staged
    // copies are, on blocking streams: detail::stream_for_this_thread.)
    if (sync_default_stream) {
      KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamSynchronize(nullptr));
    }
    if (reading) {
      return detail::cufile_transfer(true, file, devPtr_base, devPtr_offset, size, file_offset);
    }
    return state.counted_write(file.fd, file_offset, [&] {
      return detail::cufile_transfer(false, file, devPtr_base, devPtr_offset, size, file_offset);
    });
  }
  if (reading) {
    detail::ChunkCursor cursor{size};
    return detail::read_to_device(*mover, file, devPtr_base, devPtr_offset, file_offset, cursor);
  }
  return state.counted_write(file.fd, file_offset, [&] {
    return detail::write_from_device(*mover, file, devPtr_base, devPtr_offset, size, file_offset);
  });
}

// One call's observation: POSIX for host memory whatever moves it, GDS where cuFile moves
// device memory.
std::shared_ptr<detail::LogicalObservationRecorder> observe(bool reading,
                                                            bool host_memory,
                                                            bool cufile,
                                                            std::size_t offset,
                                                            std::size_t size,
                                                            std::shared_ptr<std::string const> path)
{
  return detail::observe_call(cufile && !host_memory ? IoBackend::GDS : IoBackend::POSIX,
                              reading ? TransferDirection::READ : TransferDirection::WRITE,
                              host_memory ? MemoryKind::HOST : MemoryKind::DEVICE,
                              offset,
                              size,
                              std::move(path));
}

}  // namespace

void FileHandle::check_allowed_observed(
  Direction dir, void const* buf, std::size_t offset, std::size_t size, bool observed) const
{
  try {
    check_allowed(dir);
  } catch (...) {
    // The arguments were fine: the I/O itself is refused, an operation that failed. Where the
    // buffer is is asked only then, and only if someone watches.
    if (observed && size > 0 && detail::monitoring_enabled()) {
      if (auto recorder =
            observe(dir == Direction::read, is_host_memory(buf), false, offset, size, source_)) {
        recorder->finish_with_failure();
      }
    }
    throw;
  }
}

std::future<std::size_t> FileHandle::parallel_transfer(Direction dir,
                                                       void* buf,
                                                       std::size_t size,
                                                       std::size_t file_offset,
                                                       std::size_t task_size,
                                                       std::size_t gds_threshold,
                                                       bool sync_default_stream,
                                                       ThreadPool* thread_pool,
                                                       bool observed)
{
  bool const reading     = dir == Direction::read;
  char const* const what = reading ? "FileHandle::pread" : "FileHandle::pwrite";
  // Held by every task (each copy of the operations below) until the last one is done.
  Lease lease = enter(what);
  check_range(buf, size, file_offset, what);
  KVIKIO_EXPECT(
    task_size > 0, "`task_size` must be positive (FileHandle got 0)", std::invalid_argument);
  check_allowed_observed(dir, buf, file_offset, size, observed);
  ThreadPool* const pool = pool_for(thread_pool);
  if (size == 0) { return make_ready_future<std::size_t>(0); }
  auto* const state      = state_.get();
  auto const file        = local_file(dir, pool->get_thread_count());
  bool const host_memory = is_host_memory(buf);
  if (!host_memory && reading && file_offset + size > state->nbytes.load()) {
    // Past the size the handle knows: a device read that reaches the end of the file reads the
    // bytes that exist first, so that the destination holds them as a host read leaves them
    // (staging fails a chunk that reaches the end as a whole), then fails as a read that reached
    // the end. The caller waits for those bytes here, as for any failed read.
    std::size_t const now = get_file_size(file.fd);
    if (file_offset + size > now) {
      std::size_t const exist = now > file_offset ? now - file_offset : 0;
      auto recorder =
        observed ? observe(reading, false, file.cufile != nullptr, file_offset, size, source_)
                 : nullptr;
      return detail::done_here(
        [&]() -> std::size_t {
          if (exist > 0) {
            (void)parallel_transfer(dir,
                                    buf,
                                    exist,
                                    file_offset,
                                    task_size,
                                    gds_threshold,
                                    sync_default_stream,
                                    thread_pool,
                                    false)
              .get();
          }
          detail::throw_read_past_end(file.fd, size, file_offset);
        },
        std::move(recorder));
    }
  }
  auto const plan =
    detail::plan_local_transfer(reading, host_memory, size, task_size, gds_threshold, *pool, file);
  detail::ByteMover* const mover = plan.mover;
  auto recorder                  = observed
                                     ? observe(reading, host_memory, mover == nullptr, file_offset, size, source_)
                                     : nullptr;
  if (host_memory) {
    auto* const bytes = static_cast<std::byte*>(buf);
    if (plan.strategy == detail::LocalStrategy::on_caller) {
      return detail::done_here(
        [&] {
          return detail::host_transfer(*mover, reading, *state, file, {bytes, size, file_offset});
        },
        std::move(recorder));
    }
    return parallel_io(
      [lease,
       mover,
       reading,
       state,
       file,
       bytes,
       mark = plan.marks_hand_off ? detail::handing_off() : detail::HandOffMark{}](
        std::size_t buf_offset, std::size_t n, std::size_t offset) mutable {
        detail::EndOfHandOff const end{mark};
        return detail::host_transfer(
          *mover, reading, *state, file, {bytes + buf_offset, n, offset});
      },
      size,
      file_offset,
      plan.task_size,
      pool,
      plan.alignment,
      std::move(recorder));
  }
  CUcontext ctx = get_context_from_pointer(buf);
  if (plan.strategy == detail::LocalStrategy::on_caller) {
    return detail::done_here(
      [&] {
        return device_transfer(
          mover, reading, *state, file, ctx, buf, size, file_offset, 0, sync_default_stream);
      },
      std::move(recorder));
  }
  if (plan.strategy == detail::LocalStrategy::overlapped) {
    auto done   = std::make_shared<detail::ObservedPromise>(std::move(recorder));
    auto future = done->get_future();
    detail::detach_overlapping_job(
      *pool, [lease, mover, file, ctx, buf, size, file_offset, done]() noexcept {
        try {
          PushAndPopContext const context{ctx};
          detail::read_overlapped(*mover, file, buf, size, file_offset, std::move(*done));
        } catch (...) {  // the context could not be made current: nothing was moved yet
          done->set_exception(std::current_exception());
        }
      });
    return future;
  }
  if (plan.strategy == detail::LocalStrategy::shared_chunks) {
    auto cursor = std::make_shared<detail::ChunkCursor>(size);
    return detail::parallel_workers(
      [lease, mover, file, ctx, buf, file_offset, cursor, chunks = plan.chunks] {
        PushAndPopContext const context{ctx};
        return detail::read_to_device(*mover, file, buf, 0, file_offset, *cursor, chunks);
      },
      plan.workers,
      pool,
      std::move(recorder));
  }
  if (sync_default_stream && mover == nullptr) {  // once per call, not per task
    PushAndPopContext const context{ctx};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamSynchronize(nullptr));
  }
  // cuFile reads and writes the allocation it registered, at an offset into it; staging needs
  // only the pointer (asking the driver for the allocation costs three calls).
  auto [base, base_size, base_offset] =
    mover == nullptr ? get_alloc_info(buf, &ctx)
                     : std::tuple<void*, std::size_t, std::size_t>{buf, size, 0};
  (void)base_size;
  return parallel_io(
    [lease, mover, reading, state, file, ctx, base = base, base_offset = base_offset](
      std::size_t buf_offset, std::size_t n, std::size_t offset) {
      return device_transfer(
        mover, reading, *state, file, ctx, base, n, offset, base_offset + buf_offset, false);
    },
    size,
    file_offset,
    plan.task_size,
    pool,
    plan.alignment,
    std::move(recorder));
}

std::size_t FileHandle::sync_transfer(Direction dir,
                                      void* devPtr_base,
                                      std::size_t size,
                                      std::size_t file_offset,
                                      std::size_t devPtr_offset,
                                      bool sync_default_stream)
{
  bool const reading     = dir == Direction::read;
  char const* const what = reading ? "FileHandle::read" : "FileHandle::write";
  Lease const lease      = enter(what);
  check_range(devPtr_base, size, file_offset, what);
  check_allowed_observed(dir, devPtr_base, file_offset, size, true);
  if (size == 0) { return 0; }
  auto const file = local_file(dir, defaults::thread_pool_nthreads());
  // This is the device API: reported as device memory whatever the pointer.
  detail::LogicalObservationRecorder recorder{
    file.cufile != nullptr ? IoBackend::GDS : IoBackend::POSIX,
    reading ? TransferDirection::READ : TransferDirection::WRITE,
    MemoryKind::DEVICE,
    file_offset,
    size,
    source_};
  std::size_t const moved = device_transfer(
    file.cufile != nullptr ? nullptr : &detail::host_mover(reading, size, file.pool_threads),
    reading,
    *state_,
    file,
    get_context_from_pointer(devPtr_base),
    devPtr_base,
    size,
    file_offset,
    devPtr_offset,
    sync_default_stream);
  recorder.finish(moved);
  return moved;
}

std::size_t FileHandle::read(void* devPtr_base,
                             std::size_t size,
                             std::size_t file_offset,
                             std::size_t devPtr_offset,
                             bool sync_default_stream)
{
  KVIKIO_NVTX_FUNC_RANGE();
  return sync_transfer(
    Direction::read, devPtr_base, size, file_offset, devPtr_offset, sync_default_stream);
}

std::size_t FileHandle::write(void const* devPtr_base,
                              std::size_t size,
                              std::size_t file_offset,
                              std::size_t devPtr_offset,
                              bool sync_default_stream)
{
  KVIKIO_NVTX_FUNC_RANGE();
  // The bytes are only read; one pointer type serves both directions.
  return sync_transfer(Direction::write,
                       const_cast<void*>(devPtr_base),
                       size,
                       file_offset,
                       devPtr_offset,
                       sync_default_stream);
}

std::future<std::size_t> FileHandle::pread(void* buf,
                                           std::size_t size,
                                           std::size_t file_offset,
                                           std::size_t task_size,
                                           std::size_t gds_threshold,
                                           bool sync_default_stream,
                                           ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE();
  return parallel_transfer(Direction::read,
                           buf,
                           size,
                           file_offset,
                           task_size,
                           gds_threshold,
                           sync_default_stream,
                           thread_pool);
}

std::future<std::size_t> FileHandle::pwrite(void const* buf,
                                            std::size_t size,
                                            std::size_t file_offset,
                                            std::size_t task_size,
                                            std::size_t gds_threshold,
                                            bool sync_default_stream,
                                            ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE();
  return parallel_transfer(Direction::write,
                           const_cast<void*>(buf),  // only read: see write()
                           size,
                           file_offset,
                           task_size,
                           gds_threshold,
                           sync_default_stream,
                           thread_pool);
}

}  // namespace kvikio
