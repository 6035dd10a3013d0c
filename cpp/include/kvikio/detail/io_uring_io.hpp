/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file io_uring_io.hpp
 * @brief The io_uring local backend (`KVIKIO_LOCAL_IO_BACKEND=io_uring`): buffered transfers
 * through a ring of the calling thread, in pieces that kernel workers copy at once.
 */

#include <cstddef>

#include <cuda.h>

#include <kvikio/bounce_buffer.hpp>

namespace kvikio::detail {

/**
 * @brief Whether the io_uring backend can run on this thread: probed once per process (a ring is
 * set up and torn down), then this thread's ring is set up at its first use. Where either is
 * refused (`io_uring_setup`: an old kernel, seccomp, `kernel.io_uring_disabled`, a limit), one
 * warning is logged and local I/O goes through POSIX.
 */
[[nodiscard]] bool io_uring_usable() noexcept;

/**
 * @brief Whether this thread's local I/O goes through io_uring: `KVIKIO_LOCAL_IO_BACKEND` asks
 * for it and io_uring_usable(). The one test every local I/O path makes.
 */
[[nodiscard]] bool io_uring_selected();

/**
 * @brief For tests: makes the probe and the rings of threads that have none yet fail with
 * `errno_value` as `io_uring_setup` would (0: the real call); `forget_probe`: probe again.
 */
void override_io_uring_setup(int errno_value, bool forget_probe = true) noexcept;

/// @brief The most requests a thread's ring holds in flight.
inline constexpr unsigned io_uring_max_depth = 256;

/**
 * @brief The shape of requests: a transfer is cut into pieces of `piece_size` bytes (default
 * 1 MiB), at most `depth` in flight per thread (default 64, at most io_uring_max_depth). Read at
 * each transfer; for benchmarks and tests.
 * @throws std::invalid_argument for a size outside [1, 1 GiB] or a depth outside
 * [1, io_uring_max_depth].
 */
void set_io_uring_request_shape(std::size_t piece_size, unsigned depth);
[[nodiscard]] std::size_t io_uring_piece_size() noexcept;
[[nodiscard]] unsigned io_uring_queue_depth() noexcept;

/**
 * @brief Moves exactly `size` bytes at `offset` through `fd` with this thread's ring: pieces of
 * io_uring_piece_size(), up to io_uring_queue_depth() in flight. `buffered` (a page-cache
 * descriptor): each request goes to a kernel worker (`IOSQE_ASYNC`; buffered requests would
 * otherwise be copied inline, one at a time, by the submitting thread); an O_DIRECT descriptor's
 * requests are issued inline (the block layer completes them on its own). Short transfers are
 * resubmitted for the rest; `EINTR`/`EAGAIN` completions are retried.
 * @throws std::out_of_range for a read past the end of the file; kvikio::GenericSystemError for
 * a failed request. Either only once every request in flight has ended (none outlives the call).
 */
void io_uring_transfer_all(
  bool read, int fd, std::byte* buf, std::size_t size, std::size_t offset, bool buffered = true);

/**
 * @brief Reads `size` bytes at `offset` of `fd` (buffered) into device memory `dev` through
 * `ring`: the requests of all its slots are in flight at once (kernel workers fill them), and
 * each slot is copied on `stream` as soon as it is full, in order; a slot is refilled once its
 * copy is done. Returns `size` once every copy has completed.
 * @throws as io_uring_transfer_all(), once no request is in flight and no copy pending.
 */
std::size_t io_uring_read_to_device(int fd,
                                    CUdeviceptr dev,
                                    std::size_t size,
                                    std::size_t offset,
                                    BounceBufferRing<>& ring,
                                    CUstream stream);

}  // namespace kvikio::detail
