/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/local_backend.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/stream_cache.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

std::string file_size_text(int fd)
{
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? std::to_string(st.st_size) : std::string{"unknown"};
}

}  // namespace

std::size_t transfer_once(bool read, int fd, void* buf, std::size_t size, std::size_t offset)
{
  while (true) {
    ssize_t const n = read ? ::pread(fd, buf, size, static_cast<off_t>(offset))
                           : ::pwrite(fd, buf, size, static_cast<off_t>(offset));
    if (n >= 0) { return static_cast<std::size_t>(n); }
    if (errno == EINTR) { continue; }
    throw_system_error(errno,
                       __FILE__,
                       __LINE__,
                       std::string{read ? "pread" : "pwrite"} + "(" + fd_for_message(fd) + ", " +
                         std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                         ") failed");
  }
}

std::byte* aligned_scratch(std::size_t& size)
{
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  thread_local std::unique_ptr<std::byte, Free> buffer;
  thread_local std::size_t buffer_size = 0;
  std::size_t const wanted = detail::staging_buffer_size() / get_page_size() * get_page_size();
  if (buffer_size != wanted) {
    buffer.reset(static_cast<std::byte*>(std::aligned_alloc(get_page_size(), wanted)));
    if (!buffer) { throw std::bad_alloc(); }
    buffer_size = wanted;
  }
  size = buffer_size;
  return buffer.get();
}

std::string fd_for_message(int fd)
{
  int const error  = errno;  // the caller's, which it may not have read yet
  std::string text = "fd " + std::to_string(fd);
  char target[4096];
  std::string const link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t const n        = ::readlink(link.c_str(), target, sizeof(target));
  if (n > 0 && static_cast<std::size_t>(n) < sizeof(target)) {
    text += " (" + std::string{target, static_cast<std::size_t>(n)} + ")";
  }
  errno = error;
  return text;
}

void throw_read_past_end(int fd, std::size_t size, std::size_t offset)
{
  throw EndOfFileError(
    "POSIX error on pread: EOF (KvikIO: read past the end of the file: " + std::to_string(size) +
    " bytes at offset " + std::to_string(offset) + " requested, " + fd_for_message(fd) + " has " +
    file_size_text(fd) + " bytes)");
}

CUstream StagedBackend::current_context_stream()
{
  CUcontext ctx{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&ctx));
  KVIKIO_EXPECT(
    ctx != nullptr, "device-memory I/O needs a current CUDA context", std::invalid_argument);
  return stream_for_this_thread(ctx);
}

void StagedBackend::transfer_by_syscalls(
  bool read, int fd, std::byte* buf, std::size_t size, std::size_t offset)
{
  std::size_t done = 0;
  while (done < size) {
    std::size_t const n = transfer_once(read, fd, buf + done, size - done, offset + done);
    if (n == 0) {
      if (read) { throw_read_past_end(fd, size, offset); }
      throw_system_error(EIO, __FILE__, __LINE__, "pwrite wrote nothing");
    }
    done += n;
  }
}

// The page-aligned middle [pos, pos + length) through the O_DIRECT descriptor. Returns how many
// bytes went through it; less than `length` when the file ends (reads) or O_DIRECT is refused.
std::size_t StagedBackend::transfer_direct(
  bool read, LocalFile const& file, std::byte* buf, std::size_t length, std::size_t offset)
{
  if (length > 0 && deep_queue() &&
      is_aligned(reinterpret_cast<std::uintptr_t>(buf), get_page_size())) {
    try {  // many requests in flight
      transfer_all(read, file, false, buf, length, offset);
      return length;
    } catch (GenericSystemError const& e) {
      if (e.code().value() == EINVAL) { return 0; }  // refused here: the caller goes buffered
      throw;
    } catch (EndOfFileError const&) {
      return 0;  // the file ends inside: the buffered path finds where, and says so
    }
  }
  std::size_t done = 0;
  while (done < length) {
    std::byte* target  = buf + done;
    std::size_t n      = length - done;
    std::byte* scratch = nullptr;
    if (!is_aligned(reinterpret_cast<std::uintptr_t>(target), get_page_size())) {
      std::size_t scratch_size = 0;
      scratch                  = aligned_scratch(scratch_size);
      n                        = std::min(n, scratch_size);
      if (!read) { std::memcpy(scratch, target, n); }
    }
    std::size_t got = 0;
    try {
      got = transfer_once(
        read, file.fd_direct, scratch != nullptr ? scratch : target, n, offset + done);
    } catch (GenericSystemError const& e) {
      if (e.code().value() == EINVAL) { return done; }  // refused here: the caller goes buffered
      throw;
    }
    if (read && scratch != nullptr) { std::memcpy(target, scratch, got); }
    done += got;
    if (got < n) { break; }  // end of file, or a partial transfer: finish buffered
  }
  return done;
}

