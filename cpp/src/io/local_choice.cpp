/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/local_choice.hpp>

#include <algorithm>
#include <string>
#include <thread>

#include <kvikio/detail/cufile_io.hpp>
#include <kvikio/detail/io_uring_io.hpp>
#include <kvikio/detail/posix_io.hpp>
#include <kvikio/shim/cufile.hpp>

namespace kvikio::detail {
namespace {

unsigned int machine_cores() noexcept { return std::max(1U, std::thread::hardware_concurrency()); }

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
      static std::size_t const cores = machine_cores();
      return reading && size > io_uring_piece_size() && pool_threads * 2 <= cores &&
             io_uring_available();
    }
    default: return false;
  }
}

std::string gds_unavailable_reason()
{
  if (is_gds_available()) { return {}; }
  if (!is_cufile_library_available()) { return cufile_unavailable_reason(); }
  if (!is_nvidia_fs_loaded()) {
    return "GPUDirect Storage is not available (nvidia-fs is not loaded), so cuFile would only "
           "run its own POSIX fallback";
  }
  // The driver was opened to ask.
  return is_cufile_usable()
           ? "GPUDirect Storage is not available (cuFile's driver reports no nvidia-fs)"
           : cufile_unusable_reason();
}

LocalBackendChoice local_backend_choice(std::size_t pool_threads)
{
  auto const setting      = defaults::local_io_backend();
  std::string const piece = std::to_string(io_uring_piece_size() >> 10) + " KiB";
  if (setting == LocalIOBackend::POSIX) { return {"posix", "KVIKIO_LOCAL_IO_BACKEND=posix"}; }
  if (!io_uring_available()) {
    return {"posix",
            std::string{"io_uring cannot be set up in this process (KVIKIO_LOCAL_IO_BACKEND="} +
              local_io_backend_name(setting) + ")"};
  }
  if (setting == LocalIOBackend::IO_URING) {
    return {"io_uring", "KVIKIO_LOCAL_IO_BACKEND=io_uring"};
  }
  std::string const pool = "a pool of " + std::to_string(pool_threads) +
                           (pool_threads == 1 ? " thread on " : " threads on ") +
                           std::to_string(machine_cores()) + " cores";
  if (io_uring_selected(true, io_uring_piece_size() + 1, pool_threads)) {
    return {"io_uring",
            "KVIKIO_LOCAL_IO_BACKEND=auto: reads of more than " + piece + " with " + pool +
              " (at most half); writes and smaller reads through posix"};
  }
  return {"posix",
          "KVIKIO_LOCAL_IO_BACKEND=auto: " + pool +
            " (io_uring's kernel workers need cores of their own: it serves pools of at most "
            "half the cores)"};
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
