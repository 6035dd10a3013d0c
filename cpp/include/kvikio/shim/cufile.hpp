/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file shim/cufile.hpp
 * @brief cuFile (GPUDirect Storage), loaded at run time from `libcufile.so.0` when present.
 */

#include <cstddef>
#include <string>

#include <kvikio/shim/cufile_h_wrapper.hpp>
#include <kvikio/shim/utils.hpp>

namespace kvikio {

/**
 * @brief Table of cuFile functions, resolved once.
 *
 * Loading the library does not open the cuFile driver; `cuFileDriverOpen` is the caller's.
 */
class cuFileAPI {
 public:
  CUfileError_t (*DriverOpen)(){nullptr};
  CUfileError_t (*DriverClose)(){nullptr};
  CUfileError_t (*GetVersion)(int* version){nullptr};
  CUfileError_t (*HandleRegister)(CUfileHandle_t* fh, CUfileDescr_t* descr){nullptr};
  void (*HandleDeregister)(CUfileHandle_t fh){nullptr};
  ssize_t (*Read)(
    CUfileHandle_t fh, void* buf_base, std::size_t size, off_t file_offset, off_t buf_offset){};
  ssize_t (*Write)(CUfileHandle_t fh,
                   void const* buf_base,
                   std::size_t size,
                   off_t file_offset,
                   off_t buf_offset){};
  CUfileError_t (*BufRegister)(void const* buf_base, std::size_t length, int flags){nullptr};
  CUfileError_t (*BufDeregister)(void const* buf_base){nullptr};
  CUfileError_t (*DriverGetProperties)(CUfileDrvProps_t* props){nullptr};

  // Newer or optional parts of cuFile: null when the library lacks them.
  CUfileError_t (*DriverSetPollMode)(bool poll, std::size_t poll_threshold_size){nullptr};
  CUfileError_t (*DriverSetMaxCacheSize)(std::size_t max_cache_size){nullptr};
  CUfileError_t (*DriverSetMaxPinnedMemSize)(std::size_t max_pinned_size){nullptr};
  CUfileError_t (*ReadAsync)(CUfileHandle_t fh,
                             void* buf_base,
                             std::size_t* size_p,
                             off_t* file_offset_p,
                             off_t* buf_offset_p,
                             ssize_t* bytes_read_p,
                             CUstream stream){nullptr};
  CUfileError_t (*WriteAsync)(CUfileHandle_t fh,
                              void* buf_base,
                              std::size_t* size_p,
                              off_t* file_offset_p,
                              off_t* buf_offset_p,
                              ssize_t* bytes_written_p,
                              CUstream stream){nullptr};
  CUfileError_t (*StreamRegister)(CUstream stream, unsigned flags){nullptr};
  CUfileError_t (*StreamDeregister)(CUstream stream){nullptr};
  CUfileError_t (*BatchIOSetUp)(CUfileBatchHandle_t* batch, unsigned nr){nullptr};
  CUfileError_t (*BatchIOSubmit)(CUfileBatchHandle_t batch,
                                 unsigned nr,
                                 CUfileIOParams_t* iocbp,
                                 unsigned int flags){nullptr};
  CUfileError_t (*BatchIOGetStatus)(CUfileBatchHandle_t batch,
                                    unsigned min_nr,
                                    unsigned* nr,
                                    CUfileIOEvents_t* iocbp,
                                    struct timespec* timeout){nullptr};
  CUfileError_t (*BatchIOCancel)(CUfileBatchHandle_t batch){nullptr};
  void (*BatchIODestroy)(CUfileBatchHandle_t batch){nullptr};

  /**
   * @brief The process-wide table.
   * @throws kvikio::CUfileException if `libcufile.so.0` cannot be loaded or lacks an entry point.
   */
  static cuFileAPI& instance();

  /**
   * @brief Opens the cuFile driver (`cuFileDriverOpen`); opening it again is no error.
   * @throws kvikio::CUfileException if it fails.
   */
  void driver_open();
  /**
   * @brief Closes the cuFile driver (`cuFileDriverClose`).
   * @throws kvikio::CUfileException if it fails.
   */
  void driver_close();

  cuFileAPI(cuFileAPI const&)            = delete;
  cuFileAPI& operator=(cuFileAPI const&) = delete;

 private:
  cuFileAPI() = default;
  friend struct CuFileLoader;
};

/// @brief Whether `libcufile.so.0` was loaded with every entry point. Never throws.
bool is_cufile_library_available() noexcept;

/// @brief cuFile's version (e.g. 1150 for 1.15), or 0 without cuFile. Never throws.
int cufile_version() noexcept;

/**
 * @brief Whether cuFile can be used: the library loads, a CUDA driver is there and
 * `cuFileDriverOpen` succeeds. Never throws.
 */
bool is_cufile_available() noexcept;

namespace detail {
/// @brief Why `is_cufile_library_available()` is false ("" when it is true).
std::string cufile_unavailable_reason();
/**
 * @brief Whether cuFile can be used: libcufile.so.0 loads, a CUDA driver works and the cuFile
 * driver opens. Decided once per process (the driver then stays open). Never throws.
 */
bool is_cufile_usable() noexcept;
/**
 * @brief Whether cuFile is usable and GPUDirect Storage proper is available (nvidia-fs loaded).
 * Compat mode AUTO uses cuFile only then: without nvidia-fs cuFile falls back to its own POSIX
 * path, which gains nothing over KvikIO's and can return before device data lands
 * (docs/design.md). Asks whether the nvidia-fs module is loaded before it
 * opens cuFile's driver (which allocates the driver's buffers). Never throws.
 */
bool is_gds_available() noexcept;
/// @brief Whether the nvidia-fs kernel module is loaded (`/sys/module/nvidia_fs`), asked once.
bool is_nvidia_fs_loaded() noexcept;
/// @brief Why is_cufile_usable() is false ("" when it is true).
std::string cufile_unusable_reason();
}  // namespace detail

}  // namespace kvikio
