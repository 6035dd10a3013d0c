/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file file_utils.hpp
 * @brief Opening files, their sizes, the page cache and the block device under a file.
 */

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/**
 * @brief An open file descriptor, closed on destruction (move-only).
 */
class FileWrapper {
 public:
  /**
   * @brief Opens `file_path`; see open_fd().
   * @param file_path the file.
   * @param flags `r`, `r+`, `w` or `w+`.
   * @param o_direct open with `O_DIRECT`.
   * @param mode permissions of a file created.
   * @throws std::invalid_argument for unknown flags.
   * @throws kvikio::GenericSystemError if the file cannot be opened.
   */
  FileWrapper(std::string const& file_path, std::string const& flags, bool o_direct, mode_t mode);
  /// @brief No file.
  FileWrapper() noexcept = default;
  /// @brief Closes the file.
  ~FileWrapper() noexcept;
  FileWrapper(FileWrapper const&)            = delete;
  FileWrapper& operator=(FileWrapper const&) = delete;
  /// @brief Takes `o`'s descriptor; `o` is left with none.
  FileWrapper(FileWrapper&& o) noexcept;
  /// @brief Closes this file and takes `o`'s descriptor.
  FileWrapper& operator=(FileWrapper&& o) noexcept;

  /**
   * @brief Opens `file_path` unless a file is open already (then does nothing).
   * @param file_path the file.
   * @param flags `r`, `r+`, `w` or `w+`.
   * @param o_direct open with `O_DIRECT`.
   * @param mode permissions of a file created.
   * @throws std::invalid_argument for unknown flags.
   * @throws kvikio::GenericSystemError if the file cannot be opened.
   */
  void open(std::string const& file_path, std::string const& flags, bool o_direct, mode_t mode);
  /// @brief Whether a file is open.
  [[nodiscard]] bool opened() const noexcept;
  /// @brief Closes the file, if one is open; a failure is logged.
  void close() noexcept;
  /// @brief The descriptor, or -1.
  [[nodiscard]] int fd() const noexcept;

 private:
  int fd_{-1};
};

/**
 * @brief A cuFile handle registered for a descriptor, deregistered on destruction (move-only).
 */
class CUFileHandleWrapper {
 public:
  /// @brief No handle.
  CUFileHandleWrapper() noexcept = default;
  /// @brief Deregisters the handle.
  ~CUFileHandleWrapper() noexcept;
  CUFileHandleWrapper(CUFileHandleWrapper const&)            = delete;
  CUFileHandleWrapper& operator=(CUFileHandleWrapper const&) = delete;
  /// @brief Takes `o`'s handle.
  CUFileHandleWrapper(CUFileHandleWrapper&& o) noexcept;
  /// @brief Deregisters this handle and takes `o`'s.
  CUFileHandleWrapper& operator=(CUFileHandleWrapper&& o) noexcept;

  /**
   * @brief Registers `fd` with cuFile unless a handle is registered already.
   * @param fd the descriptor.
   * @return cuFile's result, or std::nullopt if a handle was registered already (or cuFile is
   * not there to ask: then `CU_FILE_DRIVER_NOT_INITIALIZED`).
   */
  std::optional<CUfileError_t> register_handle(int fd) noexcept;
  /// @brief Whether a handle is registered.
  [[nodiscard]] bool registered() const noexcept;
  /// @brief The handle (null if none).
  [[nodiscard]] CUfileHandle_t handle() const noexcept;
  /// @brief Deregisters the handle, if one is registered.
  void unregister_handle() noexcept;

 private:
  CUfileHandle_t handle_{nullptr};
  bool registered_{false};
};

/**
 * @brief The `open(2)` flags of KvikIO's flag strings, always with `O_CLOEXEC`.
 *
 * `r` read, `r+` read/write, `w` write (create, truncate), `w+` read/write (create, truncate);
 * a `b` (Python's binary mode) may follow or precede the `+`. Any other character is refused
 * (ignoring it would open `rw+` read-only).
 * @param flags the flag string.
 * @param o_direct add `O_DIRECT`.
 * @throws std::invalid_argument "Unknown file open flag" (or for `a`, "Open flag 'a' isn't
 * supported"), naming the string.
 */
int open_fd_parse_flags(std::string const& flags, bool o_direct);

/**
 * @brief Opens a regular file (or block device) with open_fd_parse_flags()'s flags. Never waits:
 * a FIFO is refused, not waited on.
 * @param file_path the file.
 * @param flags `r`, `r+`, `w` or `w+`.
 * @param o_direct open with `O_DIRECT`.
 * @param mode permissions of a file created.
 * @return the descriptor; the caller closes it.
 * @throws std::invalid_argument for unknown flags, or a path with an embedded NUL byte (which
 * would name another file).
 * @throws kvikio::GenericSystemError "Unable to open file", with the path and the errno
 * (`EISDIR` for a directory, `ESPIPE` for a FIFO, socket or character device).
 */
