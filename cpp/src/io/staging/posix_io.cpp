/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/posix_io.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>

#include <kvikio/error.hpp>
#include <kvikio/utils.hpp>

#include "io/mover/mover.hpp"
#include "io/staging/host_split.hpp"

namespace kvikio::detail {
namespace {

// An error of the POSIX mover in the words of posix_host_io's contract, followed by the call.
[[noreturn]] void rethrow_in_contract_words(bool read)
{
  try {
    throw;
  } catch (EndOfFileError const&) {
    throw;
  } catch (std::system_error const& e) {
    std::string const words = e.code().value() == EBADF
                                ? "POSIX error: Operation not permitted"
                                : std::string{"POSIX error on "} + (read ? "pread" : "pwrite") +
                                    ": " + std::strerror(e.code().value());
    throw CUfileException(words + " [KvikIO: " + e.what() + "]");
  }
}

}  // namespace

std::size_t posix_host_transfer(bool read,
                                bool partial,
                                int fd_direct_off,
                                void* buf,
                                std::size_t count,
                                std::size_t offset,
                                int fd_direct_on)
{
  auto* const bytes = static_cast<std::byte*>(buf);
  try {
    std::size_t const page = get_page_size();
    if (partial && (fd_direct_on == -1 || offset % page != 0 || count < page)) {
      // The first piece of the split: the unaligned head, or everything through the page cache.
      std::size_t const first =
        fd_direct_on == -1 ? count : std::min(count, (page - offset % page) % page);
      std::size_t const moved =
        transfer_once(read, fd_direct_off, bytes, first == 0 ? count : first, offset);
      if (moved == 0 && count > 0) {
        if (read) { throw_read_past_end(fd_direct_off, count, offset); }
        throw_system_error(EIO, __FILE__, __LINE__, "pwrite wrote nothing");
      }
      return moved;
    }
    // A partial transfer from an aligned offset moves the whole pages (the piece the split makes).
    std::size_t const size = partial ? count / page * page : count;
    LocalFile const file{fd_direct_off, fd_direct_on, false, nullptr, 1};
    return host_io(posix_mover(), read, file, {bytes, size, offset});
  } catch (...) {
    rethrow_in_contract_words(read);
  }
}

}  // namespace kvikio::detail
