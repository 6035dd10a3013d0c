/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_utils.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
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
#include "open_file.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): for posix_spawn

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
  // Shown with the NUL spelled out: the C string the kernel would see ends there, and names
  // another file (upstream opened, and with "w" emptied, that one).
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

namespace {

// The pages of [start, end) of `fd` that are in the page cache, looked at through mappings of at
// most `window` bytes at a time (mincore() reports residency of a mapping's pages; mapping
// reads nothing in).
std::size_t count_resident(int fd, std::size_t start, std::size_t end)
{
  constexpr std::size_t window = std::size_t{1} << 30;
  std::size_t const page       = get_page_size();
  std::vector<unsigned char> resident;
  std::size_t cached = 0;
  for (std::size_t at = start; at < end; at += window) {
    std::size_t const span = std::min(window, end - at);
    void* mapping          = ::mmap(nullptr, span, PROT_READ, MAP_SHARED, fd, convert_size2off(at));
    KVIKIO_SYSCALL_CHECK(mapping, "mmap for mincore failed", MAP_FAILED);
    detail::ScopeExit unmap{[&] { ::munmap(mapping, span); }};
    resident.resize((span + page - 1) / page);
    KVIKIO_SYSCALL_CHECK(::mincore(mapping, span, resident.data()), "mincore failed");
    cached += static_cast<std::size_t>(std::count_if(
      resident.begin(), resident.end(), [](unsigned char v) { return (v & 1U) != 0; }));
  }
  return cached;
}

}  // namespace

std::pair<std::size_t, std::size_t> get_page_cache_info(int fd,
                                                        std::size_t offset,
                                                        std::size_t length)
{
  std::size_t const page      = get_page_size();
  std::size_t const file_size = get_file_size(fd);
  if (offset >= file_size) { return {0, 0}; }
  std::size_t const start = detail::align_down(offset, page);
  std::size_t const end = length == 0 || length >= file_size - offset ? file_size : offset + length;
  std::size_t const pages = (end - start + page - 1) / page;
  // Only the file's data is looked at (SEEK_DATA, SEEK_HOLE): the pages of its holes count as not
  // cached, so that a sparse file costs time and memory by its data, not its apparent size.
  std::size_t cached  = 0;
  std::size_t counted = start;  // pages before this are counted
  while (counted < end) {
    off_t const data = ::lseek(fd, convert_size2off(counted), SEEK_DATA);
    if (data < 0 && errno == ENXIO) { break; }  // no data from here on
    KVIKIO_SYSCALL_CHECK(data, "lseek(SEEK_DATA) failed (fd " + std::to_string(fd) + ")");
    auto const from = std::max(counted, detail::align_down(static_cast<std::size_t>(data), page));
    if (from >= end) { break; }
    off_t const hole = ::lseek(fd, data, SEEK_HOLE);
    KVIKIO_SYSCALL_CHECK(hole, "lseek(SEEK_HOLE) failed (fd " + std::to_string(fd) + ")");
    auto const to = std::min(end, detail::align_up(static_cast<std::size_t>(hole), page));
    if (to <= from) { break; }  // the file shrank meanwhile
    cached += count_resident(fd, from, to);
    counted = to;
  }
  return {cached, pages};
}

std::pair<std::size_t, std::size_t> get_page_cache_info(std::string const& file_path,
                                                        std::size_t offset,
                                                        std::size_t length)
{
  FileWrapper const file{file_path, "r", false, 0};
  return get_page_cache_info(file.fd(), offset, length);
}

void drop_file_page_cache(int fd, std::size_t offset, std::size_t length, bool sync_first)
{
  if (sync_first) {
    KVIKIO_SYSCALL_CHECK(::fdatasync(fd), "fdatasync failed (fd " + std::to_string(fd) + ")");
  }
  int const err =
    ::posix_fadvise(fd, convert_size2off(offset), convert_size2off(length), POSIX_FADV_DONTNEED);
  if (err != 0) {
    detail::throw_system_error(
      err, __FILE__, __LINE__, "posix_fadvise failed (fd " + std::to_string(fd) + ")");
  }
}

