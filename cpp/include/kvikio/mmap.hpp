/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file mmap.hpp
 * @brief MmapHandle: reads from a memory-mapped file into host or device memory.
 */

#include <sys/types.h>

#include <cstddef>
#include <future>
#include <optional>
#include <string>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>

namespace kvikio {

/**
 * @brief A read-only mapping of `[initial_map_offset, initial_map_offset + initial_map_size)` of
 * a file (`MAP_PRIVATE` unless `map_flags` says otherwise). Move-only; unmaps on destruction.
 * Reads are memory copies from the mapping; device destinations are staged through pinned
 * bounce buffers.
 */
class MmapHandle {
 public:
  MmapHandle() noexcept = default;

  /**
   * @param flags only "r" is supported.
   * @param initial_map_size bytes to map; default: to the end of the file.
   * @throws std::invalid_argument for other flags; std::out_of_range if the range is not within
   * the file; kvikio::GenericSystemError if open or mmap fails.
   */
  MmapHandle(std::string const& file_path,
             std::string const& flags                    = "r",
             std::optional<std::size_t> initial_map_size = std::nullopt,
             std::size_t initial_map_offset              = 0,
             mode_t mode                                 = FileHandle::m644,
             std::optional<int> map_flags                = std::nullopt);

  MmapHandle(MmapHandle&& o) noexcept;
  MmapHandle& operator=(MmapHandle&& o) noexcept;
  MmapHandle(MmapHandle const&)            = delete;
  MmapHandle& operator=(MmapHandle const&) = delete;
  ~MmapHandle() noexcept;

  [[nodiscard]] std::size_t initial_map_size() const noexcept;
  [[nodiscard]] std::size_t initial_map_offset() const noexcept;
  /// @brief Size of the file when it was opened.
  [[nodiscard]] std::size_t file_size() const;
  /// @brief Bytes mapped (initial_map_size()).
  [[nodiscard]] std::size_t nbytes() const;
  [[nodiscard]] bool closed() const noexcept;
  void close() noexcept;

  /**
   * @brief Copies `size` bytes at file offset `offset` into `buf` (host or device memory).
   * @param size default: from `offset` to the end of the mapping.
   * @throws std::out_of_range if `[offset, offset + size)` is not within the mapping.
   */
  std::size_t read(void* buf,
                   std::optional<std::size_t> size = std::nullopt,
                   std::size_t offset              = 0);

  /// @brief read() in parallel tasks of `task_size` on `thread_pool`.
  std::future<std::size_t> pread(void* buf,
                                 std::optional<std::size_t> size = std::nullopt,
                                 std::size_t offset              = 0,
                                 std::size_t task_size           = defaults::task_size(),
                                 ThreadPool* thread_pool         = &defaults::thread_pool());

 private:
  std::size_t checked_size(std::optional<std::size_t> size,
                           std::size_t offset,
                           void const* buf) const;
  void copy_out(std::byte* dst, std::size_t size, std::size_t offset, bool device) const;

  std::string path_;
  int fd_{-1};
  std::size_t file_size_{0};
  std::size_t map_offset_{0};  // initial_map_offset
  std::size_t map_size_{0};    // initial_map_size
  void* mapping_{nullptr};     // starts at the page below map_offset_
  std::size_t mapping_size_{0};
  std::size_t page_shift_{0};  // map_offset_ - page-aligned start of mapping_
};

}  // namespace kvikio
