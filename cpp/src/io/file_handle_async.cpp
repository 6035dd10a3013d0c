/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_handle.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/utils.hpp>

#include "core/observed_promise.hpp"
#include "io/file_state.hpp"
#include "io/local_plan.hpp"
#include "parallel/stream_ordered.hpp"

namespace kvikio {

namespace {

// The context of a stream-ordered transfer's memory. Device memory answers the first query, as
// get_context_from_pointer() asks it; only memory without a context of its own is asked its
// kind, and pageable host memory is refused here, once (the stream's copies would fail on it
// later, less clearly).
CUcontext stream_ordered_context(void* buf, char const* what)
{
  if (auto const ctx = get_context_associated_pointer(convert_void2deviceptr(buf))) { return *ctx; }
  KVIKIO_EXPECT(!detail::is_pageable_host_memory(buf),
                std::string{what} + ": the buffer at " +
                  std::to_string(reinterpret_cast<std::uintptr_t>(buf)) +
                  " is pageable host memory; stream-ordered I/O needs device memory (or pinned "
                  "host memory): use pread()/pwrite() for pageable host memory",
                std::invalid_argument);
  return get_context_from_pointer(buf);
}

}  // namespace

CUcontext FileHandle::async_transfer(Direction dir,
                                     void* devPtr_base,
                                     std::size_t* size_p,
                                     off_t* file_offset_p,
                                     off_t* devPtr_offset_p,
                                     ssize_t* bytes_p,
                                     CUstream stream,
                                     std::shared_ptr<std::exception_ptr> error)
{
  bool const reading     = dir == Direction::read;
  char const* const what = reading ? "FileHandle::read_async" : "FileHandle::write_async";
  Lease lease            = enter(what);
  check_allowed(dir);
  // As upstream: compat mode OFF promises cuFile, so without its stream API this is an error.
  compat_.validate_compat_mode_for_async();
  KVIKIO_EXPECT(size_p != nullptr && file_offset_p != nullptr && devPtr_offset_p != nullptr &&
                  bytes_p != nullptr,
                std::string{what} + ": null argument pointer",
                std::invalid_argument);
  if (!compat_.is_compat_mode_preferred_for_async()) {
    // The size is known now; a write's file will have grown once the stream gets there.
    if (!reading) { state_->grew_to(static_cast<std::size_t>(*file_offset_p) + *size_p); }
    auto& api        = cuFileAPI::instance();
    auto const async = reading ? api.ReadAsync : api.WriteAsync;
    KVIKIO_CUFILE_TRY(async(compat_.cufile_handle(),
                            devPtr_base,
                            size_p,
                            file_offset_p,
                            devPtr_offset_p,
                            bytes_p,
                            stream));
    // cuFile uses the handle when the stream gets there: the lease goes with the stream, and
    // a host function (no CUDA call inside) drops it after the transfer.
    auto* held       = new Lease{std::move(lease)};
    CUresult const r = cudaAPI::instance().LaunchHostFunc(
      stream, [](void* p) { delete static_cast<Lease*>(p); }, held);
    if (r != CUDA_SUCCESS) {  // the stream cannot tell when it is done: wait for it here
      (void)cudaAPI::instance().StreamSynchronize(stream);
      delete held;
      KVIKIO_CUDA_DRIVER_TRY(r);
    }
    return nullptr;
  }
  // Stream-ordered, on as many workers as the pool has threads. The arguments are read now, at
  // planning (cuFile reads them when the stream gets there); *bytes_p is written at the end.
  std::size_t const size   = *size_p;
  auto const file_offset   = static_cast<std::size_t>(*file_offset_p);
  auto const devPtr_offset = static_cast<std::size_t>(*devPtr_offset_p);
  KVIKIO_EXPECT(*file_offset_p >= 0 && *devPtr_offset_p >= 0,
                std::string{what} + ": negative offset (file offset " +
                  std::to_string(*file_offset_p) + ", device offset " +
                  std::to_string(*devPtr_offset_p) + ")",
                std::invalid_argument);
  check_range(devPtr_base, size, file_offset, what);
  if (size == 0) {
    *bytes_p = 0;
    return nullptr;
  }
  CUcontext const ctx = stream_ordered_context(devPtr_base, what);
  PushAndPopContext const context{ctx};
  ThreadPool* const pool = pool_for(&defaults::thread_pool());
  auto const file        = local_file(dir, pool->get_thread_count());
  auto* const mover      = &detail::host_mover(reading, size, file.pool_threads);
  auto* const state      = state_.get();
  detail::run_stream_ordered(
    {.stream      = stream,
     .to_device   = reading,
     .device      = convert_void2deviceptr(devPtr_base) + devPtr_offset,
     .size        = size,
     .file_offset = file_offset,
     .piece_size  = defaults::task_size(),
     .threads     = pool->get_thread_count()},
    [lease, mover, reading, state, file](void* host, std::size_t n, std::size_t offset) {
      return detail::host_transfer(
        *mover, reading, *state, file, {static_cast<std::byte*>(host), n, offset});
    },
    detail::finishing_observation(
      detail::observe_call(IoBackend::POSIX,
                           reading ? TransferDirection::READ : TransferDirection::WRITE,
                           MemoryKind::DEVICE,
                           file_offset,
                           size,
                           source_),
      detail::report_stream_ordered(bytes_p, std::move(error), what)));
  return ctx;
}

void FileHandle::read_async(void* devPtr_base,
                            std::size_t* size_p,
                            off_t* file_offset_p,
                            off_t* devPtr_offset_p,
                            ssize_t* bytes_read_p,
                            CUstream stream)
{
  async_transfer(
    Direction::read, devPtr_base, size_p, file_offset_p, devPtr_offset_p, bytes_read_p, stream);
}

void FileHandle::write_async(void* devPtr_base,
                             std::size_t* size_p,
                             off_t* file_offset_p,
                             off_t* devPtr_offset_p,
                             ssize_t* bytes_written_p,
                             CUstream stream)
{
  async_transfer(
    Direction::write, devPtr_base, size_p, file_offset_p, devPtr_offset_p, bytes_written_p, stream);
}

StreamFuture FileHandle::async_transfer(Direction dir,
                                        void* devPtr_base,
                                        std::size_t size,
                                        off_t file_offset,
                                        off_t devPtr_offset,
                                        CUstream stream)
{
  StreamFuture future{devPtr_base, size, file_offset, devPtr_offset, stream};
  auto [base, size_p, file_offset_p, devPtr_offset_p, bytes_p, s] = future.get_args();
  future.context_ =
    async_transfer(dir, base, size_p, file_offset_p, devPtr_offset_p, bytes_p, s, future.error_);
  return future;
}

StreamFuture FileHandle::read_async(
  void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream)
{
  return async_transfer(Direction::read, devPtr_base, size, file_offset, devPtr_offset, stream);
}

StreamFuture FileHandle::write_async(
  void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream)
{
  return async_transfer(Direction::write, devPtr_base, size, file_offset, devPtr_offset, stream);
}

}  // namespace kvikio
