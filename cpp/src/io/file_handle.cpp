/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_handle.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include "core/in_flight.hpp"
#include "core/settings_report.hpp"
#include "io/file_state.hpp"
#include "io/local_plan.hpp"
#include "io/open_file.hpp"
#include "parallel/stream_ordered.hpp"

namespace kvikio {
namespace {

// One pool per block device, sized like the global pool (KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE).
ThreadPool* block_device_pool(dev_t device)
{
  using Pools = std::map<dev_t, std::unique_ptr<ThreadPool>>;
  static std::mutex mutex;
  static detail::BuiltOnce<Pools> built;
  Pools* const pools = &built.get([] { return new Pools(); });
  std::lock_guard const lock{mutex};
  auto& pool = (*pools)[device];
  if (!pool) {
    // kvikio-blk-N: N counts over every block device's pool.
    static auto const& name_thread = detail::lasting_thread_namer("kvikio-blk");
    pool = std::make_unique<ThreadPool>(defaults::thread_pool_nthreads(), name_thread);
  }
  return pool.get();
}

}  // namespace

FileHandle::FileHandle() noexcept = default;

FileHandle::FileHandle(std::string const& file_path,
                       std::string const& flags,
                       mode_t mode,
                       CompatMode compat_mode)
  : path_{file_path}, source_{std::make_shared<std::string const>(file_path)}, flags_{flags}
{
  // A process that uses CUDA has its first stream-ordered call's staging pinned meanwhile (from
  // here, so that it overlaps the rest of the opening).
  detail::warm_up_stream_staging();
  int const oflags = open_fd_parse_flags(flags, false);
  access_mode_     = oflags & O_ACCMODE;
  fd_              = open_fd(file_path, flags, false, mode);
  try {
    state_ = std::make_unique<detail::FileState>();
    // The file exists now: the O_DIRECT descriptor must neither create nor truncate it again.
    try {
      fd_direct_ = detail::reopen_regular_file(
        fd_, file_path, (oflags & ~(O_CREAT | O_TRUNC)) | O_DIRECT, flags);
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
  detail::log_settings_report_once();
  KVIKIO_LOG_INFO("FileHandle(\"", file_path, "\", \"", flags, "\"): ", how_bytes_move(false));
  KVIKIO_LOG_DEBUG(
    "FileHandle(\"", file_path, "\", \"", flags, "\") and why: ", how_bytes_move(true));
}

std::string FileHandle::how_bytes_move(bool with_reasons) const
{
  bool const own_pool        = defaults::thread_pool_per_block_device();
  unsigned int const threads = defaults::thread_pool_nthreads();
  auto const staged          = detail::local_backend_choice(threads);
  auto const reason          = [&](std::string const& why) {
    return with_reasons ? " (" + why + ")" : std::string{};
  };
  std::string text = compat_.is_compat_mode_preferred() ? "device memory staged in pinned buffers"
                                                        : "device memory through cuFile";
  text += reason(compat_.reason()) + "; host memory";
  if (compat_.is_compat_mode_preferred()) { text += " and device memory"; }
  text += " through " + staged.backend + reason(staged.why) + "; O_DIRECT ";
  if (fd_direct_ < 0) {
    text += "refused by the file system";
  } else {
    text += "open";
    text += reason(std::string{"reads: "} + (defaults::auto_direct_io_read() ? "on" : "off") +
                   ", writes: " + (defaults::auto_direct_io_write() ? "on" : "off"));
  }
  text += "; pool of " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
          (own_pool ? " per block device" : " (the process's)");
  return text;
}

FileHandle::FileHandle(FileHandle&& o) noexcept
  : path_{std::move(o.path_)},
    source_{std::move(o.source_)},
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
    source_      = std::move(o.source_);
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
  detail::expect_not_in_monitor();
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
  // I/O the open flags forbid: a CUfileException in the fixed wording callers match on.
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

}  // namespace kvikio
