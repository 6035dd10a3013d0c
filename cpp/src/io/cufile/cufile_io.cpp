/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/cufile/cufile_io.hpp"

#include <sys/types.h>

#include <cerrno>
#include <string>

#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cufile.hpp>

namespace kvikio::detail {
namespace {

// The result of a cuFile read or write: bytes, -1 with errno, or a negated cuFile error.
std::size_t cufile_bytes(ssize_t ret, std::size_t size, std::size_t file_offset, char const* what)
{
  if (ret == -1) { throw_system_error(errno, __FILE__, __LINE__, std::string{what} + " failed"); }
  if (ret < 0) {
    throw CUfileException{std::string{"KvikIO: "} + what + " failed: " +
                          cufile_error_description(static_cast<int>(-ret), CUDA_SUCCESS)};
  }
  if (static_cast<std::size_t>(ret) < size) {
    throw EndOfFileError("POSIX error on pread: EOF (KvikIO: " + std::string{what} + " moved " +
                         std::to_string(ret) + " of " + std::to_string(size) + " bytes at offset " +
                         std::to_string(file_offset) + ": end of file?)");
  }
  return static_cast<std::size_t>(ret);
}

}  // namespace

std::size_t cufile_transfer(bool read,
                            LocalFile const& file,
                            void* base,
                            std::size_t base_offset,
                            std::size_t size,
                            std::size_t file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  if (size == 0) { return 0; }
  auto& api = cuFileAPI::instance();
  if (read) {
    ssize_t const ret = api.Read(
      file.cufile, base, size, static_cast<off_t>(file_offset), static_cast<off_t>(base_offset));
    return cufile_bytes(ret, size, file_offset, "cuFileRead");
  }
  ssize_t const ret = api.Write(
    file.cufile, base, size, static_cast<off_t>(file_offset), static_cast<off_t>(base_offset));
  return cufile_bytes(ret, size, file_offset, "cuFileWrite");
}

}  // namespace kvikio::detail
