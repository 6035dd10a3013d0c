/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/error.hpp>

#include <cerrno>
#include <string>
#include <string_view>
#include <system_error>

#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

GenericSystemError::GenericSystemError(std::string const& msg) : GenericSystemError(errno, msg) {}

GenericSystemError::GenericSystemError(char const* msg)
  : GenericSystemError(errno, std::string{msg})
{
}

GenericSystemError::GenericSystemError(int err, std::string const& msg)
  : std::system_error(err, std::generic_category(), msg)
{
}

GenericSystemError::GenericSystemError(int err, char const* msg)
  : GenericSystemError(err, std::string{msg})
{
}

namespace detail {

std::string failure_location(char const* file, int line)
{
  return std::string{"KvikIO failure at: "} + file + ":" + std::to_string(line) + ": ";
}

std::string cuda_error_description(CUresult result) noexcept
{
  try {
    if (result == CUDA_ERROR_STUB_LIBRARY) {
      return "CUDA_ERROR_STUB_LIBRARY(The CUDA driver loaded is a stub library: libcuda.so.1 is "
             "the toolkit's stub, not a CUDA driver)";
    }
    char const* name        = nullptr;
    char const* description = nullptr;
    if (is_cuda_available()) {
      auto& api = cudaAPI::instance();
      api.GetErrorName(result, &name);
      api.GetErrorString(result, &description);
    }
    std::string text = name != nullptr ? name : "CUresult " + std::to_string(result);
    text += std::string{"("} + (description != nullptr ? description : "unknown") + ")";
    return text;
  } catch (...) {
    return "CUresult " + std::to_string(static_cast<int>(result));
  }
}

std::string cuda_error_message(CUresult result, char const* file, int line)
{
  return std::string{"CUDA error at: "} + file + ":" + std::to_string(line) + ": " +
         cuda_error_description(result);
}

std::string cufile_error_message(CUfileError_t error, char const* file, int line)
{
  if (error.err == CU_FILE_CUDA_DRIVER_ERROR && error.cu_err != CUDA_SUCCESS) {
    return cuda_error_message(error.cu_err, file, line);
  }
  return std::string{"cuFile error at: "} + file + ":" + std::to_string(line) + ": " +
         cufileop_status_error(error.err);
}

std::string cufile_error_description(int cufile_err, CUresult cu_err) noexcept
{
  try {
    std::string text = cufileop_status_error(static_cast<CUfileOpError>(cufile_err));
    if (cufile_err == CU_FILE_CUDA_DRIVER_ERROR) {
      text += " (CUDA driver error: " + cuda_error_description(cu_err) + ")";
    }
    return text;
  } catch (...) {
    return "cuFile error";
  }
}

std::string bytes_done_error_description(long err) noexcept
{
  try {
    if (err > CUFILEOP_BASE_ERR) { return cufileop_status_error(static_cast<CUfileOpError>(err)); }
    return std::generic_category().message(static_cast<int>(err));
  } catch (...) {
    return "error " + std::to_string(err);
  }
}

void throw_system_error(int err, char const* file, int line, std::string_view msg)
{
  std::string text{msg};
  if (!text.empty()) { text += ' '; }
  text += std::string{"Linux system/library function call error at: "} + file + ":" +
          std::to_string(line);
  throw GenericSystemError(err, text);
}

void handle_linux_call_error(int line_number, char const* filename, std::string_view extra_msg)
{
  throw_system_error(errno, filename, line_number, extra_msg);
}

}  // namespace detail
}  // namespace kvikio

