/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/io_uring_io.hpp>

#include <cstddef>
#include <string_view>

#include <kvikio/detail/local_backend.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "thread_ring.hpp"

namespace kvikio::detail {
namespace {

using uring::this_thread_ring;

// The staged algorithms over this thread's ring; a thread whose ring was refused moves its bytes
// by system calls (this_thread_ring_object() logged why).
class IoUringBackend final : public StagedBackend {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "io_uring"; }
  [[nodiscard]] bool deep_queue() const noexcept override { return true; }
  // Buffered reads: a deeper staging whose slots all have requests in flight at once.
  std::size_t read_device(LocalFile const& file,
                          void* base,
                          std::size_t base_offset,
                          std::size_t file_offset,
                          ChunkCursor& cursor) override
  {
    if (file.fd_direct >= 0 || cursor.size() == 0 || this_thread_ring() == nullptr) {
      return StagedBackend::read_device(file, base, base_offset, file_offset, cursor);
    }
    KVIKIO_NVTX_FUNC_RANGE();
    return io_uring_read_to_device(file.fd,
                                   convert_void2deviceptr(base) + base_offset,
                                   file_offset,
                                   cursor,
                                   current_context_stream(),
                                   file.pool_threads);
  }

 protected:
  void transfer_all(bool read,
                    LocalFile const& file,
                    bool buffered,
                    std::byte* buf,
                    std::size_t size,
                    std::size_t offset) override
  {
    int const fd = descriptor(file, buffered);
    if (this_thread_ring() == nullptr) {
      transfer_by_syscalls(read, fd, buf, size, offset);
    } else {
      io_uring_transfer_all(read, fd, buf, size, offset, buffered, file.pool_threads);
    }
  }
};

}  // namespace

StagedBackend& io_uring_backend() noexcept
{
  static detail::BuiltOnce<IoUringBackend> backend;  // never destroyed: used until exit
  return backend.get([] { return new IoUringBackend(); });
}

}  // namespace kvikio::detail
