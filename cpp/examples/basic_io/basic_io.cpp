/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * basic_io: what KvikIO sees on this machine, then a round trip through FileHandle: a file of
 * random bytes written with pwrite from host memory, read back with pread into device memory
 * when a GPU is present (host memory otherwise), and checked byte for byte.
 *
 *   basic_io [--size BYTES] [--dir DIRECTORY]
 *
 * Settings come from the KVIKIO_* environment variables (docs/settings.md).
 */
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/effective_settings.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>
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

int device_count()
{
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(kvikio::cudaAPI::instance().DeviceGetCount(&count));
  return count;
}

// The library's version, what it made of its settings (public API: effective_settings.hpp),
// and the GPUs it sees.
void print_environment()
{
  std::cout << "KvikIO " << KVIKIO_VERSION_MAJOR << "." << KVIKIO_VERSION_MINOR << "."
            << KVIKIO_VERSION_PATCH << "\nsettings (effective; configured and why where they "
            << "differ):\n"
            << kvikio::effective_settings_report();
  if (!kvikio::is_cuda_available()) {
    try {
      (void)kvikio::cudaAPI::instance();  // says why there is no driver
    } catch (std::exception const& e) {
      std::cout << "CUDA driver: not usable (" << e.what() << "); host memory only\n";
    }
    return;
  }
  auto& api  = kvikio::cudaAPI::instance();
  int driver = 0, count = 0;
  KVIKIO_CUDA_DRIVER_TRY(api.DriverGetVersion(&driver));
  KVIKIO_CUDA_DRIVER_TRY(api.DeviceGetCount(&count));
  std::cout << "CUDA driver: found, version " << driver / 1000 << "." << driver % 1000 / 10 << ", "
            << count << " GPU(s)\n";
  for (int i = 0; i < count; ++i) {
    CUdevice device{};
    char name[256] = {};
    KVIKIO_CUDA_DRIVER_TRY(api.DeviceGet(&device, i));
    KVIKIO_CUDA_DRIVER_TRY(api.DeviceGetName(name, sizeof(name), device));
    std::cout << "  GPU " << i << ": " << name << "\n";
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
    bool const on_gpu = kvikio::is_cuda_available() && device_count() > 0;

    std::string path = dir + "/kvikio-basic-io-XXXXXX";
    int const tmp_fd = ::mkstemp(path.data());
    KVIKIO_SYSCALL_CHECK(tmp_fd, "mkstemp(" + path + ")");
    ::close(tmp_fd);

    // Write: random bytes from host memory, in parallel.
    std::vector<std::uint8_t> data(nbytes);
    fill_random(data.data(), nbytes, 0);
    auto seconds = [](auto start) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    auto start = std::chrono::steady_clock::now();
    {
      kvikio::FileHandle out{path, "w"};
      KVIKIO_EXPECT(out.pwrite(data.data(), nbytes).get() == nbytes, "short write");
    }
    double const write_s = seconds(start);

    // Read back into poisoned memory: device memory on a GPU, host memory otherwise.
    std::vector<std::uint8_t> back(nbytes, 0xA5);
    kvikio::FileHandle in{path, "r"};
    double read_s = 0;
    if (on_gpu) {
      auto& api = kvikio::cudaAPI::instance();
      kvikio::PushAndPopContext const context{kvikio::get_primary_cuda_context(0)};
      CUdeviceptr dev{};
      KVIKIO_CUDA_DRIVER_TRY(api.MemAlloc(&dev, std::max<std::size_t>(nbytes, 1)));
      KVIKIO_CUDA_DRIVER_TRY(api.MemsetD8(dev, 0xA5, nbytes));
      start                 = std::chrono::steady_clock::now();
      std::size_t const got = in.pread(reinterpret_cast<void*>(dev), nbytes).get();
      read_s                = seconds(start);
      KVIKIO_EXPECT(got == nbytes, "short read");
      KVIKIO_CUDA_DRIVER_TRY(api.MemcpyDtoH(back.data(), dev, nbytes));
      KVIKIO_CUDA_DRIVER_TRY(api.MemFree(dev));
    } else {
      start = std::chrono::steady_clock::now();
      KVIKIO_EXPECT(in.pread(back.data(), nbytes).get() == nbytes, "short read");
      read_s = seconds(start);
    }
    in.close();
    ::unlink(path.c_str());

    std::vector<std::uint8_t> expected(std::size_t{1} << 20);
    for (std::size_t off = 0; off < nbytes; off += expected.size()) {
      auto const n = std::min(expected.size(), nbytes - off);
      fill_random(expected.data(), n, off);
      if (std::memcmp(expected.data(), back.data() + off, n) != 0) {
        std::cerr << "MISMATCH in the MiB at offset " << off << "\n";
        return 1;
      }
    }
    std::cout << "wrote " << nbytes << " bytes from host memory at " << nbytes / write_s / 1e9
              << " GB/s; read them into " << (on_gpu ? "device" : "host") << " memory at "
              << nbytes / read_s / 1e9 << " GB/s with " << kvikio::defaults::thread_pool_nthreads()
              << " thread(s); every byte verified\n";
  } catch (std::exception const& e) {
    std::cerr << "basic_io failed: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
