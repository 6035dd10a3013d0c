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

}  // namespace kvikio::detail
