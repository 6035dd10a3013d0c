/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/local_choice.hpp>

#include <algorithm>
#include <thread>

#include <kvikio/detail/cufile_io.hpp>
#include <kvikio/detail/io_uring_io.hpp>
#include <kvikio/detail/posix_io.hpp>

namespace kvikio::detail {
namespace {

StagedBackend& staged_backend(bool reading, std::size_t size, std::size_t pool_threads)
{
  return io_uring_selected(reading, size, pool_threads) ? io_uring_backend() : posix_backend();
}

}  // namespace

bool io_uring_selected(bool reading, std::size_t size, std::size_t pool_threads)
{
  switch (defaults::local_io_backend()) {
    case LocalIOBackend::IO_URING: return io_uring_available();
    case LocalIOBackend::AUTO: {
      // io_uring's kernel workers copy on cores of their own: with more pool threads than half
      // the cores, POSIX reads measured as fast into host memory and faster into device memory
      // (16 threads on 16 cores: 36 GB/s against 42-50, docs/benchmarks.md).
      static std::size_t const cores = std::max(1U, std::thread::hardware_concurrency());
      return reading && size > io_uring_piece_size() && pool_threads * 2 <= cores &&
             io_uring_available();
    }
    default: return false;
  }
}

HostBackend& host_backend(bool reading, std::size_t size, std::size_t pool_threads)
{
  return staged_backend(reading, size, pool_threads);
}

DeviceBackend& device_backend(bool reading, std::size_t size, LocalFile const& file)
{
  if (file.cufile != nullptr) { return cufile_backend(); }
  return staged_backend(reading, size, file.pool_threads);
}

}  // namespace kvikio::detail
