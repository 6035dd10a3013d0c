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
#include <kvikio/detail/local_backend.hpp>
#include <kvikio/detail/local_choice.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/worker_leftovers.hpp>
#include <kvikio/error.hpp>
#include <kvikio/parallel_operation.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "file_state.hpp"

namespace kvikio {
namespace detail {

// Host memory on the calling thread, through `backend`.
std::size_t host_transfer(HostBackend& backend,
                          bool reading,
                          FileState& state,
                          LocalFile const& file,
                          std::byte* buf,
                          std::size_t size,
                          std::size_t file_offset)
{
  if (reading) { return backend.read_host(file, buf, size, file_offset); }
  return state.counted_write(
    file.fd, file_offset, [&] { return backend.write_host(file, buf, size, file_offset); });
}

}  // namespace detail

namespace {

// Device memory in context `ctx` on the calling thread, through `backend`.
std::size_t device_transfer(detail::DeviceBackend& backend,
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
  // cuFile is not ordered with the legacy default stream: its work lands first. (The staged
  // backends' copies are, on blocking streams: detail::stream_for_this_thread.)
  if (sync_default_stream && file.cufile != nullptr) {
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamSynchronize(nullptr));
  }
  if (reading) {
    detail::ChunkCursor cursor{size};
    return backend.read_device(file, devPtr_base, devPtr_offset, file_offset, cursor);
  }
  return state.counted_write(file.fd, file_offset, [&] {
    return backend.write_device(file, devPtr_base, devPtr_offset, size, file_offset);
  });
}

// A transfer done on the calling thread: its result, or its error, in a ready future, as a pool
// task's would be (upstream defers its small transfers to the future's get()).
template <typename Transfer>
std::future<std::size_t> done_here(Transfer&& transfer)
{
  std::promise<std::size_t> done;
  try {
    done.set_value(transfer());
  } catch (...) {
    done.set_exception(std::current_exception());
  }
  return done.get_future();
}

// Device writes (and cuFile transfers) go in one contiguous range per pool thread (a multiple of
// task_size), so that each task's ring overlaps writing chunk i with copying chunk i+1 across
// the whole range; with one task per chunk every task would end waiting for its only copy.
// io_uring host transfers too: a range keeps many requests in flight.
std::size_t device_task_size(std::size_t size, std::size_t task_size, ThreadPool const& pool)
{
  std::size_t const threads    = std::max<std::size_t>(pool.get_thread_count(), 1);
  std::size_t const per_thread = (size + threads - 1) / threads;
  return std::max(task_size, (per_thread + task_size - 1) / task_size * task_size);
}

}  // namespace

