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
#include <limits>

#include <cuda.h>

#include "io/mover/mover.hpp"

namespace kvikio::detail {

/**
 * @brief Whether the io_uring backend can run on this thread: probed once per process (a ring is
 * set up and torn down), then this thread's ring is set up at its first use. Where either is
 * refused (`io_uring_setup`: an old kernel, seccomp, `kernel.io_uring_disabled`, a limit), one
 * line is logged (a warning if io_uring was asked for, information under `auto`) and local I/O
 * goes through POSIX.
 */
[[nodiscard]] bool io_uring_usable() noexcept;

/**
 * @brief Whether the process's probe found io_uring (set up once, logged once when refused),
 * without setting up a ring for this thread: what the choice of backend asks, on the calling
 * thread, for transfers that pool threads will run (each falls back to system calls where its
 * own ring is refused).
 */
[[nodiscard]] bool io_uring_available() noexcept;

/**
 * @brief The threads whose rings (and kernel workers) share the machine's cores: those of every
 * pool of the process (detail::threads_of_live_pools()), and at least those of the pool running
 * the transfer (`pool_threads`; 0: the global pool's setting); at least one.
 */
[[nodiscard]] std::size_t threads_sharing_the_cores(std::size_t pool_threads);

/**
 * @brief The io_uring mover: this thread's ring (io_uring_transfer_all), device reads of
 * page-cache descriptors staged by io_uring_read_to_device(); a thread whose ring is refused
 * moves its bytes by system calls. One object for the process.
 */
ByteMover& io_uring_mover() noexcept;

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
 * @brief The most kernel workers each thread's ring may run for file requests
 * (`IORING_REGISTER_IOWQ_MAX_WORKERS`, bounded and unbounded workers); 0 (default): the thread's
 * share of the cores, cores / the threads of the pool that runs the transfer (its
 * `pool_threads`; `thread_pool_nthreads()` where none is given), at least 1, so that the rings of
 * the pool together run about one worker per core. Applied at each ring's next transfer; for
 * benchmarks and tests.
 */
void set_io_uring_max_workers(unsigned workers) noexcept;
[[nodiscard]] unsigned io_uring_max_workers() noexcept;

/**
 * @brief Moves exactly `size` bytes at `offset` through `fd` with this thread's ring: pieces of
 * io_uring_piece_size(), up to io_uring_queue_depth() in flight. Reads of a page-cache
 * descriptor (`buffered`) go to kernel workers (`IOSQE_ASYNC`; they would otherwise be copied
 * inline, one at a time, by the submitting thread); writes are issued inline: buffered writes to
 * one file serialise on its inode (the kernel even hashes them onto one worker), and a worker's
 * hand-off makes them slower than pwrite. An O_DIRECT descriptor's requests
 * are issued inline (the block layer completes them on its own). Short transfers are
 * resubmitted for the rest; `EINTR`/`EAGAIN`/`ECANCELED` completions are retried (the kernel
 * cancels work whose worker it could not create, under signals). `pool_threads`: the threads of
 * the pool this transfer is part of (0: `thread_pool_nthreads()`), see set_io_uring_max_workers().
 * @throws kvikio::detail::EndOfFileError for a read past the end of the file;
 * kvikio::GenericSystemError for a failed request. Either only once every request in flight has
 * ended (none outlives the call).
 */
void io_uring_transfer_all(bool read,
                           int fd,
                           std::byte* buf,
                           std::size_t size,
                           std::size_t offset,
                           bool buffered            = true,
                           std::size_t pool_threads = 0);

/**
 * @brief Pool buffers of staging per device transfer: the bytes of io_uring_queue_depth()
 * requests of io_uring_piece_size() shared among the `pool_threads` threads of the pool (0:
 * `thread_pool_nthreads()`; ceil of a thread's share
 * over `KVIKIO_BOUNCE_BUFFER_SIZE`, at least one buffer): one thread keeps as much in flight as
 * the shape allows, many threads no more than one buffer each; and no more than the
 * `transfer_bytes` of the transfer take (pinned memory is held by the pool once used). Each buffer
 * is cut into `KVIKIO_NUM_BOUNCE_BUFFERS` slots.
 */
[[nodiscard]] std::size_t io_uring_staging_buffers(
  std::size_t pool_threads   = 0,
  std::size_t transfer_bytes = std::numeric_limits<std::size_t>::max());

/**
 * @brief Reads `size` bytes at `offset` of `fd` (buffered) into device memory `dev`, staged in
 * a BounceBufferRing of io_uring_staging_buffers(): the requests of all its slots are in flight
 * at once (kernel workers fill them), each slot is copied on `stream` as soon as it is full, in
 * order, and refilled once its copy is done. Slots go to the kernel as registered buffers
 * (fixed reads) where this thread's ring can register them. Returns `size` once every copy has
 * completed.
 * @throws as io_uring_transfer_all(), once no request is in flight and no copy pending.
 */
std::size_t io_uring_read_to_device(int fd,
                                    CUdeviceptr dev,
                                    std::size_t size,
                                    std::size_t offset,
                                    CUstream stream,
                                    std::size_t pool_threads = 0);

/**
 * @brief As above for the chunks of `cursor` (the transfer starts at `offset` of `fd` and at
 * `dev`), one slot each, taken as slots come free, until none is left; several threads may share
 * the cursor. Returns the bytes this thread moved.
 */
std::size_t io_uring_read_to_device(int fd,
                                    CUdeviceptr dev,
                                    std::size_t offset,
                                    ChunkCursor& cursor,
                                    CUstream stream,
                                    std::size_t pool_threads = 0);

/**
 * @brief For tests and benchmarks: whether staging slots go to the kernel as registered buffers
 * (`IORING_REGISTER_BUFFERS`, fixed reads; default on).
 */
void set_io_uring_registered_buffers(bool on) noexcept;

/// @brief Staging buffers this thread's ring has registered (0 where registration is refused).
[[nodiscard]] std::size_t io_uring_registered_buffer_count() noexcept;

}  // namespace kvikio::detail
