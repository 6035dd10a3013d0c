/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file cufile/driver.hpp
 * @brief The cuFile (GPUDirect Storage) driver: opening it and reading its properties.
 */

#include <cstddef>
#include <string>
#include <vector>

#include <kvikio/shim/cufile.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/**
 * @brief Opens the cuFile driver for the lifetime of this object (KvikIO itself keeps one open
 * for the process once a file uses cuFile).
 * @throws kvikio::CUfileException if cuFile is unavailable or cuFileDriverOpen fails.
 */
class DriverInitializer {
 public:
  DriverInitializer();
  ~DriverInitializer() noexcept;
  DriverInitializer(DriverInitializer const&)            = delete;
  DriverInitializer& operator=(DriverInitializer const&) = delete;
};

/**
 * @brief Properties of the cuFile driver, read when asked. Sizes are in KiB as cuFile reports
 * them unless the name says bytes. A value set through a setter (of any DriverProperties: the
 * driver is the process's) is what its getter reports from then on, even where cuFile goes on
 * reporting its starting value. Every getter throws kvikio::CUfileException without cuFile.
 */
class DriverProperties {
 public:
  /// @brief Whether GPUDirect Storage proper is available (the nvidia-fs driver is loaded).
  /// Never throws.
  bool is_gds_available();
  unsigned int get_nvfs_major_version();
  unsigned int get_nvfs_minor_version();
  bool get_nvfs_allow_compat_mode();
  bool get_nvfs_poll_mode();
  std::size_t get_nvfs_poll_thresh_size();
  void set_nvfs_poll_mode(bool enable);
  void set_nvfs_poll_thresh_size(std::size_t size_in_kb);
  std::size_t get_max_device_cache_size();
  void set_max_device_cache_size(std::size_t size_in_kb);
  std::size_t get_per_buffer_cache_size();
  std::size_t get_max_pinned_memory_size();
  void set_max_pinned_memory_size(std::size_t size_in_kb);
  std::size_t get_max_batch_io_size();
  std::size_t get_max_batch_io_timeout_msecs();
  /// @brief The control flags set (poll mode, compat mode allowed), from `dcontrolflags`.
  /// @throws kvikio::CUfileException if cuFile is not usable.
  std::vector<CUfileDriverControlFlags> get_nvfs_statusflags();
};

}  // namespace kvikio
