/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file parallel_operation.hpp
 * @brief Splitting one I/O call into tasks on a thread pool.
 */

#include <cstddef>
#include <functional>
#include <future>
#include <memory>

#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include <kvikio/utils.hpp>

namespace kvikio {

/**
 * @brief One chunk of a call: moves `size` bytes at `file_offset`, `buf_offset` bytes into the
 * call's buffer, and returns how many it moved.
 */
using ChunkOperation =
  std::function<std::size_t(std::size_t buf_offset, std::size_t size, std::size_t file_offset)>;

/**
 * @brief Runs `op` over `size` bytes in chunks of at most `task_size`, one task per chunk.
 *
 * With `alignment` > 0 the first chunk is shortened so that every later chunk starts at a
 * multiple of `alignment` in the file (O_DIRECT). The returned future becomes ready when every
 * task has finished, with the total, or with the first error any task raised: no task outlives
 * the readiness of the future, so the caller's buffers may be released once it is ready.
 *
 * With a `recorder` (one call's observation, detail/observation_recorder.hpp), the task that ends
 * the call finishes the observation before the future becomes ready.
 *
 * @throws std::invalid_argument if `task_size` is 0 or `pool` is null.
 */
std::future<std::size_t> parallel_io(
  ChunkOperation op,
  std::size_t size,
  std::size_t file_offset,
  std::size_t task_size,
  ThreadPool* pool,
  std::size_t alignment                                        = 0,
  std::shared_ptr<detail::LogicalObservationRecorder> recorder = nullptr);

namespace detail {
/**
 * @brief Runs `work` as `workers` tasks of `pool` (each task calls it once) and returns the sum
 * of what they return; the first exception any of them throws, once all have finished. For
 * transfers whose workers share their chunks (a ChunkCursor) instead of splitting the range.
 */
std::future<std::size_t> parallel_workers(
  std::function<std::size_t()> work,
  std::size_t workers,
  ThreadPool* pool,
  std::shared_ptr<LogicalObservationRecorder> recorder = nullptr);
}  // namespace detail

}  // namespace kvikio
