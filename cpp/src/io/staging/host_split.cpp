/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/staging/host_split.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

// The page-aligned middle `piece` through the O_DIRECT descriptor. Returns how many bytes went
// through it; less than the piece's size when the file ends (reads) or O_DIRECT is refused.
std::size_t move_direct(ByteMover& mover, bool read, LocalFile const& file, HostPiece piece)
{
  std::byte* const buf     = piece.buf;
  std::size_t const length = piece.size;
  std::size_t const offset = piece.offset;
  if (length == 0) { return 0; }
  if (is_aligned(reinterpret_cast<std::uintptr_t>(buf), get_page_size())) {
    try {  // in one go: a mover that keeps many requests in flight keeps them all busy
      mover.move_all(read, file, false, piece);
      return length;
    } catch (GenericSystemError const& e) {
      if (e.code().value() == EINVAL) { return 0; }  // refused here: the caller goes buffered
      throw;
    } catch (EndOfFileError const&) {
      return 0;  // the file ends inside: the buffered path finds where, and says so
    }
  }
  std::size_t scratch_size = 0;
  std::byte* const scratch = aligned_scratch(scratch_size);
  std::size_t done         = 0;
  while (done < length) {
    std::size_t const n = std::min(length - done, scratch_size);
    if (!read) { std::memcpy(scratch, buf + done, n); }
    std::size_t got = 0;
    try {
      got = transfer_once(read, file.fd_direct, scratch, n, offset + done);
    } catch (GenericSystemError const& e) {
      if (e.code().value() == EINVAL) { return done; }  // refused here: the caller goes buffered
      throw;
    }
    if (read) { std::memcpy(buf + done, scratch, got); }
    done += got;
    if (got < n) { break; }  // end of file, or a partial transfer: finish buffered
  }
  return done;
}

}  // namespace

std::byte* aligned_scratch(std::size_t& size)
{
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  thread_local std::unique_ptr<std::byte, Free> buffer;
  thread_local std::size_t buffer_size = 0;
  std::size_t const wanted = detail::staging_buffer_size() / get_page_size() * get_page_size();
  if (buffer_size != wanted) {
    buffer.reset(static_cast<std::byte*>(std::aligned_alloc(get_page_size(), wanted)));
    if (!buffer) { throw std::bad_alloc(); }
    buffer_size = wanted;
  }
  size = buffer_size;
  return buffer.get();
}

std::size_t host_io(ByteMover& mover, bool read, LocalFile const& file, HostPiece piece)
{
  std::byte* const buf     = piece.buf;
  std::size_t const size   = piece.size;
  std::size_t const offset = piece.offset;
  if (size == 0) { return 0; }
  KVIKIO_EXPECT(buf != nullptr,
                "null buffer for a transfer of " + std::to_string(size) + " bytes",
                std::invalid_argument);
  auto const buffered = [&](std::byte* at, std::size_t n, std::size_t where) {
    if (n > 0) { mover.move_all(read, file, true, {at, n, where}); }
  };
  if (!file.direct()) {
    buffered(buf, size, offset);
    return size;
  }
  std::size_t const page = get_page_size();
  // Head: up to the first page boundary of the file.
  std::size_t const head = std::min(size, (page - offset % page) % page);
  buffered(buf, head, offset);
  std::size_t pos = head;
  // Middle: whole pages, direct.
  std::size_t const middle = (size - pos) / page * page;
  pos += move_direct(mover, read, file, {buf + pos, middle, offset + pos});
  // Tail (and whatever the direct part left): buffered, or for reads a whole page, direct.
  std::size_t const rest = size - pos;
  if (read && file.overread && rest > 0 && rest < page && is_aligned(offset + pos, page)) {
    std::size_t scratch_size = 0;
    std::byte* scratch       = aligned_scratch(scratch_size);
    std::size_t got          = 0;
    try {
      got = transfer_once(read, file.fd_direct, scratch, page, offset + pos);
    } catch (GenericSystemError const& e) {
      if (e.code().value() != EINVAL) { throw; }
    }
    std::size_t const used = std::min(got, rest);
    std::memcpy(buf + pos, scratch, used);
    pos += used;
  }
  buffered(buf + pos, size - pos, offset + pos);
  return size;
}

}  // namespace kvikio::detail
