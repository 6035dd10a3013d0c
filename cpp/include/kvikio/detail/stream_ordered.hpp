/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <vector>

#include <cuda.h>

#include <kvikio/threadpool_wrapper.hpp>

namespace kvikio::detail {

/// @brief How a stream-ordered operation makes its stream wait for its tasks.
enum class StreamWaitKind {
  stream_memops,  ///< cuStreamWaitValue32 on a pinned flag the last task sets (the GPU waits)
  host_function,  ///< a host function on the stream that waits for the tasks (a driver thread)
};

/**
 * @brief One task of a stream-ordered operation: moves its bytes, making every device copy it
 * enqueues wait for `after` (an event recorded on the caller's stream when the operation was
 * enqueued), and returns only once its copies are complete. Returns the bytes moved.
 */
using StreamOrderedTask = std::function<std::size_t(CUevent after)>;

/**
 * @brief Runs `tasks` on `pool` in the order of `stream`, without blocking the caller.
 *
 * Records an event E on `stream` (the tasks' copies wait for it, so work enqueued on `stream`
 * before comes first), submits the tasks, and makes `stream` wait until they have all ended
 * (so work enqueued after sees their bytes): with stream memory operations where the driver
 * supports them, else with a host function. Nothing is synchronised before. When the last task
 * ends, `on_done(bytes, error)` runs on that task's thread, before the stream is released:
 * `error` is the first task's exception (then `bytes` is -1), or null.
 *
 * The caller has pushed the context of `stream`.
 * @throws what the driver throws while enqueuing; then no task was submitted.
 */
void run_stream_ordered(CUstream stream,
                        std::vector<StreamOrderedTask> tasks,
                        ThreadPool& pool,
                        std::function<void(ssize_t bytes, std::exception_ptr error)> on_done);

/**
 * @brief For tests: force one kind of stream wait (std::nullopt: choose, the default: stream
 * memory operations, or host functions once the driver refused them).
 */
void force_stream_wait_kind(std::optional<StreamWaitKind> kind) noexcept;

/// @brief The kind the last stream-ordered operation of this process used.
[[nodiscard]] std::optional<StreamWaitKind> last_stream_wait_kind() noexcept;

}  // namespace kvikio::detail
