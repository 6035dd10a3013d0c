/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_handle.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <kvikio/detail/in_flight.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/local_backend.hpp>
#include <kvikio/detail/local_choice.hpp>
#include <kvikio/detail/stream_ordered.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/parallel_operation.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/utils.hpp>
#include "open_file.hpp"

namespace kvikio {
namespace detail {

// What the operations of a FileHandle share with it, at an address that moves of the handle do
// not change: the leases on its descriptors and its size.
struct FileState {
  InFlight in_flight;
  std::atomic<std::size_t> nbytes{0};  // size at open, grown by writes through the handle

  void grew_to(std::size_t end) noexcept
  {
    std::size_t current = nbytes.load();
    while (current < end && !nbytes.compare_exchange_weak(current, end)) {}
  }
};

}  // namespace detail

namespace {

// Host memory on the calling thread, through `backend`.
std::size_t host_transfer(detail::HostBackend& backend,
                          bool reading,
                          detail::FileState& state,
                          detail::LocalFile const& file,
                          std::byte* buf,
                          std::size_t size,
                          std::size_t file_offset)
{
  if (reading) { return backend.read_host(file, buf, size, file_offset); }
  auto const written = backend.write_host(file, buf, size, file_offset);
  state.grew_to(file_offset + written);
  return written;
}

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
  // Work queued on the legacy default stream (which KvikIO's streams do not wait for) lands first.
  if (sync_default_stream) {
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamSynchronize(nullptr));
  }
  if (reading) {
    detail::ChunkCursor cursor{size};
    return backend.read_device(file, devPtr_base, devPtr_offset, file_offset, cursor);
  }
  std::size_t const moved =
    backend.write_device(file, devPtr_base, devPtr_offset, size, file_offset);
  state.grew_to(file_offset + moved);
  return moved;
}

