/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/io_uring/io_uring_io.hpp"

#include <cstddef>
#include <optional>
#include <string_view>

#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/utils.hpp>

#include "io/io_uring/thread_ring.hpp"
#include "io/mover/mover.hpp"

namespace kvikio::detail {
namespace {

using uring::this_thread_ring;

// Moves bytes through this thread's ring; a thread whose ring was refused moves them by system
// calls (this_thread_ring_object() logged why).
class IoUringMover final : public ByteMover {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "io_uring"; }

  void move_all(bool read, LocalFile const& file, bool buffered, HostPiece piece) override
  {
    int const fd = file.descriptor(buffered);
    if (this_thread_ring() == nullptr) {
      move_by_syscalls(read, fd, piece.buf, piece.size, piece.offset);
    } else {
      io_uring_transfer_all(
        read, fd, piece.buf, piece.size, piece.offset, buffered, file.pool_threads);
    }
  }

  // Buffered reads: a deeper staging whose slots all have requests in flight at once.
  std::optional<std::size_t> read_to_device(LocalFile const& file,
                                            CUdeviceptr dev,
                                            std::size_t file_offset,
                                            ChunkCursor& cursor,
                                            CUstream stream) override
  {
    if (file.direct() || cursor.size() == 0 || this_thread_ring() == nullptr) {
      return std::nullopt;
    }
    KVIKIO_NVTX_FUNC_RANGE();
    return io_uring_read_to_device(file.fd, dev, file_offset, cursor, stream, file.pool_threads);
  }
};

}  // namespace

ByteMover& io_uring_mover() noexcept
{
  static detail::BuiltOnce<IoUringMover> mover;  // never destroyed: used until exit
  return mover.get([] { return new IoUringMover(); });
}

}  // namespace kvikio::detail
