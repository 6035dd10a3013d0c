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

/// @brief cuFile status: 0 is success, 5001..5050 are cuFile errors (values of `cufile.h`).
typedef enum CUfileOpError {  // NOLINT(modernize-use-using): C ABI
  CU_FILE_SUCCESS                        = 0,
  CU_FILE_DRIVER_NOT_INITIALIZED         = 5001,
  CU_FILE_DRIVER_INVALID_PROPS           = 5002,
  CU_FILE_DRIVER_UNSUPPORTED_LIMIT       = 5003,
  CU_FILE_DRIVER_VERSION_MISMATCH        = 5004,
  CU_FILE_DRIVER_VERSION_READ_ERROR      = 5005,
  CU_FILE_DRIVER_CLOSING                 = 5006,
  CU_FILE_PLATFORM_NOT_SUPPORTED         = 5007,
  CU_FILE_IO_NOT_SUPPORTED               = 5008,
  CU_FILE_DEVICE_NOT_SUPPORTED           = 5009,
  CU_FILE_NVFS_DRIVER_ERROR              = 5010,
  CU_FILE_CUDA_DRIVER_ERROR              = 5011,
  CU_FILE_CUDA_POINTER_INVALID           = 5012,
  CU_FILE_CUDA_MEMORY_TYPE_INVALID       = 5013,
  CU_FILE_CUDA_POINTER_RANGE_ERROR       = 5014,
  CU_FILE_CUDA_CONTEXT_MISMATCH          = 5015,
  CU_FILE_INVALID_MAPPING_SIZE           = 5016,
  CU_FILE_INVALID_MAPPING_RANGE          = 5017,
  CU_FILE_INVALID_FILE_TYPE              = 5018,
  CU_FILE_INVALID_FILE_OPEN_FLAG         = 5019,
  CU_FILE_DIO_NOT_SET                    = 5020,
  CU_FILE_INVALID_VALUE                  = 5022,
  CU_FILE_MEMORY_ALREADY_REGISTERED      = 5023,
  CU_FILE_MEMORY_NOT_REGISTERED          = 5024,
  CU_FILE_PERMISSION_DENIED              = 5025,
  CU_FILE_DRIVER_ALREADY_OPEN            = 5026,
  CU_FILE_HANDLE_NOT_REGISTERED          = 5027,
  CU_FILE_HANDLE_ALREADY_REGISTERED      = 5028,
  CU_FILE_DEVICE_NOT_FOUND               = 5029,
  CU_FILE_INTERNAL_ERROR                 = 5030,
  CU_FILE_GETNEWFD_FAILED                = 5031,
  CU_FILE_NVFS_SETUP_ERROR               = 5033,
  CU_FILE_IO_DISABLED                    = 5034,
  CU_FILE_BATCH_SUBMIT_FAILED            = 5035,
  CU_FILE_GPU_MEMORY_PINNING_FAILED      = 5036,
  CU_FILE_BATCH_FULL                     = 5037,
  CU_FILE_ASYNC_NOT_SUPPORTED            = 5038,
  CU_FILE_INTERNAL_BATCH_SETUP_ERROR     = 5039,
  CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR    = 5040,
  CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR = 5041,
  CU_FILE_INTERNAL_BATCH_CANCEL_ERROR    = 5042,
  CU_FILE_NOMEM_ERROR                    = 5043,
  CU_FILE_IO_ERROR                       = 5044,
  CU_FILE_INTERNAL_BUF_REGISTER_ERROR    = 5045,
  CU_FILE_HASH_OPR_ERROR                 = 5046,
  CU_FILE_INVALID_CONTEXT_ERROR          = 5047,
  CU_FILE_NVFS_INTERNAL_DRIVER_ERROR     = 5048,
  CU_FILE_BATCH_NOCOMPAT_ERROR           = 5049,
  CU_FILE_IO_MAX_ERROR                   = 5050,
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

/**
 * @brief The text of a cuFile status, as upstream's `cufileop_status_error()` gives it: the
 * status's name and what it means, e.g. "CU_FILE_DRIVER_NOT_INITIALIZED (nvidia-fs driver is
 * not loaded)"; "unknown cuFile error" for a value outside the table.
 */
char const* cufileop_status_error(CUfileOpError err) noexcept;
