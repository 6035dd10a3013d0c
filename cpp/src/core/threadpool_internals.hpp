/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file core/threadpool_internals.hpp
 * @brief What the library asks of every ThreadPool of the process (kept beside their registry in
 * core/threadpool_wrapper.cpp).
 */

#include <cstddef>

namespace kvikio::detail {

/**
 * @brief The threads of every ThreadPool alive in the process: the default pool, pools passed
 * to pread, one per block device, one per GPU of a program that feeds several. They are the
 * threads that may move bytes at once, so the cores are shared among all of them.
 */
[[nodiscard]] std::size_t threads_of_live_pools();

/// @brief The cores the process may run on (std::thread::hardware_concurrency(), at least 1).
[[nodiscard]] unsigned int machine_cores() noexcept;

/**
 * @brief Whether `threads` pool threads leave half of `cores` to others: the condition of what
 * costs a core beside each pool thread. io_uring's kernel workers copy on cores of their own
 * (KVIKIO_LOCAL_IO_BACKEND=auto reads through io_uring only so); a worker that ran out of work
 * spins before it sleeps only so (a spinning worker holds a core that the callers, which read on
 * their own threads while the pool is backlogged, and the other workers would use).
 */
[[nodiscard]] constexpr bool at_most_half_the_cores(std::size_t threads, std::size_t cores) noexcept
{
  return threads * 2 <= cores;
}

/**
 * @brief Tells the pool thread running the calling task not to spin once the task ends (it
 * sleeps at once if no work is queued): the task expects no other to follow it soon, as the one
 * read in sixteen that a caller waiting for each read hands off (core/waiting_callers.hpp). No
 * effect outside a pool's task.
 */
void no_idle_spin_after_this_task() noexcept;

}  // namespace kvikio::detail