int open_fd(std::string const& file_path, std::string const& flags, bool o_direct, mode_t mode);

/**
 * @brief The flags a descriptor was opened with (`fcntl(F_GETFL)`).
 * @throws kvikio::GenericSystemError
 */
[[nodiscard]] int open_flags(int fd);

/// @brief Size of an open file. @throws kvikio::GenericSystemError
[[nodiscard]] std::size_t get_file_size(int file_descriptor);
/// @brief Size of a file. @throws kvikio::GenericSystemError
[[nodiscard]] std::size_t get_file_size(std::string const& file_path);

/**
 * @brief How much of a file range is in the page cache: (pages cached, pages in the range).
 *
 * The range runs from `offset` (rounded down to a page) for `length` bytes, or to the end of the
 * file if `length` is 0; an offset at or past the end gives (0, 0). Asks the kernel with
 * `mincore` on a mapping, which reads nothing in.
 * @param file_path the file.
 * @param offset where the range starts.
 * @param length bytes in the range; 0: to the end of the file.
 * @throws kvikio::GenericSystemError if the file cannot be opened or examined.
 */
std::pair<std::size_t, std::size_t> get_page_cache_info(std::string const& file_path,
                                                        std::size_t offset = 0,
                                                        std::size_t length = 0);
/**
 * @brief get_page_cache_info() of an open file.
 * @param fd the descriptor (open for reading).
 * @param offset where the range starts.
 * @param length bytes in the range; 0: to the end of the file.
 * @throws kvikio::GenericSystemError
 */
std::pair<std::size_t, std::size_t> get_page_cache_info(int fd,
                                                        std::size_t offset = 0,
                                                        std::size_t length = 0);

/**
 * @brief Drops a file range's pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`);
 * needs no privilege. The kernel may keep some pages (check with get_page_cache_info()).
 * @param fd the descriptor.
 * @param offset where the range starts.
 * @param length bytes in the range; 0: to the end of the file.
 * @param sync_first `fdatasync` first, so that dirty pages can be dropped too.
 * @throws kvikio::GenericSystemError
 */
void drop_file_page_cache(int fd,
                          std::size_t offset = 0,
                          std::size_t length = 0,
                          bool sync_first    = true);
/**
 * @brief drop_file_page_cache() of a file, opened for the call.
 * @param file_path the file.
 * @param offset where the range starts.
 * @param length bytes in the range; 0: to the end of the file.
 * @param sync_first `fdatasync` first, so that dirty pages can be dropped too.
 * @throws kvikio::GenericSystemError
 */
void drop_file_page_cache(std::string const& file_path,
                          std::size_t offset = 0,
                          std::size_t length = 0,
                          bool sync_first    = true);

/**
 * @brief Drops the whole system's page cache (`vm.drop_caches`): as root by writing
 * `/proc/sys/vm/drop_caches`, otherwise through `sudo -n /sbin/sysctl` where sudo allows it
 * without a password.
 * @param reclaim_dentries_and_inodes also drop dentries and inodes (3, not 1).
 * @param sync_first `sync()` first, so that dirty pages can be dropped too.
 * @return false if it was not allowed; never throws for that.
 */
bool drop_system_page_cache(bool reclaim_dentries_and_inodes = true, bool sync_first = true);

/**
 * @brief drop_system_page_cache() under its former name.
 * @param reclaim_dentries_and_inodes also drop dentries and inodes.
 * @param clear_dirty_pages `sync()` first.
 * @return false if it was not allowed.
 */
[[deprecated("Use drop_system_page_cache() instead")]] bool clear_page_cache(
  bool reclaim_dentries_and_inodes = true, bool clear_dirty_pages = true);

/// @brief The block device a file is stored on.
struct BlockDeviceInfo {
  dev_t id;          ///< major:minor of the device, as one number
  unsigned major;    ///< major device number
  unsigned minor;    ///< minor device number
  std::string name;  ///< name in sysfs, e.g. "nvme0" (an NVMe controller), "sda", "dm-0"
};

/**
 * @brief The whole block device (not the partition) under `file_path`; for NVMe, the controller
 * that namespaces share. Results are cached per path.
 * @throws kvikio::GenericSystemError if the file does not exist, or is on a file system without
 * a block device (tmpfs, overlayfs).
 * @throws kvikio::CUfileException if sysfs cannot be read.
 */
BlockDeviceInfo get_block_device_info(std::string const& file_path);

}  // namespace kvikio
