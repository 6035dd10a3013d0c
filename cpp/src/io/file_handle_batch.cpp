/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/file_handle.hpp>

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_utils.hpp>

#include "core/observed_promise.hpp"
#include "io/file_state.hpp"
#include "io/local_plan.hpp"
#include "io/mover/mover.hpp"
#include "parallel/batch_plan.hpp"

namespace kvikio {
namespace {

// The pieces of a merged span, read in place with preadv(2) through the page cache, as many
// vectors at a time as the kernel takes, short reads continued.
void read_pieces(int fd, std::span<detail::SpanPiece const> pieces, std::size_t file_offset)
{
  std::size_t total = 0;
  for (auto const& p : pieces) {
    total += p.size;
  }
  std::vector<iovec> iov;
  std::size_t next = 0;  // the first piece not yet read whole
  std::size_t into = 0;  // bytes of that piece already read
  std::size_t done = 0;
  while (done < total) {
    iov.clear();
    for (std::size_t k = next; k < pieces.size() && iov.size() < IOV_MAX; ++k) {
      std::size_t const skip = k == next ? into : 0;
      iov.push_back({pieces[k].dst + skip, pieces[k].size - skip});
    }
    ssize_t const n = ::preadv(
      fd, iov.data(), static_cast<int>(iov.size()), static_cast<off_t>(file_offset + done));
    if (n < 0 && errno == EINTR) { continue; }
    if (n < 0) {
      detail::throw_system_error(errno,
                                 __FILE__,
                                 __LINE__,
                                 "preadv(fd " + std::to_string(fd) + ", " +
                                   std::to_string(total - done) + " bytes at offset " +
                                   std::to_string(file_offset + done) + ") failed");
    }
    if (n == 0) { detail::throw_read_past_end(fd, total - done, file_offset + done); }
    done += static_cast<std::size_t>(n);
    for (auto left = static_cast<std::size_t>(n); left > 0;) {
      std::size_t const here = std::min(left, pieces[next].size - into);
      left -= here;
      into += here;
      if (into == pieces[next].size) {
        ++next;
        into = 0;
      }
    }
  }
}

}  // namespace

std::vector<std::future<std::size_t>> FileHandle::batch_read(std::span<ReadRange const> ranges,
                                                             BatchReadOptions const& options)
{
  return file_batch_read(detail::requests_of<FileReadRequest>(this, ranges), options);
}

std::vector<std::future<std::size_t>> file_batch_read(std::span<FileReadRequest const> requests,
                                                      BatchReadOptions const& options)
{
  KVIKIO_NVTX_FUNC_RANGE();
  constexpr char const* what = "file_batch_read";
  ThreadPool* const pool =
    options.thread_pool != nullptr ? options.thread_pool : &defaults::thread_pool();
  std::size_t const pool_threads = pool->get_thread_count();
  // Each file once: its lease (taken before anything starts, held by every merged read of the
  // batch) and its descriptors for reading as they are now.
  struct Source {
    FileHandle* handle;
    std::shared_ptr<void> lease;
    detail::FileState* state;
    detail::LocalFile file;
  };
  std::vector<Source> sources;
  auto const source_of =
    detail::source_indices(requests, what, [&](FileHandle& h, char const* which) {
      auto lease = h.enter(which);
      h.check_allowed(FileHandle::Direction::read);
      sources.push_back({&h,
                         std::move(lease),
                         h.state_.get(),
                         h.local_file(FileHandle::Direction::read, pool_threads)});
    });
  std::vector<detail::BatchRange> ranges;
  ranges.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto const& q           = requests[i];
    FileHandle const& h     = *q.handle;
    std::string const which = std::string{what} + " request " + std::to_string(i);
    h.check_range(q.buf, q.size, q.file_offset, which.c_str());
    auto const& source = sources[source_of[i]];
    if (q.size > 0 && q.file_offset + q.size > source.state->nbytes.load()) {
      // The file may have grown since the handle last looked.
      std::size_t const now = get_file_size(source.file.fd);
      KVIKIO_EXPECT(q.file_offset + q.size <= now,
                    "cannot read " + std::to_string(q.file_offset) + "+" + std::to_string(q.size) +
                      " bytes of a " + std::to_string(now) + " bytes file (" + h.path_ +
                      "): " + which + " runs past the end",
                    std::invalid_argument);
    }
    ranges.push_back({source_of[i],
                      detail::batch_destination(q.buf, q.size, what, i),
                      {q.buf, q.size, q.file_offset}});
  }
  return detail::run_batch(
    ranges,
    options,
    {.read_one =
       [sources](detail::BatchRange const& r, std::size_t task_size, ThreadPool* pool) {
         auto const& [buf, size, file_offset] = r.range;
         return sources[r.source].handle->pread(
           buf, size, file_offset, task_size, defaults::gds_threshold(), true, pool);
       },
     .read_span =
       [sources, pool, pool_threads](
         std::size_t source, void* host, std::size_t size, std::size_t file_offset) {
         auto const& s = sources[source];
         // A merged run is a pool task: the pool's backlog chooses its mover as a call's does.
         (void)detail::host_transfer(
           detail::host_mover(true, size, pool_threads, pool->is_backlogged()),
           true,
           *s.state,
           s.file,
           {static_cast<std::byte*>(host), size, file_offset});
       },
     .read_pieces =
       [sources](
         std::size_t source, std::span<detail::SpanPiece const> pieces, std::size_t file_offset) {
         read_pieces(sources[source].file.fd, pieces, file_offset);
       },
     .observe =
       [sources](detail::BatchRange const& r) {
         return detail::observe_call(IoBackend::POSIX,
                                     TransferDirection::READ,
                                     r.context == nullptr ? MemoryKind::HOST : MemoryKind::DEVICE,
                                     r.range.file_offset,
                                     r.range.size,
                                     sources[r.source].handle->source_);
       }});
}

}  // namespace kvikio