char const* cufileop_status_error(CUfileOpError err) noexcept
{
  switch (err) {
    case CU_FILE_SUCCESS: return "CU_FILE_SUCCESS (success)";
    case CU_FILE_DRIVER_NOT_INITIALIZED:
      return "CU_FILE_DRIVER_NOT_INITIALIZED (the cuFile driver is not open, or nvidia-fs is not "
             "loaded)";
    case CU_FILE_DRIVER_INVALID_PROPS:
      return "CU_FILE_DRIVER_INVALID_PROPS (invalid driver properties)";
    case CU_FILE_DRIVER_UNSUPPORTED_LIMIT:
      return "CU_FILE_DRIVER_UNSUPPORTED_LIMIT (a driver limit is out of range)";
    case CU_FILE_DRIVER_VERSION_MISMATCH:
      return "CU_FILE_DRIVER_VERSION_MISMATCH (the nvidia-fs driver's version does not match)";
    case CU_FILE_DRIVER_VERSION_READ_ERROR:
      return "CU_FILE_DRIVER_VERSION_READ_ERROR (cannot read the nvidia-fs driver's version)";
    case CU_FILE_DRIVER_CLOSING: return "CU_FILE_DRIVER_CLOSING (the driver is shutting down)";
    case CU_FILE_PLATFORM_NOT_SUPPORTED:
      return "CU_FILE_PLATFORM_NOT_SUPPORTED (GPUDirect Storage is not supported on this "
             "platform)";
    case CU_FILE_IO_NOT_SUPPORTED:
      return "CU_FILE_IO_NOT_SUPPORTED (the file system does not support GPUDirect Storage)";
    case CU_FILE_DEVICE_NOT_SUPPORTED:
      return "CU_FILE_DEVICE_NOT_SUPPORTED (the GPU does not support GPUDirect Storage)";
    case CU_FILE_NVFS_DRIVER_ERROR: return "CU_FILE_NVFS_DRIVER_ERROR (nvidia-fs driver error)";
    case CU_FILE_CUDA_DRIVER_ERROR: return "CU_FILE_CUDA_DRIVER_ERROR (CUDA driver error)";
    case CU_FILE_CUDA_POINTER_INVALID:
      return "CU_FILE_CUDA_POINTER_INVALID (not a valid CUDA device pointer)";
    case CU_FILE_CUDA_MEMORY_TYPE_INVALID:
      return "CU_FILE_CUDA_MEMORY_TYPE_INVALID (unsupported CUDA memory type)";
    case CU_FILE_CUDA_POINTER_RANGE_ERROR:
      return "CU_FILE_CUDA_POINTER_RANGE_ERROR (the range exceeds the CUDA allocation)";
    case CU_FILE_CUDA_CONTEXT_MISMATCH:
      return "CU_FILE_CUDA_CONTEXT_MISMATCH (the buffer belongs to another CUDA context)";
    case CU_FILE_INVALID_MAPPING_SIZE:
      return "CU_FILE_INVALID_MAPPING_SIZE (the access exceeds the maximum pinned size)";
    case CU_FILE_INVALID_MAPPING_RANGE:
      return "CU_FILE_INVALID_MAPPING_RANGE (the access is outside the mapped range)";
    case CU_FILE_INVALID_FILE_TYPE: return "CU_FILE_INVALID_FILE_TYPE (unsupported file type)";
    case CU_FILE_INVALID_FILE_OPEN_FLAG:
      return "CU_FILE_INVALID_FILE_OPEN_FLAG (unsupported file open flags)";
    case CU_FILE_DIO_NOT_SET: return "CU_FILE_DIO_NOT_SET (the file is not opened with O_DIRECT)";
    case CU_FILE_INVALID_VALUE: return "CU_FILE_INVALID_VALUE (invalid argument)";
    case CU_FILE_MEMORY_ALREADY_REGISTERED:
      return "CU_FILE_MEMORY_ALREADY_REGISTERED (the buffer is already registered)";
    case CU_FILE_MEMORY_NOT_REGISTERED:
      return "CU_FILE_MEMORY_NOT_REGISTERED (the buffer is not registered)";
    case CU_FILE_PERMISSION_DENIED: return "CU_FILE_PERMISSION_DENIED (permission denied)";
    case CU_FILE_DRIVER_ALREADY_OPEN:
      return "CU_FILE_DRIVER_ALREADY_OPEN (the cuFile driver is already open)";
    case CU_FILE_HANDLE_NOT_REGISTERED:
      return "CU_FILE_HANDLE_NOT_REGISTERED (the file handle is not registered)";
    case CU_FILE_HANDLE_ALREADY_REGISTERED:
      return "CU_FILE_HANDLE_ALREADY_REGISTERED (the file handle is already registered)";
    case CU_FILE_DEVICE_NOT_FOUND: return "CU_FILE_DEVICE_NOT_FOUND (GPU not found)";
    case CU_FILE_INTERNAL_ERROR: return "CU_FILE_INTERNAL_ERROR (internal cuFile error)";
    case CU_FILE_GETNEWFD_FAILED:
      return "CU_FILE_GETNEWFD_FAILED (could not get a new file descriptor)";
    case CU_FILE_NVFS_SETUP_ERROR:
      return "CU_FILE_NVFS_SETUP_ERROR (nvidia-fs driver setup failed)";
    case CU_FILE_IO_DISABLED:
      return "CU_FILE_IO_DISABLED (GPUDirect Storage is disabled by the configuration)";
    case CU_FILE_BATCH_SUBMIT_FAILED:
      return "CU_FILE_BATCH_SUBMIT_FAILED (batch submission failed)";
    case CU_FILE_GPU_MEMORY_PINNING_FAILED:
      return "CU_FILE_GPU_MEMORY_PINNING_FAILED (pinning GPU memory failed)";
    case CU_FILE_BATCH_FULL: return "CU_FILE_BATCH_FULL (the batch queue is full)";
    case CU_FILE_ASYNC_NOT_SUPPORTED:
      return "CU_FILE_ASYNC_NOT_SUPPORTED (asynchronous I/O is not supported)";
    case CU_FILE_INTERNAL_BATCH_SETUP_ERROR:
      return "CU_FILE_INTERNAL_BATCH_SETUP_ERROR (internal batch setup error)";
    case CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR:
      return "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR (internal batch submit error)";
    case CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR:
      return "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR (internal batch status error)";
    case CU_FILE_INTERNAL_BATCH_CANCEL_ERROR:
      return "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR (internal batch cancel error)";
    case CU_FILE_NOMEM_ERROR: return "CU_FILE_NOMEM_ERROR (out of memory)";
    case CU_FILE_IO_ERROR: return "CU_FILE_IO_ERROR (I/O error)";
    case CU_FILE_INTERNAL_BUF_REGISTER_ERROR:
      return "CU_FILE_INTERNAL_BUF_REGISTER_ERROR (internal buffer registration error)";
    case CU_FILE_HASH_OPR_ERROR: return "CU_FILE_HASH_OPR_ERROR (internal hash table error)";
    case CU_FILE_INVALID_CONTEXT_ERROR:
      return "CU_FILE_INVALID_CONTEXT_ERROR (invalid CUDA context)";
    case CU_FILE_NVFS_INTERNAL_DRIVER_ERROR:
      return "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR (internal nvidia-fs driver error)";
    case CU_FILE_BATCH_NOCOMPAT_ERROR:
      return "CU_FILE_BATCH_NOCOMPAT_ERROR (batch I/O is not available in compatibility mode)";
    case CU_FILE_IO_MAX_ERROR: return "CU_FILE_IO_MAX_ERROR (unknown cuFile error)";
  }
  return "unknown cuFile error";
}
