/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file batch_read.hpp
 * @brief What batched reads share: the ranges they take and the options that say how nearby
 * ranges are merged into one transfer.
 *
 * A batch read (RemoteHandle::batch_read(), remote_batch_read(), FileHandle::batch_read(),
 * file_batch_read()) takes many ranges, of one or several handles and into host memory or the
 * device memory of one or several CUDA contexts, and returns one future per range in the
 * caller's order. Ranges of the same handle and the same destination kind (host memory, or the
 * same CUDA context) whose gap is at most `coalesce_max_gap` are read as one transfer while the
 * merged span fits in `task_size` and in the batch's share of each pool thread (its bytes over
 * the pool's threads, at least 256 KiB: a batch that merges still keeps every thread busy); the
 * gap's bytes are read and dropped, never written to any destination. A range larger than
 * `task_size` is read in pieces of `task_size`, as pread() reads it. A failed transfer fails
 * exactly the ranges it served.
 */

#include <cstddef>
#include <optional>

#include <kvikio/threadpool_wrapper.hpp>

namespace kvikio {

/// @brief How a batch read turns ranges into transfers, and where it runs them.
struct BatchReadOptions {
  /// @brief Two ranges merge when at most this many bytes lie between them; std::nullopt (the
  /// default) merges nothing: every range is its own read.
  std::optional<std::size_t> coalesce_max_gap{std::nullopt};
  /// @brief The largest transfer, gap bytes included; std::nullopt: `defaults::task_size()` at
  /// the call.
  std::optional<std::size_t> task_size{std::nullopt};
  /// @brief The pool the transfers run on; null: `defaults::thread_pool()`.
  ThreadPool* thread_pool{nullptr};
};

/// @brief One range of a batch: `size` bytes at `file_offset` into `buf` (host or device memory).
struct ReadRange {
  void* buf{nullptr};          ///< the destination; not owned, must outlive the range's future
  std::size_t size{0};         ///< bytes to read (0: a future that is ready at once)
  std::size_t file_offset{0};  ///< where the range starts in the file or object
};

}  // namespace kvikio
