/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/mmap.hpp>

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/parallel_operation.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "core/in_flight.hpp"
#include "core/observed_promise.hpp"
#include "cuda/stream_cache.hpp"

namespace kvikio {
namespace detail {

// What a read needs of a handle's mapping, copied: the tasks of a pread keep working if the
// handle is moved meanwhile (its lease keeps the mapping itself alive).
struct MappedRange {
  std::string path;
  int fd;
  std::byte const* first;  // the byte at file offset `offset`
  std::size_t offset;
};

}  // namespace detail

namespace {

// A file that shrinks under its mapping makes the pages past its new end fault (SIGBUS) when a
// copy touches them. Copies from a mapping run under a guard: this thread's jump buffer and the
// source range, which the library's SIGBUS handler (installed with the first guarded copy, in
// front of whatever handler was there) jumps back to for a fault inside that range; any other
// SIGBUS goes to the previous handler. Initial-exec TLS: the handler must not allocate it.
__attribute__((tls_model("initial-exec"))) thread_local sigjmp_buf* bus_guard{nullptr};
__attribute__((tls_model("initial-exec"))) thread_local std::byte const* guarded_first{nullptr};
__attribute__((tls_model("initial-exec"))) thread_local std::byte const* guarded_end{nullptr};
struct sigaction previous_bus_handler {};

void on_sigbus(int sig, siginfo_t* info, void* context)
{
  auto const* addr = static_cast<std::byte const*>(info->si_addr);
  if (bus_guard != nullptr && addr >= guarded_first && addr < guarded_end) {
    siglongjmp(*bus_guard, 1);
  }
  if ((previous_bus_handler.sa_flags & SA_SIGINFO) != 0) {
    previous_bus_handler.sa_sigaction(sig, info, context);
  } else if (previous_bus_handler.sa_handler == SIG_DFL ||
             previous_bus_handler.sa_handler == SIG_IGN) {
    // The faulting access runs again as this returns, and then ends the process as before.
    ::signal(SIGBUS, SIG_DFL);
  } else {
    previous_bus_handler.sa_handler(sig);
  }
}

// memcpy from a mapping; false if the source faulted (SIGBUS) before the copy ended.
bool copy_from_mapping(std::byte* dst, std::byte const* src, std::size_t size)
{
  static bool const installed = [] {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    // SA_NODEFER: the jump out of the handler leaves SIGBUS unblocked without saving the mask
    // at each guarded copy (sigsetjmp(..., 0) makes no system call).
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    return ::sigaction(SIGBUS, &action, &previous_bus_handler) == 0;
  }();
  if (!installed) {
    std::memcpy(dst, src, size);
    return true;
  }
  sigjmp_buf jump;
  if (sigsetjmp(jump, 0) != 0) {
    bus_guard = nullptr;
    return false;
  }
  guarded_first = src;
  guarded_end   = src + size;
  bus_guard     = &jump;
  // The handler reads the guard: the stores are not to be moved past the copy, nor dropped.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(dst, src, size);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  bus_guard = nullptr;
  return true;
}

[[noreturn]] void throw_shrank_while_copying(detail::MappedRange const& range,
                                             std::size_t size,
                                             std::size_t offset)
{
  struct stat st {};
  std::string const now = ::fstat(range.fd, &st) == 0 ? std::to_string(st.st_size) : "unknown";
  throw std::out_of_range("MmapHandle: " + range.path + " shrank to " + now + " bytes while " +
                          std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                          " were copied from its mapping (SIGBUS)");
}

void copy_out(detail::MappedRange const& range,
              std::byte* dst,
              std::size_t size,
              std::size_t offset,
              bool device)
{
  // A file shrunk since it was mapped is an error here, before the copy; one that shrinks during
  // the copy is caught by the copy's guard.
  struct stat st {};
  KVIKIO_SYSCALL_CHECK(::fstat(range.fd, &st), "fstat(\"" + range.path + "\")");
  KVIKIO_EXPECT(offset + size <= static_cast<std::size_t>(st.st_size),
                "MmapHandle: " + range.path + " shrank to " + std::to_string(st.st_size) +
                  " bytes since it was mapped; " + std::to_string(size) + " bytes at offset " +
                  std::to_string(offset) + " are past its end",
                std::out_of_range);
  auto const* src = range.first + (offset - range.offset);
  if (!device) {
    if (!copy_from_mapping(dst, src, size)) { throw_shrank_while_copying(range, size, offset); }
    return;
  }
  // Mapped pages are pageable: stage them through the ring's pinned slots (pageable copies are
  // slow), copying into one slot while the others are on their way to the device.
  PushAndPopContext const context{dst};
  CUcontext ctx{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&ctx));
  CUstream const stream = detail::stream_for_this_thread(ctx);
  BounceBufferRing<> ring{defaults::num_bounce_buffers()};
  for (std::size_t done = 0; done < size;) {
    std::size_t const n = std::min(ring.slot_size(), size - done);
    if (!copy_from_mapping(static_cast<std::byte*>(ring.next()), src + done, n)) {
      ring.finish();  // the copies of the slots before it go on to the device first
      throw_shrank_while_copying(range, size, offset);
    }
    ring.submit_h2d(convert_void2deviceptr(dst + done), n, stream);
    done += n;
  }
  ring.finish();
}

}  // namespace

