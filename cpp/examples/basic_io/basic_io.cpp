/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * basic_io: what KvikIO sees on this machine, then a parallel read of a file of random bytes on
 * KvikIO's thread pool, checked byte for byte.
 *
 *   basic_io [--size BYTES] [--dir DIRECTORY]
 *
 * Settings come from the KVIKIO_* environment variables (docs/settings.md).
 */
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <iostream>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/version_config.hpp>

namespace {

// Deterministic pseudo-random bytes (splitmix64): the file's content and, independently, the
// reference it is checked against.
void fill_random(std::uint8_t* out, std::size_t nbytes, std::size_t offset)
{
  for (std::size_t i = 0; i < nbytes; ++i) {
    std::uint64_t z = (offset + i) / 8 * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
    z               = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z               = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    out[i] = static_cast<std::uint8_t>(z >> (8 * ((offset + i) % 8)));
  }
}

void print_environment()
{
  using kvikio::defaults;
  std::cout << "KvikIO " << KVIKIO_VERSION_MAJOR << "." << KVIKIO_VERSION_MINOR << "."
            << KVIKIO_VERSION_PATCH << "\n"
            << "settings:\n"
            << "  compat_mode          " << static_cast<int>(defaults::compat_mode())
            << " (0=OFF 1=ON 2=AUTO)\n"
            << "  num_threads          " << defaults::thread_pool_nthreads() << "\n"
            << "  task_size            " << defaults::task_size() << "\n"
            << "  gds_threshold        " << defaults::gds_threshold() << "\n"
            << "  bounce_buffer_size   " << defaults::bounce_buffer_size() << "\n"
            << "  num_bounce_buffers   " << defaults::num_bounce_buffers() << "\n"
            << "  local_io_backend     "
            << (defaults::local_io_backend() == kvikio::LocalIOBackend::POSIX ? "posix"
                                                                              : "io_uring")
            << "\n"
            << "  remote_backend       "
            << (defaults::remote_backend() == kvikio::RemoteBackendType::LIBCURL_EASY
                  ? "LIBCURL_EASY"
                  : "LIBCURL_MULTI_POLL")
            << "\n"
            << "  http_max_attempts    " << defaults::http_max_attempts() << "\n"
            << "  http_timeout         " << defaults::http_timeout() << " s\n";

  if (kvikio::is_cuda_available()) {
    auto& api  = kvikio::cudaAPI::instance();
    int driver = 0, count = 0;
    KVIKIO_CUDA_DRIVER_TRY(api.DriverGetVersion(&driver));
    KVIKIO_CUDA_DRIVER_TRY(api.DeviceGetCount(&count));
    std::cout << "CUDA driver: found, version " << driver / 1000 << "." << driver % 1000 / 10
              << ", " << count << " GPU(s)\n";
    for (int i = 0; i < count; ++i) {
      CUdevice device{};
      char name[256] = {};
      KVIKIO_CUDA_DRIVER_TRY(api.DeviceGet(&device, i));
      KVIKIO_CUDA_DRIVER_TRY(api.DeviceGetName(name, sizeof(name), device));
      std::cout << "  GPU " << i << ": " << name << "\n";
    }
  } else {
    std::cout << "CUDA driver: not usable (" << kvikio::detail::cuda_unavailable_reason()
              << "); host memory only\n";
  }
  if (kvikio::is_cufile_library_available()) {
    std::cout << "cuFile: libcufile.so.0 found, version " << kvikio::cufile_version() << "\n";
  } else {
    std::cout << "cuFile: not available (" << kvikio::detail::cufile_unavailable_reason() << ")\n";
  }
}

}  // namespace

int main(int argc, char** argv)
{
  std::size_t nbytes = std::size_t{256} << 20;
  std::string dir    = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string const flag = argv[i];
    if (flag == "--size") {
      nbytes = std::stoull(argv[i + 1]);
    } else if (flag == "--dir") {
      dir = argv[i + 1];
    } else {
      std::cerr << "unknown option " << flag << "\nusage: basic_io [--size BYTES] [--dir DIR]\n";
      return 2;
    }
  }

  try {
    print_environment();

    // Write the file with plain POSIX calls, independently of the library.
    std::string path = dir + "/kvikio-basic-io-XXXXXX";
    int const fd     = ::mkstemp(path.data());
    KVIKIO_SYSCALL_CHECK(fd, "mkstemp(" + path + ")");
    ::unlink(path.c_str());  // the file disappears when the descriptor is closed
    {
      std::vector<std::uint8_t> block(std::size_t{1} << 20);
      for (std::size_t off = 0; off < nbytes; off += block.size()) {
        auto const n = std::min(block.size(), nbytes - off);
        fill_random(block.data(), n, off);
        KVIKIO_EXPECT(
          ::pwrite(fd, block.data(), n, static_cast<off_t>(off)) == static_cast<ssize_t>(n),
          "short write while generating the file");
      }
    }

    // Read it back in task_size chunks on the thread pool, into a poisoned buffer.
    std::vector<std::uint8_t> data(nbytes, 0xA5);
    auto& pool           = kvikio::defaults::thread_pool();
    auto const task_size = kvikio::defaults::task_size();
    auto const start     = std::chrono::steady_clock::now();
    std::vector<std::future<void>> tasks;
    for (std::size_t off = 0; off < nbytes; off += task_size) {
      auto const n = std::min(task_size, nbytes - off);
      tasks.push_back(pool.submit_task([fd, off, n, &data] {
        KVIKIO_NVTX_SCOPED_RANGE("basic_io read chunk");
        std::size_t done = 0;
        while (done < n) {
          ssize_t const got =
            ::pread(fd, data.data() + off + done, n - done, static_cast<off_t>(off + done));
          KVIKIO_SYSCALL_CHECK(got, "pread");
          KVIKIO_EXPECT(got > 0, "unexpected end of file");
          done += static_cast<std::size_t>(got);
        }
      }));
    }
    for (auto& t : tasks) {
      t.get();
    }
    double const seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ::close(fd);

    std::vector<std::uint8_t> expected(std::size_t{1} << 20);
    for (std::size_t off = 0; off < nbytes; off += expected.size()) {
      auto const n = std::min(expected.size(), nbytes - off);
      fill_random(expected.data(), n, off);
      if (std::memcmp(expected.data(), data.data() + off, n) != 0) {
        std::cerr << "MISMATCH in the MiB at offset " << off << "\n";
        return 1;
      }
    }
    std::cout << "read " << nbytes << " bytes with " << pool.get_thread_count() << " thread(s) in "
              << tasks.size() << " tasks: " << nbytes / seconds / 1e9
              << " GB/s, every byte verified\n";
  } catch (std::exception const& e) {
    std::cerr << "basic_io failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
