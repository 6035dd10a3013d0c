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

/**
 * @brief Whether a worker that ran out of work spins a while before it sleeps, with `threads`
 * pool threads in the process on `cores` cores: only while they are at most half the cores. A
 * spinning worker holds a core that the callers (which read on their own threads while the pool
 * is backlogged) and the other workers would use; with fewer cores than that, it slows the reads
 * it waits for.
 */
[[nodiscard]] constexpr bool idle_spin_pays(std::size_t threads, std::size_t cores) noexcept
{
  return threads * 2 <= cores;
}

}  // namespace kvikio::detail