MmapHandle::MmapHandle(std::string const& file_path,
                       std::string const& flags,
                       std::optional<std::size_t> initial_map_size,
                       std::size_t initial_map_offset,
                       mode_t mode,
                       std::optional<int> map_flags)
  : path_{file_path},
    source_{std::make_shared<std::string const>(file_path)},
    map_offset_{initial_map_offset}
{
  // Flag checks: the fixed wording callers match on, then which flags and file.
  int const oflags = open_fd_parse_flags(flags, false);
  KVIKIO_EXPECT((oflags & O_CREAT) == 0,
                "File-backed mmap write is not supported yet: flags \"" + flags + "\" for " +
                  file_path + " (only \"r\")",
                std::invalid_argument);
  // A file mapping for reading, nothing else: MAP_ANONYMOUS would read zeros as the file's
  // bytes, MAP_FIXED would map over whatever lives at the hint (address 0 here). Refused as
  // mmap(2) refuses flags it cannot take (EINVAL, as a GenericSystemError).
  int const sharing = map_flags.value_or(MAP_PRIVATE) & (MAP_SHARED | MAP_PRIVATE);
  int const allowed =
    MAP_SHARED | MAP_PRIVATE | MAP_POPULATE | MAP_NORESERVE | MAP_LOCKED | MAP_NONBLOCK;
  if ((sharing != MAP_SHARED && sharing != MAP_PRIVATE) ||
      (map_flags.value_or(MAP_PRIVATE) & ~allowed) != 0) {
    detail::throw_system_error(
      EINVAL,
      __FILE__,
      __LINE__,
      "MmapHandle: map_flags " + std::to_string(map_flags.value_or(MAP_PRIVATE)) + " for " +
        file_path +
        " is not a file mapping's: one of MAP_SHARED or MAP_PRIVATE, with any of MAP_POPULATE, "
        "MAP_NORESERVE, MAP_LOCKED, MAP_NONBLOCK (not MAP_ANONYMOUS, MAP_FIXED, ...)");
  }
  fd_ = open_fd(file_path, flags, false, mode);
  try {
    in_flight_ = std::make_unique<detail::InFlight>();
    file_size_ = get_file_size(fd_);
    // An empty file maps nothing and is no error.
    if (file_size_ == 0) { return; }
    KVIKIO_EXPECT(map_offset_ < file_size_,
                  "Offset must be less than the file size: initial_map_offset " +
                    std::to_string(map_offset_) + ", " + file_path + " has " +
                    std::to_string(file_size_) + " bytes",
                  std::out_of_range);
    KVIKIO_EXPECT(
      !initial_map_size.has_value() || *initial_map_size > 0,
      "Mapped region should not be zero byte (initial_map_size 0 for " + file_path + ")",
      std::invalid_argument);
    map_size_ = initial_map_size.value_or(file_size_ - map_offset_);
    KVIKIO_EXPECT(map_size_ <= file_size_ - map_offset_,
                  "Mapped region is past the end of file: initial_map_size " +
                    std::to_string(map_size_) + " at offset " + std::to_string(map_offset_) + ", " +
                    file_path + " has " + std::to_string(file_size_) + " bytes",
                  std::out_of_range);
    if (map_size_ > 0) {
      page_shift_   = map_offset_ % get_page_size();
      mapping_size_ = map_size_ + page_shift_;
      mapping_      = ::mmap(nullptr,
                        mapping_size_,
                        PROT_READ,
                        map_flags.value_or(MAP_PRIVATE),
                        fd_,
                        static_cast<off_t>(map_offset_ - page_shift_));
      if (mapping_ == MAP_FAILED) {
        mapping_ = nullptr;
        detail::throw_system_error(errno, __FILE__, __LINE__, "mmap(\"" + file_path + "\")");
      }
    }
  } catch (...) {
    close();
    throw;
  }
}

MmapHandle::MmapHandle() noexcept = default;

MmapHandle::MmapHandle(MmapHandle&& o) noexcept
  : path_{std::move(o.path_)},
    source_{std::move(o.source_)},
    fd_{o.fd_.exchange(-1)},
    file_size_{o.file_size_},
    map_offset_{o.map_offset_},
    map_size_{o.map_size_},
    mapping_{std::exchange(o.mapping_, nullptr)},
    mapping_size_{o.mapping_size_},
    page_shift_{o.page_shift_},
    in_flight_{std::move(o.in_flight_)}
{
}

MmapHandle& MmapHandle::operator=(MmapHandle&& o) noexcept
{
  if (this != &o) {
    close();
    path_         = std::move(o.path_);
    source_       = std::move(o.source_);
    fd_           = o.fd_.exchange(-1);
    file_size_    = o.file_size_;
    map_offset_   = o.map_offset_;
    map_size_     = o.map_size_;
    mapping_      = std::exchange(o.mapping_, nullptr);
    mapping_size_ = o.mapping_size_;
    page_shift_   = o.page_shift_;
    in_flight_    = std::move(o.in_flight_);
  }
  return *this;
}

