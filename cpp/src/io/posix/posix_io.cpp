/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/posix_io.hpp>

namespace kvikio::detail {
namespace {

class PosixBackend final : public StagedBackend {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "posix"; }
  [[nodiscard]] bool deep_queue() const noexcept override { return false; }

 protected:
  void transfer_all(bool read,
                    int fd,
                    std::byte* buf,
                    std::size_t size,
                    std::size_t offset,
                    bool /*buffered*/) override
  {
    transfer_by_syscalls(read, fd, buf, size, offset);
  }
};

}  // namespace

StagedBackend& posix_backend() noexcept
{
  static PosixBackend backend;
  return backend;
}

}  // namespace kvikio::detail
