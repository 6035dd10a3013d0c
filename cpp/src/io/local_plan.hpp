/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file io/local_plan.hpp
 * @brief The plan of a local transfer: the one place that decides, for a `FileHandle` call and
 * before its tasks are made, which byte mover moves the bytes and how the call is cut into tasks.
 * `FileHandle` executes the plan; the movers below never steer it.
 */

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <kvikio/defaults.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include "io/mover/mover.hpp"
#include "io/staging/device_staging.hpp"

namespace kvikio::detail {

/// @brief How a call's bytes are cut into work.
enum class LocalStrategy {
  on_caller,      ///< all of it on the calling thread, the future ready on return
  ranges,         ///< tasks of LocalPlan::task_size bytes (aligned to LocalPlan::alignment)
  shared_chunks,  ///< LocalPlan::workers pool threads each take the next slot-sized chunk
  overlapped,     ///< one task that may leave its copy to its worker (device reads of a slot)
};

/// @brief What a call does (plan_local_transfer()).
struct LocalPlan {
  LocalStrategy strategy{LocalStrategy::on_caller};
  ByteMover* mover{nullptr};  ///< the bytes' mover; nullptr: cuFile moves them (device memory)
  std::size_t task_size{0};   ///< ranges: bytes per task
  std::size_t alignment{0};   ///< ranges: task boundaries on this file alignment (0: none)
  std::size_t workers{0};     ///< shared_chunks: pool threads that take chunks
  /// @brief shared_chunks: each worker's staging ring (empty: staging_ring_shape(), the settings')
  std::optional<StagingRingShape> chunks;
  /// @brief ranges: a read of one task the caller could have run: its task reports its end to
  /// the caller's next call (handing_off(), core/waiting_callers.hpp)
  bool marks_hand_off{false};
  /// @brief The mover's name ("posix", "io_uring", "cufile").
  [[nodiscard]] std::string_view mover_name() const noexcept
  {
    return mover == nullptr ? std::string_view{"cufile"} : mover->name();
  }
};

/**
 * @brief The plan of reading (`reading`) or writing `size` bytes (at least 1) of `file` from or
 * into host memory (`host_memory`) or device memory, with `pool`:
 * - the mover: cuFile for device memory where it serves the file, io_uring where
 *   io_uring_selected(), else POSIX;
 * - host memory: on the caller below `gds_threshold` bytes, and for a read of at most one task
 *   while the pool is backlogged or where the calling thread waits for each of its reads
 *   (caller_waits_for_each_read(); not through io_uring, whose deep queue stays on the pool's
 *   threads, nor O_DIRECT, whose unaligned pieces use a pool thread's scratch buffer, nor writes,
 *   which one pool thread keeps in order); else ranges of `task_size`, or through io_uring one
 *   range per pool thread;
 * - device memory: on the caller below `gds_threshold`; staged reads of at most
 *   overlapped_read_limit() overlapped, larger ones in shared chunks (of a slot of the settings'
 *   ring, or a whole task while the pool is backlogged); writes and cuFile in one range per pool
 *   thread (a multiple of `task_size`).
 */
[[nodiscard]] LocalPlan plan_local_transfer(bool reading,
                                            bool host_memory,
                                            std::size_t size,
                                            std::size_t task_size,
                                            std::size_t gds_threshold,
                                            ThreadPool const& pool,
                                            LocalFile const& file);

/**
 * @brief Whether reads (`reading`) or writes of `size` bytes by a pool of `pool_threads` threads
 * go through io_uring: `KVIKIO_LOCAL_IO_BACKEND` asks for it (`io_uring`; `auto`: reads of more
 * than one io_uring_piece_size(), while the pool has at most half as many threads as there are
 * cores and is not backlogged) and io_uring_available() (the process's probe: a pool thread whose
 * own ring is refused moves its share by system calls). A read of one piece has no second request
 * to overlap: a ring would only add the kernel worker's round trip.
 */
[[nodiscard]] bool io_uring_selected(bool reading,
                                     std::size_t size,
                                     std::size_t pool_threads = defaults::thread_pool_nthreads(),
                                     bool pool_backlogged     = false);

/// @brief The mover of `size` bytes of host memory, or of device memory staged through it:
/// io_uring where io_uring_selected(), else POSIX.
[[nodiscard]] ByteMover& host_mover(bool reading,
                                    std::size_t size,
                                    std::size_t pool_threads,
                                    bool pool_backlogged = false);

/**
 * @brief Why compat mode AUTO moves a file's bytes through POSIX rather than cuFile, asked
 * without opening cuFile's driver where it need not be: "" where GPUDirect Storage is available.
 */
[[nodiscard]] std::string gds_unavailable_reason();

/// @brief Which mover moves large reads into host memory, and why (see local_backend_choice()).
struct LocalBackendChoice {
  std::string backend;  ///< "io_uring" or "posix": the mover of a read of more than one piece
  std::string why;      ///< the setting and the facts that chose it
};

/**
 * @brief What io_uring_selected() decides for a large read by a pool of `pool_threads` threads,
 * with its reasons in words (writes and reads of one piece go through POSIX under `auto`).
 */
[[nodiscard]] LocalBackendChoice local_backend_choice(
  std::size_t pool_threads = defaults::thread_pool_nthreads());

}  // namespace kvikio::detail
