/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_utils.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/utils.hpp>

extern char** environ;  // NOLINT(readability-redundant-declaration): for posix_spawn

namespace kvikio {

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

}  // namespace kvikio
