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

/**
 * @brief The cuFile statuses, X(name, value, meaning): the values of `cufile.h`, the meanings
 * this project's words (cufileop_status_error()).
 */
#define KVIKIO_CUFILE_OP_ERRORS(X)                                                               \
  X(CU_FILE_SUCCESS, 0, "success")                                                               \
  X(CU_FILE_DRIVER_NOT_INITIALIZED,                                                              \
    5001,                                                                                        \
    "the cuFile driver is not open, or nvidia-fs is not loaded")                                 \
  X(CU_FILE_DRIVER_INVALID_PROPS, 5002, "invalid driver properties")                             \
  X(CU_FILE_DRIVER_UNSUPPORTED_LIMIT, 5003, "a driver limit is out of range")                    \
  X(CU_FILE_DRIVER_VERSION_MISMATCH, 5004, "the nvidia-fs driver's version does not match")      \
  X(CU_FILE_DRIVER_VERSION_READ_ERROR, 5005, "cannot read the nvidia-fs driver's version")       \
  X(CU_FILE_DRIVER_CLOSING, 5006, "the driver is shutting down")                                 \
  X(CU_FILE_PLATFORM_NOT_SUPPORTED, 5007, "GPUDirect Storage is not supported on this platform") \
  X(CU_FILE_IO_NOT_SUPPORTED, 5008, "the file system does not support GPUDirect Storage")        \
  X(CU_FILE_DEVICE_NOT_SUPPORTED, 5009, "the GPU does not support GPUDirect Storage")            \
  X(CU_FILE_NVFS_DRIVER_ERROR, 5010, "nvidia-fs driver error")                                   \
  X(CU_FILE_CUDA_DRIVER_ERROR, 5011, "CUDA driver error")                                        \
  X(CU_FILE_CUDA_POINTER_INVALID, 5012, "not a valid CUDA device pointer")                       \
  X(CU_FILE_CUDA_MEMORY_TYPE_INVALID, 5013, "unsupported CUDA memory type")                      \
  X(CU_FILE_CUDA_POINTER_RANGE_ERROR, 5014, "the range exceeds the CUDA allocation")             \
  X(CU_FILE_CUDA_CONTEXT_MISMATCH, 5015, "the buffer belongs to another CUDA context")           \
  X(CU_FILE_INVALID_MAPPING_SIZE, 5016, "the access exceeds the maximum pinned size")            \
  X(CU_FILE_INVALID_MAPPING_RANGE, 5017, "the access is outside the mapped range")               \
  X(CU_FILE_INVALID_FILE_TYPE, 5018, "unsupported file type")                                    \
  X(CU_FILE_INVALID_FILE_OPEN_FLAG, 5019, "unsupported file open flags")                         \
  X(CU_FILE_DIO_NOT_SET, 5020, "the file is not opened with O_DIRECT")                           \
  X(CU_FILE_INVALID_VALUE, 5022, "invalid argument")                                             \
  X(CU_FILE_MEMORY_ALREADY_REGISTERED, 5023, "the buffer is already registered")                 \
  X(CU_FILE_MEMORY_NOT_REGISTERED, 5024, "the buffer is not registered")                         \
  X(CU_FILE_PERMISSION_DENIED, 5025, "permission denied")                                        \
  X(CU_FILE_DRIVER_ALREADY_OPEN, 5026, "the cuFile driver is already open")                      \
  X(CU_FILE_HANDLE_NOT_REGISTERED, 5027, "the file handle is not registered")                    \
  X(CU_FILE_HANDLE_ALREADY_REGISTERED, 5028, "the file handle is already registered")            \
  X(CU_FILE_DEVICE_NOT_FOUND, 5029, "GPU not found")                                             \
  X(CU_FILE_INTERNAL_ERROR, 5030, "internal cuFile error")                                       \
  X(CU_FILE_GETNEWFD_FAILED, 5031, "could not get a new file descriptor")                        \
  X(CU_FILE_NVFS_SETUP_ERROR, 5033, "nvidia-fs driver setup failed")                             \
  X(CU_FILE_IO_DISABLED, 5034, "GPUDirect Storage is disabled by the configuration")             \
  X(CU_FILE_BATCH_SUBMIT_FAILED, 5035, "batch submission failed")                                \
  X(CU_FILE_GPU_MEMORY_PINNING_FAILED, 5036, "pinning GPU memory failed")                        \
  X(CU_FILE_BATCH_FULL, 5037, "the batch queue is full")                                         \
  X(CU_FILE_ASYNC_NOT_SUPPORTED, 5038, "asynchronous I/O is not supported")                      \
  X(CU_FILE_INTERNAL_BATCH_SETUP_ERROR, 5039, "internal batch setup error")                      \
  X(CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR, 5040, "internal batch submit error")                    \
  X(CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR, 5041, "internal batch status error")                 \
  X(CU_FILE_INTERNAL_BATCH_CANCEL_ERROR, 5042, "internal batch cancel error")                    \
  X(CU_FILE_NOMEM_ERROR, 5043, "out of memory")                                                  \
  X(CU_FILE_IO_ERROR, 5044, "I/O error")                                                         \
  X(CU_FILE_INTERNAL_BUF_REGISTER_ERROR, 5045, "internal buffer registration error")             \
  X(CU_FILE_HASH_OPR_ERROR, 5046, "internal hash table error")                                   \
  X(CU_FILE_INVALID_CONTEXT_ERROR, 5047, "invalid CUDA context")                                 \
  X(CU_FILE_NVFS_INTERNAL_DRIVER_ERROR, 5048, "internal nvidia-fs driver error")                 \
  X(CU_FILE_BATCH_NOCOMPAT_ERROR, 5049, "batch I/O is not available in compatibility mode")      \
  X(CU_FILE_IO_MAX_ERROR, 5050, "unknown cuFile error")

/// @brief cuFile status: 0 is success, 5001..5050 are cuFile errors (values of `cufile.h`).
typedef enum CUfileOpError {  // NOLINT(modernize-use-using): C ABI
#define KVIKIO_DETAIL_CUFILE_ENUMERATOR(name, value, meaning) name = value,
  KVIKIO_CUFILE_OP_ERRORS(KVIKIO_DETAIL_CUFILE_ENUMERATOR)
#undef KVIKIO_DETAIL_CUFILE_ENUMERATOR
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
 * @brief The text of a cuFile status: the status's name and what it means, e.g.
 * "CU_FILE_DRIVER_NOT_INITIALIZED (nvidia-fs driver is not loaded)"; "unknown cuFile error" for
 * a value outside the table.
 */
char const* cufileop_status_error(CUfileOpError err) noexcept;
