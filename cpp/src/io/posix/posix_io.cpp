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
                    LocalFile const& file,
                    bool buffered,
                    std::byte* buf,
                    std::size_t size,
                    std::size_t offset) override
  {
    transfer_by_syscalls(read, descriptor(file, buffered), buf, size, offset);
  }
};

}  // namespace

StagedBackend& posix_backend() noexcept
{
  static auto* const backend = new PosixBackend();  // never destroyed: used until exit
  return *backend;
}

}  // namespace kvikio::detail