std::future<std::size_t> FileHandle::parallel_transfer(Direction dir,
                                                       void* buf,
                                                       std::size_t size,
                                                       std::size_t file_offset,
                                                       std::size_t task_size,
                                                       std::size_t gds_threshold,
                                                       bool sync_default_stream,
                                                       ThreadPool* thread_pool)
{
  bool const reading     = dir == Direction::read;
  char const* const what = reading ? "FileHandle::pread" : "FileHandle::pwrite";
  // Held by every task (each copy of the operations below) until the last one is done.
  Lease lease = enter(what);
  check_range(buf, size, file_offset, what);
  check_allowed(dir);
  KVIKIO_EXPECT(
    task_size > 0, "`task_size` must be positive (FileHandle got 0)", std::invalid_argument);
  ThreadPool* const pool = pool_for(thread_pool);
  if (size == 0) { return make_ready_future<std::size_t>(0); }
  auto* const state           = state_.get();
  std::size_t const threads   = pool->get_thread_count();
  auto const file             = local_file(dir, threads);
  std::size_t const alignment = file.fd_direct >= 0 ? get_page_size() : 0;
  if (is_host_memory(buf)) {
    auto* const bytes   = static_cast<std::byte*>(buf);
    auto* const backend = &detail::host_backend(reading, size, threads);
    // Small: a task hand-off would cost more than the transfer. A read of up to one task by
    // system calls while the pool is backlogged: the task would wait behind a whole round of
    // others, and the calling thread adds a core's worth of copying (many callers each keeping
    // reads in flight, as a columnar reader's column chunks). Not through io_uring (its deep
    // queue stays on the pool's threads) nor O_DIRECT (whose unaligned pieces go through a
    // thread's scratch buffer, kept by the thread), and not writes (one pool thread keeps them
    // in the order they were submitted).
    if (size < gds_threshold || (reading && size <= task_size && !backend->deep_queue() &&
                                 alignment == 0 && pool->is_backlogged())) {
      return done_here([&] {
        return detail::host_transfer(*backend, reading, *state, file, bytes, size, file_offset);
      });
    }
    // A backend that keeps many requests in flight per thread (io_uring: kernel workers copy
    // them) gets one range per pool thread: fewer, longer tasks go as fast with fewer threads.
    return parallel_io(
      [lease, backend, reading, state, file, bytes](
        std::size_t buf_offset, std::size_t n, std::size_t offset) {
        return detail::host_transfer(
          *backend, reading, *state, file, bytes + buf_offset, n, offset);
      },
      size,
      file_offset,
      backend->deep_queue() ? device_task_size(size, task_size, *pool) : task_size,
      pool,
      alignment);
  }
  if (reading && file_offset + size > state->nbytes.load()) {
    // Past the size the handle knows: a device read that reaches the end of the file reads the
    // bytes that exist first, so that the destination holds them as a host read leaves them
    // (the staged backends fail a chunk that reaches the end as a whole), then fails as a read
    // that reached the end. The caller waits for those bytes here, as for any failed read.
    std::size_t const now = get_file_size(file.fd);
    if (file_offset + size > now) {
      std::size_t const exist = now > file_offset ? now - file_offset : 0;
      return done_here([&]() -> std::size_t {
        if (exist > 0) {
          (void)parallel_transfer(dir,
                                  buf,
                                  exist,
                                  file_offset,
                                  task_size,
                                  gds_threshold,
                                  sync_default_stream,
                                  thread_pool)
            .get();
        }
        detail::throw_read_past_end(file.fd, size, file_offset);
      });
    }
  }
  bool const cufile   = file.cufile != nullptr;
  auto* const backend = &detail::device_backend(reading, size, file);
  CUcontext ctx       = get_context_from_pointer(buf);
  // Unlike host reads, a device read is not moved onto the caller when the pool is backlogged:
  // its copy is ordered after the legacy default stream, and pread() would then wait for
  // whatever the GPU runs there.
  if (size < gds_threshold) {
    return done_here([&] {
      return device_transfer(
        *backend, reading, *state, file, ctx, buf, size, file_offset, 0, sync_default_stream);
    });
  }
  if (sync_default_stream && cufile) {  // once per call, not per task
    PushAndPopContext const context{ctx};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamSynchronize(nullptr));
  }
  // cuFile reads and writes the allocation it registered, at an offset into it; the staged
  // backends need only the pointer (asking the driver for the allocation costs three calls).
  auto [base, base_size, base_offset] =
    cufile ? get_alloc_info(buf, &ctx) : std::tuple<void*, std::size_t, std::size_t>{buf, size, 0};
  (void)base_size;
  if (reading && !cufile && size <= backend->overlapped_read_limit()) {
    // One slot's worth (a column chunk, a page): its worker reads it into a slot of its own
    // ring, starts the copy (or holds it to go with the reads that come while copies run) and
    // goes on to the next task; the future is ready once the bytes are in device memory.
    auto done   = std::make_shared<std::promise<std::size_t>>();
    auto future = done->get_future();
    detail::detach_overlapping_job(
      *pool, [lease, backend, file, ctx, buf, size, file_offset, done]() noexcept {
        try {
          PushAndPopContext const context{ctx};
          backend->read_device_overlapped(file, buf, size, file_offset, std::move(*done));
        } catch (...) {  // the context could not be made current: nothing was moved yet
          done->set_exception(std::current_exception());
        }
      });
    return future;
  }
  if (reading && backend->shares_chunks()) {
    // Each pool thread takes the next chunk (a slot of its ring) when it is ready for one: its
    // ring overlaps reading with copying, and no thread holds a fixed share of the file, so one
    // that falls behind delays only its own chunk.
    auto cursor               = std::make_shared<detail::ChunkCursor>(size);
    std::size_t const workers = std::min<std::size_t>(threads, (size + task_size - 1) / task_size);
    return detail::parallel_workers(
      [lease, backend, file, ctx, base = base, base_offset = base_offset, file_offset, cursor] {
        PushAndPopContext const context{ctx};
        return backend->read_device(file, base, base_offset, file_offset, *cursor);
      },
      workers,
      pool);
  }
  return parallel_io(
    [lease, backend, reading, state, file, ctx, base = base, base_offset = base_offset](
      std::size_t buf_offset, std::size_t n, std::size_t offset) {
      return device_transfer(
        *backend, reading, *state, file, ctx, base, n, offset, base_offset + buf_offset, false);
    },
    size,
    file_offset,
    device_task_size(size, task_size, *pool),
    pool,
    cufile ? 0 : alignment);
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
  check_allowed(dir);
  if (size == 0) { return 0; }
  auto const file = local_file(dir, defaults::thread_pool_nthreads());
  return device_transfer(detail::device_backend(reading, size, file),
                         reading,
                         *state_,
                         file,
                         get_context_from_pointer(devPtr_base),
                         devPtr_base,
                         size,
                         file_offset,
                         devPtr_offset,
                         sync_default_stream);
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
