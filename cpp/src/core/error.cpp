/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/error.hpp>

#include <cerrno>
#include <string>
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
      return "CUDA_ERROR_STUB_LIBRARY (the loaded libcuda.so.1 is the toolkit's stub, not a "
             "CUDA driver)";
    }
    char const* name        = nullptr;
    char const* description = nullptr;
    if (is_cuda_available()) {
      auto& api = cudaAPI::instance();
      api.GetErrorName(result, &name);
      api.GetErrorString(result, &description);
    }
    std::string text = name != nullptr ? name : "CUresult " + std::to_string(result);
    if (description != nullptr) { text += std::string{" ("} + description + ")"; }
    return text;
  } catch (...) {
    return "CUresult " + std::to_string(static_cast<int>(result));
  }
}

std::string cufile_error_description(int cufile_err, CUresult cu_err) noexcept
{
  try {
    std::string text = "cuFile error " + std::to_string(cufile_err);
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
    if (err > CUFILEOP_BASE_ERR) { return "cuFile error " + std::to_string(err); }
    return std::generic_category().message(static_cast<int>(err));
  } catch (...) {
    return "error " + std::to_string(err);
  }
}

void throw_system_error(int err, char const* file, int line, std::string const& msg)
{
  std::string text = failure_location(file, line);
  if (!msg.empty()) { text += msg; }
  throw GenericSystemError(err, text);
}

}  // namespace detail
}  // namespace kvikio
