/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/stream.hpp>

#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {
namespace {

// A default stream (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) names the current context's: an
// operation on one is waited for with the context it was enqueued in current (its destination's,
// which FileHandle and RemoteHandle push), whatever context the waiting thread has, or none.
// Another stream carries its own context.
CUresult synchronize(CUstream stream, CUcontext enqueued_in)
{
  auto& api = cudaAPI::instance();
  if (!detail::is_default_stream(stream) || enqueued_in == nullptr) {
    return api.StreamSynchronize(stream);
  }
  PushAndPopContext const context{enqueued_in};
  return api.StreamSynchronize(stream);
}

}  // namespace

bool detail::is_default_stream(CUstream stream) noexcept
{
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

StreamFuture::StreamFuture(
  void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream)
  : devPtr_base_{devPtr_base},
    stream_{stream},
    args_{std::make_unique<Args>(Args{size, file_offset, devPtr_offset, 0})}
{
}

void StreamFuture::wait_for_stream() noexcept
{
  if (!args_ || synchronized_) { return; }
  try {
    KVIKIO_CUDA_DRIVER_TRY(synchronize(stream_, context_));
  } catch (std::exception const& e) {
    KVIKIO_LOG_ERROR("StreamFuture: synchronising its stream failed: ", e.what());
  }
}

StreamFuture::~StreamFuture() noexcept { wait_for_stream(); }

StreamFuture& StreamFuture::operator=(StreamFuture&& o) noexcept
{
  if (this != &o) {
    wait_for_stream();
    devPtr_base_  = std::exchange(o.devPtr_base_, nullptr);
    stream_       = std::exchange(o.stream_, nullptr);
    context_      = std::exchange(o.context_, nullptr);
    args_         = std::move(o.args_);
    error_        = std::move(o.error_);
    synchronized_ = std::exchange(o.synchronized_, false);
  }
  return *this;
}

std::tuple<void*, std::size_t*, off_t*, off_t*, ssize_t*, CUstream> StreamFuture::get_args() const
{
  KVIKIO_EXPECT(args_ != nullptr, "StreamFuture: empty (default-constructed or moved from)");
  return {devPtr_base_,
          &args_->size,
          &args_->file_offset,
          &args_->devPtr_offset,
          &args_->bytes_done,
          stream_};
}

std::size_t StreamFuture::check_bytes_done()
{
  KVIKIO_EXPECT(args_ != nullptr, "StreamFuture: empty (default-constructed or moved from)");
  if (!synchronized_) {
    KVIKIO_CUDA_DRIVER_TRY(synchronize(stream_, context_));
    synchronized_ = true;
  }
  if (error_ && *error_) { std::rethrow_exception(*error_); }
  KVIKIO_EXPECT(
    args_->bytes_done >= 0,
    "asynchronous I/O failed with " + std::to_string(args_->bytes_done) + " (" +
      (args_->bytes_done == -1
         ? std::string{"see errno"}
         : detail::cufile_error_description(static_cast<int>(-args_->bytes_done), CUDA_SUCCESS)) +
      ")");
  return static_cast<std::size_t>(args_->bytes_done);
}

void stream_register(CUstream stream, unsigned flags)
{
  if (defaults::is_compat_mode_preferred() || cuFileAPI::instance().StreamRegister == nullptr) {
    return;
  }
  KVIKIO_CUFILE_TRY(cuFileAPI::instance().StreamRegister(stream, flags));
}

void stream_deregister(CUstream stream)
{
  if (defaults::is_compat_mode_preferred() || cuFileAPI::instance().StreamDeregister == nullptr) {
    return;
  }
  KVIKIO_CUFILE_TRY(cuFileAPI::instance().StreamDeregister(stream));
}

}  // namespace kvikio
