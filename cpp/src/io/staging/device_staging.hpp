/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file io/staging/device_staging.hpp
 * @brief Device-memory transfers staged through pinned host memory, for every byte mover: a read
 * of one chunk through one pool buffer, larger reads and writes through a ring of pinned slots
 * (BounceBufferRing) whose copies overlap the file I/O of the next slot, and overlapped reads
 * whose copies a pool worker finishes while it reads the next one (overlapped_reads.cpp).
 * All in the current context, on this thread's stream for it.
 */

#include <cstddef>
#include <future>
#include <optional>

#include "core/observed_promise.hpp"
#include "io/mover/mover.hpp"

namespace kvikio::detail {

/**
 * @brief The shape of a staged device transfer's ring: `slots` slots of at most `max_slot` bytes
 * each. staging_ring_shape() gives the settings' (defaults::num_bounce_buffers() slots of a
 * task's share, so that a ring spans one task as one task's buffer would); a read planned while
 * the pool is backlogged uses one slot of a whole task.
 */
struct StagingRingShape {
  std::size_t slots{0};     ///< Number of slots.
  std::size_t max_slot{0};  ///< The largest a slot may be, in bytes.
  /// @brief Equal when both members are.
  bool operator==(StagingRingShape const&) const = default;
};

/// @brief The StagingRingShape of the settings now: k slots of defaults::task_size() / k.
[[nodiscard]] StagingRingShape staging_ring_shape();

/**
 * @brief Reads the chunks of `cursor` (the transfer starts at `file_offset` and at
 * `base + base_offset`) with `mover` until none is left; several threads may share the cursor.
 * The chunks are the slots of a ring of `shape` (the settings' where empty). Returns the bytes
 * this thread moved, once they are in device memory.
 */
std::size_t read_to_device(ByteMover& mover,
                           LocalFile const& file,
                           void* base,
                           std::size_t base_offset,
                           std::size_t file_offset,
                           ChunkCursor& cursor,
                           std::optional<StagingRingShape> shape = std::nullopt);

/// @brief Writes `size` bytes from `base + base_offset` at `file_offset` with `mover`: up to a
/// ring's slots of device-to-host copies run ahead of the file writes.
std::size_t write_from_device(ByteMover& mover,
                              LocalFile const& file,
                              void const* base,
                              std::size_t base_offset,
                              std::size_t size,
                              std::size_t file_offset);

/// @brief The largest read that read_overlapped() may leave in flight: one slot of a staging ring
/// as the settings are now.
[[nodiscard]] std::size_t overlapped_read_limit();

/**
 * @brief Reads `size` bytes at `file_offset` into `dst` (device memory of the current context)
 * with `mover`, making `done` ready with `size` once they are in device memory, or with the
 * error. On a thread pool worker, a read of at most overlapped_read_limit() bytes may return
 * with its copy in flight, or held to start with the reads that follow, for the worker to finish
 * later (detail::WorkerLeftovers), so that the worker reads the next one from the file
 * meanwhile; otherwise it returns when `done` is set.
 */
void read_overlapped(ByteMover& mover,
                     LocalFile const& file,
                     void* dst,
                     std::size_t size,
                     std::size_t file_offset,
                     ObservedPromise done) noexcept;

}  // namespace kvikio::detail