std::size_t StagedBackend::host_io(
  bool read, LocalFile const& file, std::byte* buf, std::size_t size, std::size_t offset)
{
  if (size == 0) { return 0; }
  KVIKIO_EXPECT(buf != nullptr,
                "null buffer for a transfer of " + std::to_string(size) + " bytes",
                std::invalid_argument);
  auto const buffered = [&](std::byte* at, std::size_t n, std::size_t where) {
    if (n > 0) { transfer_all(read, file, true, at, n, where); }
  };
  if (file.fd_direct < 0) {
    buffered(buf, size, offset);
    return size;
  }
  std::size_t const page = get_page_size();
  // Head: up to the first page boundary of the file.
  std::size_t const head = std::min(size, (page - offset % page) % page);
  buffered(buf, head, offset);
  std::size_t pos = head;
  // Middle: whole pages, direct.
  std::size_t const middle = (size - pos) / page * page;
  pos += transfer_direct(read, file, buf + pos, middle, offset + pos);
  // Tail (and whatever the direct part left): buffered, or for reads a whole page, direct.
  std::size_t const rest = size - pos;
  if (read && file.overread && rest > 0 && rest < page && is_aligned(offset + pos, page)) {
    std::size_t scratch_size = 0;
    std::byte* scratch       = aligned_scratch(scratch_size);
    std::size_t got          = 0;
    try {
      got = transfer_once(read, file.fd_direct, scratch, page, offset + pos);
    } catch (GenericSystemError const& e) {
      if (e.code().value() != EINVAL) { throw; }
    }
    std::size_t const used = std::min(got, rest);
    std::memcpy(buf + pos, scratch, used);
    pos += used;
  }
  buffered(buf + pos, size - pos, offset + pos);
  return size;
}

std::size_t StagedBackend::read_host(LocalFile const& file,
                                     void* buf,
                                     std::size_t size,
                                     std::size_t offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  return host_io(true, file, static_cast<std::byte*>(buf), size, offset);
}

std::size_t StagedBackend::write_host(LocalFile const& file,
                                      void const* buf,
                                      std::size_t size,
                                      std::size_t offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  // The bytes are only read; host_io takes one pointer type for both directions.
  return host_io(false, file, static_cast<std::byte*>(const_cast<void*>(buf)), size, offset);
}

// The ring spans one task (defaults::task_size()), as one task's buffer would: what all the
// threads stage at once then stays in the CPU caches, from which the copies to the device read
// (16 threads with 16 MiB rings read 0.8x of 4 MiB ones on an H100, docs/benchmarks.md).
StagingRingShape staging_ring_shape()
{
  std::size_t const k = defaults::num_bounce_buffers();
  return {k, defaults::task_size() / k};
}

// Reads the cursor's chunks through this thread's ring of pinned slots: reading the next chunk
// from the file overlaps the copy of the current one.
std::size_t StagedBackend::read_device(LocalFile const& file,
                                       void* base,
                                       std::size_t base_offset,
                                       std::size_t file_offset,
                                       ChunkCursor& cursor)
{
  KVIKIO_NVTX_FUNC_RANGE();
  if (cursor.size() == 0) { return 0; }
  CUstream const stream    = current_context_stream();
  auto* const dev          = static_cast<std::byte*>(base) + base_offset;
  auto const [k, max_slot] = staging_ring_shape();
  auto& pool               = BounceBufferPool<>::instance();
  if (cursor.size() <= BounceBufferRing<>::slot_size_for(pool.buffer_size(), k, max_slot)) {
    // One chunk in all (the read a column reader issues most): one buffer, one copy, one wait
    // on the stream, none of the ring's events. The smallest of the pool's buffers that holds
    // it: a 64 KiB read holds 64 KiB of pinned memory, not a bounce buffer, on every thread that
    // reads (the buffer's own size decides: the setting may change meanwhile).
    auto const buffer = pool.part_pool_for(cursor.size()).get();
    if (cursor.size() <= buffer.size()) {
      auto const chunk = cursor.take(cursor.size());
      if (!chunk) { return 0; }
      auto* const slot = static_cast<std::byte*>(buffer.get());
      host_io(true, file, slot, chunk->length, file_offset + chunk->first);
      auto& api = cudaAPI::instance();
      KVIKIO_CUDA_DRIVER_TRY(api.MemcpyHtoDAsync(
        convert_void2deviceptr(dev + chunk->first), slot, chunk->length, stream));
      KVIKIO_CUDA_DRIVER_TRY(api.StreamSynchronize(stream));
      return chunk->length;
    }
  }
  BounceBufferRing<> ring{k, 1, max_slot};
  std::size_t moved = 0;
  while (auto const chunk = cursor.take(ring.slot_size())) {
    auto* slot = static_cast<std::byte*>(ring.next());
    host_io(true, file, slot, chunk->length, file_offset + chunk->first);
    ring.submit_h2d(convert_void2deviceptr(dev + chunk->first), chunk->length, stream);
    moved += chunk->length;
  }
  ring.finish();
  return moved;
}

// Writes through this thread's ring: up to num_slots() device-to-host copies run ahead of the
// file writes.
std::size_t StagedBackend::write_device(LocalFile const& file,
                                        void const* base,
                                        std::size_t base_offset,
                                        std::size_t size,
                                        std::size_t file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  if (size == 0) { return 0; }
  CUstream const stream = current_context_stream();
  auto* const dev       = static_cast<std::byte const*>(base) + base_offset;
  BounceBufferRing<> ring{defaults::num_bounce_buffers()};
  std::size_t const chunk = ring.slot_size();
  struct Pending {
    std::size_t slot, offset, n;
  };
  std::deque<Pending> pending;
  auto write_oldest = [&] {
    auto const p = pending.front();
    pending.pop_front();
    host_io(false, file, static_cast<std::byte*>(ring.wait(p.slot)), p.n, file_offset + p.offset);
  };
  for (std::size_t done = 0; done < size;) {
    std::size_t const n = std::min(chunk, size - done);
    if (pending.size() == ring.num_slots()) { write_oldest(); }
    pending.push_back({ring.submit_d2h(convert_void2deviceptr(dev + done), n, stream), done, n});
    done += n;
  }
  while (!pending.empty()) {
    write_oldest();
  }
  return size;
}

}  // namespace kvikio::detail
