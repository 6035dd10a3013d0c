/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/posix_io.hpp
 * @brief The host-memory transfer with opportunistic O_DIRECT (posix_host_io), over the
 * library's one O_DIRECT split of host transfers.
 */

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {

/// @brief The direction of a posix_host_io() transfer.
enum class IOOperationType : std::uint8_t {
  READ,   ///< `pread`
  WRITE,  ///< `pwrite`
};

/// @brief Whether posix_host_io() returns after its first system call that moved bytes (YES) or
/// moves all of them (NO).
enum class PartialIO : std::uint8_t {
  YES,
  NO,
};

/// @brief What posix_host_io() runs: `read` for IOOperationType::READ, `partial` for
/// PartialIO::YES.
std::size_t posix_host_transfer(bool read,
                                bool partial,
                                int fd_direct_off,
                                void* buf,
                                std::size_t count,
                                std::size_t offset,
                                int fd_direct_on);

/**
 * @brief Host-memory transfer with opportunistic O_DIRECT, one piece at a time: with
 * `fd_direct_on` -1 everything goes through `fd_direct_off` (the page cache); otherwise an
 * unaligned head up to the next page boundary and a tail shorter than a page go through
 * `fd_direct_off`, and whole pages at aligned offsets through `fd_direct_on` (straight from
 * `buf` when it is page aligned, else through a page-aligned buffer of this thread).
 * @return The bytes moved: all `count` with PartialIO::NO, those of the first call with YES.
 * @throws kvikio::CUfileException in fixed words ("POSIX error: Operation not permitted"
 * for a bad descriptor, "POSIX error on pread: EOF", "POSIX error on pread: <reason>"), followed
 * by the call that failed.
 */
template <IOOperationType Operation, PartialIO PartialIOStatus>
ssize_t posix_host_io(
  int fd_direct_off, void const* buf, std::size_t count, std::size_t offset, int fd_direct_on = -1)
{
  return static_cast<ssize_t>(posix_host_transfer(Operation == IOOperationType::READ,
                                                  PartialIOStatus == PartialIO::YES,
                                                  fd_direct_off,
                                                  const_cast<void*>(buf),
                                                  count,
                                                  offset,
                                                  fd_direct_on));
}

}  // namespace kvikio::detail
