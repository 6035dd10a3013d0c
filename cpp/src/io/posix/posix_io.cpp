/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/posix_io.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

// transfer_once() with upstream's exception: a CUfileException in its words, then the call.
std::size_t transfer_once_as_upstream(
  bool read, int fd, void* buf, std::size_t size, std::size_t offset)
{
  try {
    return transfer_once(read, fd, buf, size, offset);
  } catch (std::system_error const& e) {
    std::string const words = e.code().value() == EBADF
                                ? "POSIX error: Operation not permitted"
                                : std::string{"POSIX error on "} + (read ? "pread" : "pwrite") +
                                    ": " + std::strerror(e.code().value());
    throw CUfileException(words + " [KvikIO: " + e.what() + "]");
  }
}

class PosixBackend final : public StagedBackend {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "posix"; }
  [[nodiscard]] bool deep_queue() const noexcept override { return false; }

 protected:
  void transfer_all(bool read,
                    LocalFile const& file,
                    bool buffered,
                    std::byte* buf,
                    std::size_t size,
                    std::size_t offset) override
  {
    transfer_by_syscalls(read, descriptor(file, buffered), buf, size, offset);
  }
};

}  // namespace

StagedBackend& posix_backend() noexcept
{
  static detail::BuiltOnce<PosixBackend> backend;  // never destroyed: used until exit
  return backend.get([] { return new PosixBackend(); });
}

std::size_t posix_host_transfer(bool read,
                                bool partial,
                                int fd_direct_off,
                                void* buf,
                                std::size_t count,
                                std::size_t offset,
                                int fd_direct_on)
{
  auto* bytes            = static_cast<std::byte*>(buf);
  std::size_t const page = get_page_size();
  std::size_t done       = 0;
  while (done < count) {
    std::size_t const pos  = offset + done;
    std::size_t const left = count - done;
    std::size_t moved      = 0;
    if (fd_direct_on == -1 || left < page) {
      moved = transfer_once_as_upstream(read, fd_direct_off, bytes + done, left, pos);
    } else if (!is_aligned(pos, page)) {
      std::size_t const head = std::min(left, (pos / page + 1) * page - pos);
      moved = transfer_once_as_upstream(read, fd_direct_off, bytes + done, head, pos);
    } else if (is_aligned(static_cast<void*>(bytes + done), page)) {
      moved = transfer_once_as_upstream(read, fd_direct_on, bytes + done, left / page * page, pos);
    } else {
      std::size_t scratch_size = 0;
      std::byte* scratch       = aligned_scratch(scratch_size);
      std::size_t const n      = std::min(left / page * page, scratch_size);
      if (!read) { std::memcpy(scratch, bytes + done, n); }
      moved = transfer_once_as_upstream(read, fd_direct_on, scratch, n, pos);
      if (read) { std::memcpy(bytes + done, scratch, moved); }
    }
    if (moved == 0) {
      if (read) { throw_read_past_end(fd_direct_off, count, offset); }
      throw CUfileException("POSIX error on pwrite: nothing written [KvikIO: " +
                            std::to_string(left) + " bytes at offset " + std::to_string(pos) + "]");
    }
    if (partial) { return moved; }
    done += moved;
  }
  return count;
}

}  // namespace kvikio::detail