MmapHandle::~MmapHandle() noexcept { close(); }

// A closed (or default-constructed) handle reads as empty.
std::size_t MmapHandle::initial_map_size() const noexcept { return closed() ? 0 : map_size_; }
std::size_t MmapHandle::initial_map_offset() const noexcept { return closed() ? 0 : map_offset_; }
std::size_t MmapHandle::file_size() const { return closed() ? 0 : file_size_; }
// nbytes() is the file's size too (not the mapped range's), as the public API defines it.
std::size_t MmapHandle::nbytes() const { return file_size(); }

bool MmapHandle::closed() const noexcept { return fd_ < 0; }

void MmapHandle::close() noexcept
{
  if (in_flight_ != nullptr) { in_flight_->close_and_wait(); }
  static std::mutex closing;  // one close() unmaps; one racing it finds nothing left
  std::lock_guard const lock{closing};
  if (mapping_ != nullptr && ::munmap(mapping_, mapping_size_) != 0) {
    KVIKIO_LOG_ERROR("munmap of ", path_, " failed: errno ", errno);
  }
  mapping_ = nullptr;
  if (int const fd = fd_.exchange(-1); fd >= 0) { ::close(fd); }
}

std::size_t MmapHandle::checked_size(std::optional<std::size_t> size,
                                     std::size_t offset,
                                     void const* buf) const
{
  KVIKIO_EXPECT(!closed(), "Cannot read from a closed MmapHandle", std::runtime_error);
  KVIKIO_EXPECT(offset <= file_size_,
                "Offset is past the end of file: offset " + std::to_string(offset) + ", " + path_ +
                  " has " + std::to_string(file_size_) + " bytes",
                std::out_of_range);
  std::size_t const n   = size.value_or(file_size_ - offset);
  std::size_t const end = map_offset_ + map_size_;
  KVIKIO_EXPECT(offset >= map_offset_ && offset <= end && n <= end - offset,
                "Read is out of bound: " + std::to_string(n) + " bytes at offset " +
                  std::to_string(offset) + ", the mapped range of " + path_ + " is [" +
                  std::to_string(map_offset_) + ", " + std::to_string(end) + ")",
                std::out_of_range);
  KVIKIO_EXPECT(buf != nullptr || n == 0, "MmapHandle: null buffer", std::invalid_argument);
  return n;
}

std::size_t MmapHandle::read(void* buf, std::optional<std::size_t> size, std::size_t offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  auto const lease    = enter();
  std::size_t const n = checked_size(size, offset, buf);
  if (n == 0) { return 0; }
  bool const device = !is_host_memory(buf);
  detail::LogicalObservationRecorder recorder{IoBackend::MMAP,
                                              TransferDirection::READ,
                                              device ? MemoryKind::DEVICE : MemoryKind::HOST,
                                              offset,
                                              n,
                                              source_};
  copy_out(mapped_range(), static_cast<std::byte*>(buf), n, offset, device);
  recorder.finish(n);
  return n;
}

std::future<std::size_t> MmapHandle::pread(void* buf,
                                           std::optional<std::size_t> size,
                                           std::size_t offset,
                                           std::size_t task_size,
                                           ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE();
  auto lease          = enter();  // held by every task until the last one is done
  std::size_t const n = checked_size(size, offset, buf);
  KVIKIO_EXPECT(
    task_size > 0, "`task_size` must be positive (MmapHandle::pread got 0)", std::invalid_argument);
  KVIKIO_EXPECT(thread_pool != nullptr, "The thread pool must not be nullptr (MmapHandle::pread)");
  bool const device = n > 0 && !is_host_memory(buf);
  auto* const dst   = static_cast<std::byte*>(buf);
  return parallel_io(
    [lease, range = mapped_range(), dst, device](
      std::size_t buf_offset, std::size_t chunk, std::size_t file_offset) {
      copy_out(range, dst + buf_offset, chunk, file_offset, device);
      return chunk;
    },
    n,
    offset,
    task_size,
    thread_pool,
    0,
    n == 0 ? nullptr
           : detail::observe_call(IoBackend::MMAP,
                                  TransferDirection::READ,
                                  device ? MemoryKind::DEVICE : MemoryKind::HOST,
                                  offset,
                                  n,
                                  source_));
}

detail::MappedRange MmapHandle::mapped_range() const
{
  return {path_, fd_.load(), static_cast<std::byte const*>(mapping_) + page_shift_, map_offset_};
}

std::shared_ptr<void> MmapHandle::enter() const
{
  detail::expect_not_in_monitor();
  auto lease = in_flight_ == nullptr ? nullptr : in_flight_->enter();
  KVIKIO_EXPECT(lease != nullptr, "Cannot read from a closed MmapHandle", std::runtime_error);
  return lease;
}

}  // namespace kvikio