void drop_file_page_cache(std::string const& file_path,
                          std::size_t offset,
                          std::size_t length,
                          bool sync_first)
{
  FileWrapper const file{file_path, "r", false, 0};
  drop_file_page_cache(file.fd(), offset, length, sync_first);
}

namespace {

// Runs `argv` with no input or output and no shell; true if it exits with 0.
bool run_quietly(std::vector<std::string> args) noexcept
{
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) { return false; }
  for (int fd : {0, 1, 2}) {
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  pid_t pid{};
  int const spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) { return false; }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) { return false; }
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

bool drop_system_page_cache(bool reclaim_dentries_and_inodes, bool sync_first)
{
  if (sync_first) { ::sync(); }
  char const* value = reclaim_dentries_and_inodes ? "3" : "1";
  if (std::FILE* f = std::fopen("/proc/sys/vm/drop_caches", "we"); f != nullptr) {
    bool const written = std::fputs(value, f) >= 0;
    if (std::fclose(f) == 0 && written) { return true; }
  }
  // Not root: sudo may allow it without a password (-n: never ask, so never hang).
  return run_quietly({"sudo", "-n", "/sbin/sysctl", std::string{"vm.drop_caches="} + value});
}

bool clear_page_cache(bool reclaim_dentries_and_inodes, bool clear_dirty_pages)
{
  return drop_system_page_cache(reclaim_dentries_and_inodes, clear_dirty_pages);
}

namespace {

// "nvme<digits>n<digits>": an NVMe namespace, whose controller its siblings share.
bool is_nvme_namespace(std::string const& name)
{
  auto digits = [&](std::size_t& i) {
    std::size_t const start = i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) != 0) {
      ++i;
    }
    return i > start;
  };
  if (name.rfind("nvme", 0) != 0) { return false; }
  std::size_t i = 4;
  if (!digits(i) || i >= name.size() || name[i] != 'n') { return false; }
  ++i;
  return digits(i) && i == name.size();
}

}  // namespace

BlockDeviceInfo get_block_device_info(std::string const& file_path)
{
  static std::mutex mutex;
  static std::map<std::string, BlockDeviceInfo> cache;
  {
    std::lock_guard const lock{mutex};
    if (auto it = cache.find(file_path); it != cache.end()) { return it->second; }
  }
  struct stat st {};
  KVIKIO_SYSCALL_CHECK(::stat(file_path.c_str(), &st), "stat(\"" + file_path + "\") failed");
  std::string const sysfs =
    "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  KVIKIO_SYSCALL_CHECK(::access(sysfs.c_str(), F_OK),
                       "sysfs path \"" + sysfs + "\" for file \"" + file_path +
                         "\" does not exist. The file may reside on a virtual file system "
                         "(overlayfs, tmpfs) with no backing block device.");
  std::error_code ec;
  std::filesystem::path device = std::filesystem::canonical(sysfs, ec);
  KVIKIO_EXPECT(!ec, "cannot resolve " + sysfs + ": " + ec.message());
  // A partition's directory sits inside its disk's.
  if (std::filesystem::exists(device / "partition")) { device = device.parent_path(); }
  std::string name = device.filename().string();
  if (is_nvme_namespace(name)) {
    device = device.parent_path();
    name   = device.filename().string();
  }
  std::ifstream dev_file{device / "dev"};
  KVIKIO_EXPECT(dev_file.good(),
                "Block device file cannot be opened: " + (device / "dev").string());
  unsigned dev_major{};
  unsigned dev_minor{};
  char colon{};
  dev_file >> dev_major >> colon >> dev_minor;
  KVIKIO_EXPECT(!dev_file.fail() && colon == ':',
                "Parsing failed: " + (device / "dev").string() + " does not hold major:minor");
  BlockDeviceInfo info{makedev(dev_major, dev_minor), dev_major, dev_minor, std::move(name)};
  std::lock_guard const lock{mutex};
  cache.try_emplace(file_path, info);
  return info;
}

}  // namespace kvikio
