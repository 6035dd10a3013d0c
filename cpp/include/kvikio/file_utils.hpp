/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file file_utils.hpp
 * @brief File sizes and the page cache.
 */

#include <cstddef>
#include <string>
#include <utility>

namespace kvikio {

/// @brief Size of an open file. @throws kvikio::GenericSystemError
std::size_t get_file_size(int file_descriptor);
/// @brief Size of a file. @throws kvikio::GenericSystemError
std::size_t get_file_size(std::string const& file_path);

/**
 * @brief How much of a file is in the page cache: (pages cached, pages in the file).
 * @throws kvikio::GenericSystemError if the file cannot be opened or examined.
 */
std::pair<std::size_t, std::size_t> get_page_cache_info(std::string const& file_path);
/// @brief get_page_cache_info() of an open file.
std::pair<std::size_t, std::size_t> get_page_cache_info(int fd);

/**
 * @brief Drops the whole page cache (`/proc/sys/vm/drop_caches`), after `sync()` if
 * `clear_dirty_pages`. Needs root.
 * @return false if it was not allowed.
 */
bool clear_page_cache(bool reclaim_dentries_and_inodes = true, bool clear_dirty_pages = true);

/**
 * @brief Drops one file's clean pages from the page cache (`posix_fadvise(DONTNEED)` after
 * `fdatasync`); needs no privilege. Check with get_page_cache_info(): the kernel may keep some.
 * @throws kvikio::GenericSystemError
 */
void drop_file_page_cache(int fd);

}  // namespace kvikio
