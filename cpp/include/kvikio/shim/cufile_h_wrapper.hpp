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

#include <cuda.h>

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

}  // extern "C"
