/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file compat_mode_manager.hpp
 * @brief How one FileHandle moves bytes: through cuFile or through POSIX (compat mode).
 */

#include <string>

#include <kvikio/compat_mode.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/**
 * @brief Resolves the compat mode requested for one file, once, when it is opened.
 *
 * - `ON`: POSIX; cuFile is never touched.
 * - `AUTO`: cuFile if GPUDirect Storage is available (nvidia-fs loaded) and cuFile registers the
 *   file, else POSIX (reason() says why).
 * - `OFF`: cuFile, or an error saying why it cannot be used.
 */
class CompatModeManager {
 public:
  CompatModeManager() noexcept = default;

  /**
   * @brief Resolves `requested` for the open descriptor `fd` of `file_path`.
   * @throws kvikio::CUfileException if `requested` is OFF and cuFile cannot serve the file.
   */
  CompatModeManager(std::string const& file_path, int fd, CompatMode requested);

  /// @brief Takes over the cuFile handle of `o`, which keeps its mode but no longer owns one.
  CompatModeManager(CompatModeManager&& o) noexcept = default;
  /// @brief Deregisters this manager's cuFile handle, if any, then takes over that of `o`.
  CompatModeManager& operator=(CompatModeManager&& o) noexcept = default;

  /// @brief Whether I/O goes through POSIX.
  [[nodiscard]] bool is_compat_mode_preferred() const noexcept;
  /// @brief Whether asynchronous I/O goes through POSIX (cuFile may lack its stream API).
  [[nodiscard]] bool is_compat_mode_preferred_for_async() const noexcept;
  /// @brief The mode asked for.
  [[nodiscard]] CompatMode compat_mode_requested() const noexcept;
  /**
   * @brief Why the file's bytes go the way they do, in words: the mode asked for and, under
   * `AUTO`, why cuFile was or was not taken (e.g. "compat mode AUTO: GPUDirect Storage is not
   * available (nvidia-fs is not loaded), ..."). `FileHandle` logs it when it opens a file.
   */
  [[nodiscard]] std::string const& reason() const noexcept;
  /// @brief The registered cuFile handle (null in compat mode).
  [[nodiscard]] CUfileHandle_t cufile_handle() const noexcept;
  /**
   * @brief Checks that asynchronous I/O can honour the requested mode.
   * @throws std::runtime_error if compat mode OFF was asked for but cuFile's stream API is
   * missing, so that asynchronous I/O would run through POSIX.
   */
  void validate_compat_mode_for_async() const;

 private:
  CompatMode requested_{CompatMode::AUTO};
  bool compat_{true};
  std::string reason_;
  CUFileHandleWrapper cufile_handle_;
};

}  // namespace kvikio
