/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_utils.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include <kvikio/detail/posix_io.hpp>
#include <kvikio/error.hpp>

namespace kvikio {

std::size_t get_file_size(int file_descriptor)
{
  struct stat st {};
  KVIKIO_SYSCALL_CHECK(::fstat(file_descriptor, &st),
                       "fstat(fd " + std::to_string(file_descriptor) + ")");
  return static_cast<std::size_t>(st.st_size);
}

std::size_t get_file_size(std::string const& file_path)
{
  struct stat st {};
  KVIKIO_SYSCALL_CHECK(::stat(file_path.c_str(), &st), "stat(\"" + file_path + "\")");
  return static_cast<std::size_t>(st.st_size);
}

std::pair<std::size_t, std::size_t> get_page_cache_info(int fd)
{
  std::size_t const size  = get_file_size(fd);
  std::size_t const page  = detail::page_size();
  std::size_t const pages = (size + page - 1) / page;
  if (pages == 0) { return {0, 0}; }
  // mincore() reports residency of a mapping's pages; mapping reads nothing in.
  void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) {
    detail::throw_system_error(errno, __FILE__, __LINE__, "mmap for mincore");
  }
  std::vector<unsigned char> resident(pages);
  int const r = ::mincore(mapping, size, resident.data());
  int const e = errno;
  ::munmap(mapping, size);
  if (r != 0) { detail::throw_system_error(e, __FILE__, __LINE__, "mincore"); }
  std::size_t cached = 0;
  for (auto v : resident) {
    cached += v & 1U;
  }
  return {cached, pages};
}

std::pair<std::size_t, std::size_t> get_page_cache_info(std::string const& file_path)
{
  int const fd = ::open(file_path.c_str(), O_RDONLY | O_CLOEXEC);
  KVIKIO_SYSCALL_CHECK(fd, "open(\"" + file_path + "\")");
  try {
    auto info = get_page_cache_info(fd);
    ::close(fd);
    return info;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

bool clear_page_cache(bool reclaim_dentries_and_inodes, bool clear_dirty_pages)
{
  if (clear_dirty_pages) { ::sync(); }
  std::FILE* f = std::fopen("/proc/sys/vm/drop_caches", "we");
  if (f == nullptr) { return false; }
  bool const ok = std::fputs(reclaim_dentries_and_inodes ? "3" : "1", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

void drop_file_page_cache(int fd)
{
  KVIKIO_SYSCALL_CHECK(::fdatasync(fd), "fdatasync before dropping the page cache");
  int const r = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (r != 0) { detail::throw_system_error(r, __FILE__, __LINE__, "posix_fadvise(DONTNEED)"); }
}

}  // namespace kvikio
