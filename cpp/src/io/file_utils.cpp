/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_utils.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/utils.hpp>

#include "io/open_file.hpp"

namespace kvikio {

FileWrapper::FileWrapper(std::string const& file_path,
                         std::string const& flags,
                         bool o_direct,
                         mode_t mode)
{
  open(file_path, flags, o_direct, mode);
}

FileWrapper::~FileWrapper() noexcept { close(); }

FileWrapper::FileWrapper(FileWrapper&& o) noexcept : fd_{std::exchange(o.fd_, -1)} {}

FileWrapper& FileWrapper::operator=(FileWrapper&& o) noexcept
{
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void FileWrapper::open(std::string const& file_path,
                       std::string const& flags,
                       bool o_direct,
                       mode_t mode)
{
  if (!opened()) { fd_ = open_fd(file_path, flags, o_direct, mode); }
}

bool FileWrapper::opened() const noexcept { return fd_ != -1; }

void FileWrapper::close() noexcept
{
  if (opened() && ::close(fd_) != 0) { KVIKIO_LOG_ERROR("closing fd ", fd_, ": errno ", errno); }
  fd_ = -1;
}

int FileWrapper::fd() const noexcept { return fd_; }

CUFileHandleWrapper::~CUFileHandleWrapper() noexcept { unregister_handle(); }

CUFileHandleWrapper::CUFileHandleWrapper(CUFileHandleWrapper&& o) noexcept
  : handle_{std::exchange(o.handle_, nullptr)}, registered_{std::exchange(o.registered_, false)}
{
}

CUFileHandleWrapper& CUFileHandleWrapper::operator=(CUFileHandleWrapper&& o) noexcept
{
  if (this != &o) {
    unregister_handle();
    handle_     = std::exchange(o.handle_, nullptr);
    registered_ = std::exchange(o.registered_, false);
  }
  return *this;
}

std::optional<CUfileError_t> CUFileHandleWrapper::register_handle(int fd) noexcept
{
  if (registered()) { return std::nullopt; }
  if (!is_cufile_library_available()) {
    return CUfileError_t{CU_FILE_DRIVER_NOT_INITIALIZED, CUDA_SUCCESS};
  }
  CUfileDescr_t descr{};
  descr.type      = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;  // NOLINT(cppcoreguidelines-pro-type-union-access): cuFile's C API
  CUfileError_t const result = cuFileAPI::instance().HandleRegister(&handle_, &descr);
  registered_                = result.err == CU_FILE_SUCCESS;
  return result;
}

bool CUFileHandleWrapper::registered() const noexcept { return registered_; }

CUfileHandle_t CUFileHandleWrapper::handle() const noexcept { return handle_; }

void CUFileHandleWrapper::unregister_handle() noexcept
{
  if (registered_) {
    cuFileAPI::instance().HandleDeregister(handle_);
    registered_ = false;
  }
}

int open_fd_parse_flags(std::string const& flags, bool o_direct)
{
  auto const expected = "\"" + flags + "\" (expected \"r\", \"r+\", \"w\" or \"w+\")";
  KVIKIO_EXPECT(!flags.empty(), "Unknown file open flag: " + expected, std::invalid_argument);
  if (flags[0] == 'a') {
    KVIKIO_FAIL("Open flag 'a' isn't supported: " + expected, std::invalid_argument);
  }
  // After `r` or `w`: at most one `+` and one `b` (Python's binary mode, which every open here
  // is), in either order. Anything else (`rw+`, `rx`) would open with access the caller did
  // not ask for, so it is refused rather than ignored.
  bool plus   = false;
  bool binary = false;
  for (std::size_t i = 1; i < flags.size(); ++i) {
    bool& seen = flags[i] == '+' ? plus : binary;
    KVIKIO_EXPECT((flags[i] == '+' || flags[i] == 'b') && !seen,
                  "Unknown file open flag: " + expected,
                  std::invalid_argument);
    seen = true;
  }
  int file_flags = 0;
  switch (flags[0]) {
    case 'r': file_flags = plus ? O_RDWR : O_RDONLY; break;
    case 'w': file_flags = (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC; break;
    default: KVIKIO_FAIL("Unknown file open flag: " + expected, std::invalid_argument);
  }
  file_flags |= O_CLOEXEC;
  if (o_direct) { file_flags |= O_DIRECT; }
  return file_flags;
}

namespace detail {

void check_path(std::string const& file_path, std::string_view what)
{
  auto const nul = file_path.find('\0');
  if (nul == std::string::npos) { return; }
  // Refused, shown with the NUL spelled out: the C string the kernel would see ends there, and
  // names another file, which opening (and with "w" emptying) would hit.
  std::string shown = file_path;
  shown.replace(nul, 1, "\\0");
  throw std::invalid_argument(std::string{what} + " \"" + shown +
                              "\": embedded null byte in the path (at position " +
                              std::to_string(nul) + ")");
}

int open_regular_file(std::string const& file_path,
                      int oflags,
                      mode_t mode,
                      std::string const& flags)
{
  check_path(file_path, "Unable to open file");
  std::string const what = "Unable to open file \"" + file_path + "\" with flags \"" + flags + "\"";
  // O_NONBLOCK: opening a FIFO must not wait for its other end; cleared below, once the
  // descriptor is known to be a file, so that the open flags are the ones asked for.
  int const fd = ::open(file_path.c_str(), oflags | O_NONBLOCK, mode);
  KVIKIO_SYSCALL_CHECK(fd, what);
  struct stat st {};
  int error = ::fstat(fd, &st) == 0 ? 0 : errno;
  if (error == 0 && S_ISDIR(st.st_mode)) {
    error = EISDIR;
  } else if (error == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    error = ESPIPE;  // a FIFO, socket or character device: no offsets to read at
  }
  if (error == 0 && (oflags & O_NONBLOCK) == 0 &&
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    error = errno;
  }
  if (error != 0) {
    ::close(fd);
    detail::throw_system_error(
      error,
      __FILE__,
      __LINE__,
      what + (error == ESPIPE ? " (not a regular file or block device)" : ""));
  }
  return fd;
}

int reopen_regular_file(int fd, std::string const& file_path, int oflags, std::string const& flags)
{
  std::string const what = "Unable to open file \"" + file_path + "\" with flags \"" + flags + "\"";
  std::string const same = "/proc/self/fd/" + std::to_string(fd);
  int reopened           = ::open(same.c_str(), oflags);
  if (reopened < 0 && errno == ENOENT) { reopened = ::open(file_path.c_str(), oflags); }
  KVIKIO_SYSCALL_CHECK(reopened, what);
  struct stat first {};
  struct stat second {};
  if (::fstat(fd, &first) != 0 || ::fstat(reopened, &second) != 0 ||
      first.st_dev != second.st_dev || first.st_ino != second.st_ino) {
    ::close(reopened);
    throw std::runtime_error(what + ": the path names another file than the one opened first " +
                             "(replaced while it was opened); open it again");
  }
  return reopened;
}

}  // namespace detail

int open_fd(std::string const& file_path, std::string const& flags, bool o_direct, mode_t mode)
{
  return detail::open_regular_file(file_path, open_fd_parse_flags(flags, o_direct), mode, flags);
}

int open_flags(int fd)
{
  int const flags = ::fcntl(fd, F_GETFL);
  KVIKIO_SYSCALL_CHECK(flags, "Unable to retrieve open flags of fd " + std::to_string(fd));
  return flags;
}

std::size_t get_file_size(int file_descriptor)
{
  struct stat st {};
  KVIKIO_SYSCALL_CHECK(::fstat(file_descriptor, &st),
                       "Unable to query file size of fd " + std::to_string(file_descriptor));
  return static_cast<std::size_t>(st.st_size);
}

std::size_t get_file_size(std::string const& file_path)
{
  detail::check_path(file_path, "Unable to query file size of");
  struct stat st {};
  KVIKIO_SYSCALL_CHECK(::stat(file_path.c_str(), &st),
                       "Unable to query file size of \"" + file_path + "\"");
  return static_cast<std::size_t>(st.st_size);
}

}  // namespace kvikio
