/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/mover/mover.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>

namespace kvikio::detail {
namespace {

std::string file_size_text(int fd)
{
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? std::to_string(st.st_size) : std::string{"unknown"};
}

class PosixMover final : public ByteMover {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "posix"; }
  void move_all(bool read, LocalFile const& file, bool buffered, HostPiece piece) override
  {
    move_by_syscalls(read, file.descriptor(buffered), piece.buf, piece.size, piece.offset);
  }
};

}  // namespace

ByteMover& posix_mover() noexcept
{
  static detail::BuiltOnce<PosixMover> mover;  // never destroyed: used until exit
  return mover.get([] { return new PosixMover(); });
}

std::string fd_for_message(int fd)
{
  int const error  = errno;  // the caller's, which it may not have read yet
  std::string text = "fd " + std::to_string(fd);
  char target[4096];
  std::string const link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t const n        = ::readlink(link.c_str(), target, sizeof(target));
  if (n > 0 && static_cast<std::size_t>(n) < sizeof(target)) {
    text += " (" + std::string{target, static_cast<std::size_t>(n)} + ")";
  }
  errno = error;
  return text;
}

void throw_read_past_end(int fd, std::size_t size, std::size_t offset)
{
  throw EndOfFileError(
    "POSIX error on pread: EOF (KvikIO: read past the end of the file: " + std::to_string(size) +
    " bytes at offset " + std::to_string(offset) + " requested, " + fd_for_message(fd) + " has " +
    file_size_text(fd) + " bytes)");
}

std::size_t transfer_once(bool read, int fd, void* buf, std::size_t size, std::size_t offset)
{
  while (true) {
    ssize_t const n = read ? ::pread(fd, buf, size, static_cast<off_t>(offset))
                           : ::pwrite(fd, buf, size, static_cast<off_t>(offset));
    if (n >= 0) { return static_cast<std::size_t>(n); }
    if (errno == EINTR) { continue; }
    throw_system_error(errno,
                       __FILE__,
                       __LINE__,
                       std::string{read ? "pread" : "pwrite"} + "(" + fd_for_message(fd) + ", " +
                         std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                         ") failed");
  }
}

void move_by_syscalls(bool read, int fd, std::byte* buf, std::size_t size, std::size_t offset)
{
  std::size_t done = 0;
  while (done < size) {
    std::size_t const n = transfer_once(read, fd, buf + done, size - done, offset + done);
    if (n == 0) {
      if (read) { throw_read_past_end(fd, size, offset); }
      throw_system_error(EIO, __FILE__, __LINE__, "pwrite wrote nothing");
    }
    done += n;
  }
}

}  // namespace kvikio::detail
