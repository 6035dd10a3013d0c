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
 * @brief Moves exactly `size` bytes at `offset` between `file` and host memory `buf` with
 * `mover`, split as above where `file.fd_direct` is open (O_DIRECT refused for a piece: that
 * piece goes through the page cache).
 * @return `size`.
 * @throws kvikio::detail::EndOfFileError for a read past the end; kvikio::GenericSystemError;
 * std::invalid_argument for a null `buf` with a nonzero `size`.
 */
std::size_t host_io(ByteMover& mover,
                    bool read,
                    LocalFile const& file,
                    std::byte* buf,
                    std::size_t size,
                    std::size_t offset);

/// @brief This thread's page-aligned buffer for O_DIRECT transfers of unaligned user buffers;
/// `size` receives its size (the bounce buffer size rounded to whole pages).
std::byte* aligned_scratch(std::size_t& size);

}  // namespace kvikio::detail
