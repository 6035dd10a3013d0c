/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstddef>

#include "core/in_flight.hpp"
#include "io/mover/mover.hpp"

namespace kvikio::detail {

// What the operations of a FileHandle share with it, at an address that moves of the handle do
// not change: the leases on its descriptors and its size.
struct FileState {
  InFlight in_flight;
  std::atomic<std::size_t> nbytes{0};  // size at open, grown by writes through the handle

  void grew_to(std::size_t end) noexcept
  {
    std::size_t current = nbytes.load();
    while (current < end && !nbytes.compare_exchange_weak(current, end)) {}
  }

  /// `write()` (returning the bytes written) on `fd`, the size grown by what it wrote; a write
  /// that fails may have written a part: the size is then what the file has grown to.
  template <typename Write>
  std::size_t counted_write(int fd, std::size_t file_offset, Write&& write)
  {
    try {
      std::size_t const written = write();
      grew_to(file_offset + written);
      return written;
    } catch (...) {
      struct stat st {};
      if (::fstat(fd, &st) == 0) { grew_to(static_cast<std::size_t>(st.st_size)); }
      throw;
    }
  }
};

// Host memory on the calling thread, through `mover` (a write grows the size `state` knows).
std::size_t host_transfer(
  ByteMover& mover, bool reading, FileState& state, LocalFile const& file, HostPiece piece);

}  // namespace kvikio::detail