// One pool per block device, sized like the global pool (KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE).
ThreadPool* block_device_pool(dev_t device)
{
  static std::mutex mutex;
  static auto* const pools = new std::map<dev_t, std::unique_ptr<ThreadPool>>();
  std::lock_guard const lock{mutex};
  auto& pool = (*pools)[device];
  if (!pool) { pool = std::make_unique<ThreadPool>(defaults::thread_pool_nthreads()); }
  return pool.get();
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

FileHandle::FileHandle() noexcept = default;

FileHandle::FileHandle(std::string const& file_path,
                       std::string const& flags,
                       mode_t mode,
                       CompatMode compat_mode)
  : path_{file_path}, flags_{flags}
{
  int const oflags = open_fd_parse_flags(flags, false);
  access_mode_     = oflags & O_ACCMODE;
  fd_              = open_fd(file_path, flags, false, mode);
  try {
    state_ = std::make_unique<detail::FileState>();
    // The file exists now: the O_DIRECT descriptor must neither create nor truncate it again.
    try {
      fd_direct_ = detail::open_regular_file(
        file_path, (oflags & ~(O_CREAT | O_TRUNC)) | O_DIRECT, mode, flags);
    } catch (std::system_error const& e) {
      KVIKIO_LOG_DEBUG("no O_DIRECT for ", file_path, ": ", e.what());
    }
    struct stat st {};
    KVIKIO_SYSCALL_CHECK(::fstat(fd_, &st), "fstat(\"" + file_path + "\")");
    device_        = st.st_dev;
    state_->nbytes = static_cast<std::size_t>(st.st_size);
    compat_        = CompatModeManager{file_path, fd_, compat_mode};
  } catch (...) {
    close();
    throw;
  }
}

FileHandle::FileHandle(FileHandle&& o) noexcept
  : path_{std::move(o.path_)},
    flags_{std::move(o.flags_)},
    fd_{o.fd_.exchange(-1)},
    fd_direct_{o.fd_direct_.exchange(-1)},
    access_mode_{o.access_mode_},
    device_{o.device_},
    state_{std::move(o.state_)},
    compat_{std::move(o.compat_)}
{
}

FileHandle& FileHandle::operator=(FileHandle&& o) noexcept
{
  if (this != &o) {
    close();
    path_        = std::move(o.path_);
    flags_       = std::move(o.flags_);
    fd_          = o.fd_.exchange(-1);
    fd_direct_   = o.fd_direct_.exchange(-1);
    access_mode_ = o.access_mode_;
    device_      = o.device_;
    state_       = std::move(o.state_);
    compat_      = std::move(o.compat_);
  }
  return *this;
}

FileHandle::~FileHandle() noexcept { close(); }

bool FileHandle::closed() const noexcept { return fd_.load() < 0; }

void FileHandle::close() noexcept
{
  // Operations that took a lease finish first; a second close() (or one racing this) waits
  // the same way and then finds nothing left to close.
  if (state_ != nullptr) { state_->in_flight.close_and_wait(); }
  static std::mutex closing;  // makes the descriptors' exchange and the cuFile reset one step
  std::lock_guard const lock{closing};
  int const fd        = fd_.exchange(-1);
  int const fd_direct = fd_direct_.exchange(-1);
  if (fd < 0 && fd_direct < 0) { return; }
  compat_ = CompatModeManager{};  // deregisters the cuFile handle before its descriptor closes
  for (int const d : {fd_direct, fd}) {
    if (d >= 0 && ::close(d) != 0) {
      KVIKIO_LOG_ERROR("closing ", path_, " failed: errno ", errno);
    }
  }
}

CUfileHandle_t FileHandle::handle()
{
  check_open();
  KVIKIO_EXPECT(
    !compat_.is_compat_mode_preferred(),
    "FileHandle::handle(): " + path_ + " uses POSIX I/O (compat mode); it has no cuFile handle");
  return compat_.cufile_handle();
}

int FileHandle::fd(bool o_direct) const noexcept { return o_direct ? fd_direct_ : fd_; }

int FileHandle::fd_open_flags(bool o_direct) const
{
  int const flags = ::fcntl(fd(o_direct), F_GETFL);
  KVIKIO_SYSCALL_CHECK(flags, "fcntl(F_GETFL) of " + path_);
  return flags;
}

std::size_t FileHandle::nbytes() const
{
  return closed() || state_ == nullptr ? 0 : state_->nbytes.load();
}

bool FileHandle::is_direct_io_supported() const noexcept { return fd_direct_ >= 0; }

CompatModeManager const& FileHandle::get_compat_mode_manager() const noexcept { return compat_; }

void FileHandle::check_open() const
{
  KVIKIO_EXPECT(!closed(), "the file handle is closed" + (path_.empty() ? "" : " (" + path_ + ")"));
}

FileHandle::Lease FileHandle::enter(char const* what) const
{
  Lease lease = state_ == nullptr ? nullptr : state_->in_flight.enter();
  KVIKIO_EXPECT(
    lease != nullptr,
    std::string{what} + ": the file handle is closed" + (path_.empty() ? "" : " (" + path_ + ")"));
  return lease;
}

void FileHandle::check_range(void const* buf,
                             std::size_t size,
                             std::size_t file_offset,
                             char const* what) const
{
  KVIKIO_EXPECT(buf != nullptr || size == 0,
                std::string{what} + ": null buffer for " + std::to_string(size) + " bytes",
                std::invalid_argument);
  auto const max = static_cast<std::size_t>(std::numeric_limits<off_t>::max());
  KVIKIO_EXPECT(file_offset <= max && size <= max - file_offset,
                std::string{what} + ": file offset " + std::to_string(file_offset) + " + size " +
                  std::to_string(size) + " overflows a file offset",
                std::overflow_error);
}

void FileHandle::check_allowed(Direction dir) const
{
  // Upstream's wording and type for I/O its open flags forbid.
  bool const reading = dir == Direction::read;
  KVIKIO_EXPECT(access_mode_ != (reading ? O_WRONLY : O_RDONLY),
                "POSIX error: Operation not permitted: " + path_ + " was opened with flags \"" +
                  flags_ + "\", which do not allow " + (reading ? "reading" : "writing") +
                  " (unsupported file open flags)");
}

ThreadPool* FileHandle::pool_for(ThreadPool* requested) const
{
  KVIKIO_EXPECT(requested != nullptr, "The thread pool must not be nullptr");
  if (requested == &defaults::thread_pool() && defaults::thread_pool_per_block_device()) {
    return block_device_pool(device_);
  }
  return requested;
}

detail::LocalFile FileHandle::local_file(Direction dir, std::size_t pool_threads) const
{
  bool const reading = dir == Direction::read;
  bool const direct  = reading ? defaults::auto_direct_io_read() : defaults::auto_direct_io_write();
  return detail::LocalFile{fd_.load(),
                           direct ? fd_direct_.load() : -1,
                           reading && defaults::auto_direct_io_read_overread(),
                           compat_.is_compat_mode_preferred() ? nullptr : compat_.cufile_handle(),
                           pool_threads};
}

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
    auto* const backend = &detail::host_backend(reading, threads);
    if (size < gds_threshold) {  // small: a task hand-off would cost more than the transfer
      return make_ready_future(
        host_transfer(*backend, reading, *state, file, bytes, size, file_offset));
    }
    // A backend that keeps many requests in flight per thread (io_uring: kernel workers copy
    // them) gets one range per pool thread: fewer, longer tasks go as fast with fewer threads.
    return parallel_io(
      [lease, backend, reading, state, file, bytes](
        std::size_t buf_offset, std::size_t n, std::size_t offset) {
        return host_transfer(*backend, reading, *state, file, bytes + buf_offset, n, offset);
      },
      size,
      file_offset,
      backend->deep_queue() ? device_task_size(size, task_size, *pool) : task_size,
      pool,
      alignment);
  }
  bool const cufile   = file.cufile != nullptr;
  auto* const backend = &detail::device_backend(reading, file);
  CUcontext ctx       = get_context_from_pointer(buf);
  if (size < gds_threshold) {
    return make_ready_future(device_transfer(
      *backend, reading, *state, file, ctx, buf, size, file_offset, 0, sync_default_stream));
  }
  if (sync_default_stream) {  // once per call, not per task
    PushAndPopContext const context{ctx};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamSynchronize(nullptr));
  }
  auto [base, base_size, base_offset] = get_alloc_info(buf, &ctx);
  (void)base_size;
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
  return device_transfer(detail::device_backend(reading, file),
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

void FileHandle::async_transfer(Direction dir,
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
    return;
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
    return;
  }
  PushAndPopContext const context{get_context_from_pointer(devPtr_base)};
  ThreadPool* const pool = pool_for(&defaults::thread_pool());
  auto const file        = local_file(dir, pool->get_thread_count());
  auto* const backend    = &detail::host_backend(reading, file.pool_threads);
  auto* const state      = state_.get();
  detail::run_stream_ordered(
    stream,
    reading,
    convert_void2deviceptr(devPtr_base) + devPtr_offset,
    size,
    file_offset,
    defaults::task_size(),
    [lease, backend, reading, state, file](void* host, std::size_t n, std::size_t offset) {
      return host_transfer(
        *backend, reading, *state, file, static_cast<std::byte*>(host), n, offset);
    },
    pool->get_thread_count(),
    detail::report_stream_ordered(bytes_p, std::move(error), what));
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

StreamFuture FileHandle::read_async(
  void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream)
{
  StreamFuture future{devPtr_base, size, file_offset, devPtr_offset, stream};
  auto [base, size_p, file_offset_p, devPtr_offset_p, bytes_p, s] = future.get_args();
  async_transfer(
    Direction::read, base, size_p, file_offset_p, devPtr_offset_p, bytes_p, s, future.error_);
  return future;
}

StreamFuture FileHandle::write_async(
  void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream)
{
  StreamFuture future{devPtr_base, size, file_offset, devPtr_offset, stream};
  auto [base, size_p, file_offset_p, devPtr_offset_p, bytes_p, s] = future.get_args();
  async_transfer(
    Direction::write, base, size_p, file_offset_p, devPtr_offset_p, bytes_p, s, future.error_);
  return future;
}

}  // namespace kvikio
