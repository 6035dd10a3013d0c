/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file shim/cufile_h_wrapper.hpp
 * @brief The cuFile types KvikIO needs, declared here because the CUDA toolkit KvikIO is built
 * with need not ship `cufile.h`.
 *
 * Layouts and values follow the cuFile API of CUDA 13.0 (`cufile.h`, libcufile.so.0); they
 * have been ABI-stable since cuFile 1.0. Only what KvikIO uses is declared.
 */

#include <sys/types.h>
#include <time.h>

#include <cstddef>

#include <cuda.h>

/// @brief cuFile errors are numbered above this value (as a negative byte count, `-nbytes > it`).
#ifndef CUFILEOP_BASE_ERR
#define CUFILEOP_BASE_ERR 5000
#endif

extern "C" {

/// @brief cuFile status: 0 is success, 5001..5050 are cuFile errors.
typedef enum CUfileOpError {  // NOLINT(modernize-use-using): C ABI
  CU_FILE_SUCCESS                = 0,
  CU_FILE_DRIVER_NOT_INITIALIZED = 5001,
  CU_FILE_PLATFORM_NOT_SUPPORTED = 5007,
  CU_FILE_IO_NOT_SUPPORTED       = 5008,
  CU_FILE_DEVICE_NOT_SUPPORTED   = 5009,
  CU_FILE_NVFS_DRIVER_ERROR      = 5010,
  CU_FILE_CUDA_DRIVER_ERROR      = 5011,
  CU_FILE_DRIVER_ALREADY_OPEN    = 5026,
} CUfileOpError;

/// @brief Result of most cuFile calls; `cu_err` is set when `err` is CU_FILE_CUDA_DRIVER_ERROR.
typedef struct CUfileError {  // NOLINT(modernize-use-using)
  CUfileOpError err;
  CUresult cu_err;
} CUfileError_t;

enum CUfileFileHandleType {
  CU_FILE_HANDLE_TYPE_OPAQUE_FD    = 1,
  CU_FILE_HANDLE_TYPE_OPAQUE_WIN32 = 2,
  CU_FILE_HANDLE_TYPE_USERSPACE_FS = 3,
};

/// @brief Opaque to KvikIO, which always passes null (kernel file systems).
struct CUfileFSOps;

typedef struct CUfileDescr_t {  // NOLINT(modernize-use-using)
  enum CUfileFileHandleType type;
  union {
    int fd;
    void* handle;
  } handle;
  struct CUfileFSOps const* fs_ops;
} CUfileDescr_t;

typedef void* CUfileHandle_t;  // NOLINT(modernize-use-using)

/// @brief Driver properties (cuFileDriverGetProperties).
typedef struct CUfileDrvProps {  // NOLINT(modernize-use-using)
  struct {
    unsigned int major_version;
    unsigned int minor_version;
    size_t poll_thresh_size;
    size_t max_direct_io_size;
    unsigned int dstatusflags;
    unsigned int dcontrolflags;
  } nvfs;
  unsigned int fflags;
  unsigned int max_device_cache_size;
  unsigned int per_buffer_cache_size;
  unsigned int max_device_pinned_mem_size;
  unsigned int max_batch_io_size;
  unsigned int max_batch_io_timeout_msecs;
} CUfileDrvProps_t;

/// @brief Bit numbers of CUfileDrvProps_t::nvfs::dcontrolflags.
enum CUfileDriverControlFlags { CU_FILE_USE_POLL_MODE = 0, CU_FILE_ALLOW_COMPAT_MODE = 1 };

typedef enum CUfileOpcode { CUFILE_READ = 0, CUFILE_WRITE = 1 } CUfileOpcode_t;  // NOLINT

typedef enum CUFILEStatus_enum {  // NOLINT(modernize-use-using)
  CUFILE_WAITING  = 0x000001,
  CUFILE_PENDING  = 0x000002,
  CUFILE_INVALID  = 0x000004,
  CUFILE_CANCELED = 0x000008,
  CUFILE_COMPLETE = 0x000010,
  CUFILE_TIMEOUT  = 0x000020,
  CUFILE_FAILED   = 0x000040,
} CUfileStatus_t;

typedef enum cufileBatchMode { CUFILE_BATCH = 1 } CUfileBatchMode_t;  // NOLINT

typedef struct CUfileIOParams {  // NOLINT(modernize-use-using)
  CUfileBatchMode_t mode;
  union {
    struct {
      void* devPtr_base;
      off_t file_offset;
      off_t devPtr_offset;
      size_t size;
    } batch;
  } u;
  CUfileHandle_t fh;
  CUfileOpcode_t opcode;
  void* cookie;
} CUfileIOParams_t;

typedef struct CUfileIOEvents {  // NOLINT(modernize-use-using)
  void* cookie;
  CUfileStatus_t status;
  size_t ret;  ///< bytes moved, or a negative error cast to size_t
} CUfileIOEvents_t;

typedef void* CUfileBatchHandle_t;  // NOLINT(modernize-use-using)

}  // extern "C"
