/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/cufile_io.hpp>

#include <sys/types.h>

#include <cerrno>
#include <string>

#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/utils.hpp>
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

// cuFile takes the whole of what it is given in one request: with GPUDirect Storage the DMA
// needs no staging to overlap, so the threads of a parallel read each get one range.
class CuFileBackend final : public DeviceBackend {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "cufile"; }
  [[nodiscard]] bool shares_chunks() const noexcept override { return false; }

  std::size_t read_device(LocalFile const& file,
                          void* base,
                          std::size_t base_offset,
                          std::size_t file_offset,
                          ChunkCursor& cursor) override
  {
    KVIKIO_NVTX_FUNC_RANGE();
    std::size_t moved = 0;
    while (auto const chunk = cursor.take(cursor.size())) {
      std::size_t const at = file_offset + chunk->first;
      ssize_t const ret =
        cuFileAPI::instance().Read(file.cufile,
                                   base,
                                   chunk->length,
                                   static_cast<off_t>(at),
                                   static_cast<off_t>(base_offset + chunk->first));
      moved += cufile_bytes(ret, chunk->length, at, "cuFileRead");
    }
    return moved;
  }

  std::size_t write_device(LocalFile const& file,
                           void const* base,
                           std::size_t base_offset,
                           std::size_t size,
                           std::size_t file_offset) override
  {
    KVIKIO_NVTX_FUNC_RANGE();
    ssize_t const ret = cuFileAPI::instance().Write(
      file.cufile, base, size, static_cast<off_t>(file_offset), static_cast<off_t>(base_offset));
    return cufile_bytes(ret, size, file_offset, "cuFileWrite");
  }
};

}  // namespace

DeviceBackend& cufile_backend() noexcept
{
  static detail::BuiltOnce<CuFileBackend> backend;  // never destroyed: used until exit
  return backend.get([] { return new CuFileBackend(); });
}

}  // namespace kvikio::detail
