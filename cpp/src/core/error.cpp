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
namespace {

// "<kind> at: <file>:<line>: ", the start of every located error message.
std::string located(char const* kind, char const* file, int line)
{
  return std::string{kind} + " at: " + file + ":" + std::to_string(line) + ": ";
}

}  // namespace

std::string failure_location(char const* file, int line)
{
  return located("KvikIO failure", file, line);
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
  return located("CUDA error", file, line) + cuda_error_description(result);
}

std::string cufile_error_message(CUfileError_t error, char const* file, int line)
{
  if (error.err == CU_FILE_CUDA_DRIVER_ERROR && error.cu_err != CUDA_SUCCESS) {
    return cuda_error_message(error.cu_err, file, line);
  }
  return located("cuFile error", file, line) + cufileop_status_error(error.err);
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

std::string bytes_done_error_message(long err, char const* file, int line)
{
  return located("cuFile error", file, line) +
         (err > CUFILEOP_BASE_ERR
            ? std::string{cufileop_status_error(static_cast<CUfileOpError>(err))}
            : std::generic_category().message(static_cast<int>(err)));
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
#define KVIKIO_DETAIL_CUFILE_TEXT(name, value, meaning) \
  case name: return #name " (" meaning ")";
    KVIKIO_CUFILE_OP_ERRORS(KVIKIO_DETAIL_CUFILE_TEXT)
#undef KVIKIO_DETAIL_CUFILE_TEXT
  }
  return "unknown cuFile error";
}
