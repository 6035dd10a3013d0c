/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file io/staging/host_split.hpp
 * @brief The O_DIRECT split of a host-memory transfer, for every mover: the page-aligned middle
 * goes through the O_DIRECT descriptor (straight from the caller's buffer when that is page
 * aligned, else through a page-aligned buffer of this thread), the unaligned head and tail
 * through the page-cache one.
 */

#include <cstddef>

#include "io/mover/mover.hpp"

namespace kvikio::detail {

/**
 * @brief Moves exactly the bytes of `piece` between `file` and host memory with `mover`, split
 * as above where `file.direct()` (O_DIRECT refused for a part: that part goes through the page
 * cache).
 * @return `piece.size`.
 * @throws kvikio::detail::EndOfFileError for a read past the end; kvikio::GenericSystemError;
 * std::invalid_argument for a null `piece.buf` with a nonzero size.
 */
std::size_t host_io(ByteMover& mover, bool read, LocalFile const& file, HostPiece piece);

/// @brief This thread's page-aligned buffer for O_DIRECT transfers of unaligned user buffers;
/// `size` receives its size (the bounce buffer size rounded to whole pages).
std::byte* aligned_scratch(std::size_t& size);

}  // namespace kvikio::detail
