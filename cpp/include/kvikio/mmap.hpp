/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file mmap.hpp
 * @brief MmapHandle: reads from a memory-mapped file into host or device memory.
 */

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>

namespace kvikio {

namespace detail {
class InFlight;
struct MappedRange;
}  // namespace detail

/**
 * @brief A read-only mapping of `[initial_map_offset, initial_map_offset + initial_map_size)` of
 * a file (`MAP_PRIVATE` unless `map_flags` says otherwise). Move-only; unmaps on destruction.
 * Reads are memory copies from the mapping; device destinations are staged through pinned
 * bounce buffers.
 */
class MmapHandle {
 public:
  MmapHandle() noexcept;

  /**
   * @brief Opens `file_path` read-only and maps the range.
   * @param file_path path of the file to map.
   * @param flags only "r" is supported.
   * @param initial_map_size bytes to map; default: to the end of the file.
   * @param initial_map_offset offset in the file, in bytes, of the first byte mapped; need not be
   * page-aligned.
   * @param mode passed to `open(2)`, which ignores it (the file is never created).
   * @param map_flags `mmap(2)` flags; default `MAP_PRIVATE`.
   * @throws std::invalid_argument for other flags; std::out_of_range if the range is not within
   * the file; kvikio::GenericSystemError if open or mmap fails.
   */
  MmapHandle(std::string const& file_path,
             std::string const& flags                    = "r",
             std::optional<std::size_t> initial_map_size = std::nullopt,
             std::size_t initial_map_offset              = 0,
             mode_t mode                                 = FileHandle::m644,
             std::optional<int> map_flags                = std::nullopt);

  /// @brief Takes over the mapping and descriptor of `o`, which is left closed.
  MmapHandle(MmapHandle&& o) noexcept;
  /// @brief close()s this handle, then takes over the mapping and descriptor of `o`.
  MmapHandle& operator=(MmapHandle&& o) noexcept;
  MmapHandle(MmapHandle const&)            = delete;
  MmapHandle& operator=(MmapHandle const&) = delete;
  ~MmapHandle() noexcept;

  /// @brief Bytes mapped, as given to (or defaulted by) the constructor; 0 if closed.
  [[nodiscard]] std::size_t initial_map_size() const noexcept;
  /// @brief File offset, in bytes, of the first byte mapped; 0 if closed.
  [[nodiscard]] std::size_t initial_map_offset() const noexcept;
  /// @brief Size of the file when it was opened; 0 if closed.
  [[nodiscard]] std::size_t file_size() const;
  /// @brief file_size() (not the bytes mapped).
  [[nodiscard]] std::size_t nbytes() const;
  /// @brief Whether the handle is closed (default-constructed, moved from, or close()d).
  [[nodiscard]] bool closed() const noexcept;
  /**
   * @brief Unmaps and closes the file once no read uses the mapping: refuses new reads, waits
   * for those running (on other threads, behind futures not yet ready), then unmaps; a failing
   * `munmap` is logged, not thrown. Closing a closed handle does nothing. The destructor does
   * the same.
   */
  void close() noexcept;

  /**
   * @brief Copies `size` bytes at file offset `offset` into `buf` (host or device memory).
   * @param buf destination, host or device memory; may be null only if no bytes are read.
   * @param size default: from `offset` to the end of the file (which must be mapped).
   * @param offset file offset, in bytes (not relative to the mapping), of the first byte read.
   * @return bytes read.
   * @throws std::out_of_range "Offset is past the end of file" if `offset` is past the file's
   * end; "Read is out of bound" if `[offset, offset + size)` is not within the mapping; or if the
   * file has since shrunk below its end.
   * @throws std::invalid_argument if `buf` is null and bytes are to be read.
   * @throws std::runtime_error "Cannot read from a closed MmapHandle".
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
  // A lease on the mapping for one read. @throws std::runtime_error if the handle is closed.
  [[nodiscard]] std::shared_ptr<void> enter() const;
  [[nodiscard]] detail::MappedRange mapped_range() const;
  std::size_t checked_size(std::optional<std::size_t> size,
                           std::size_t offset,
                           void const* buf) const;

  std::string path_;
  std::shared_ptr<std::string const> source_;  // path_, as observations name the file
  std::atomic<int> fd_{-1};  // read by closed() while close() may run on another thread
  std::size_t file_size_{0};
  std::size_t map_offset_{0};  // initial_map_offset
  std::size_t map_size_{0};    // initial_map_size
  void* mapping_{nullptr};     // starts at the page below map_offset_
  std::size_t mapping_size_{0};
  std::size_t page_shift_{0};  // map_offset_ - page-aligned start of mapping_
  // The leases of running reads on the mapping (detail/in_flight.hpp); null if never opened.
  std::unique_ptr<detail::InFlight> in_flight_;
};

}  // namespace kvikio
