/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Several GPUs from one process: a whole hot file read by FileHandle::pread into every listed
 * GPU at once, a thread per GPU each calling pread with a pool of its own (T threads), in 4 MiB
 * tasks; beside the first GPU alone. Only the public API, so the same source is compiled against
 * upstream KvikIO and against this project (ci/upstream-harness.sh). Before the last reads at
 * once every GPU's buffer is poisoned; after them its first, middle and last 4 KiB are compared
 * with the file.
 *
 * Usage: devices_read <label> <file> <devices, e.g. 0,1,2,3> <threads list, e.g. 8,16> [reps]
 * Prints: "<label> devices <list> threads <t>: alone <x> GB/s, at once <y> GB/s in total"
 * (medians of the repetitions).
 */
#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<unsigned> list_of(char const* text)
{
  std::vector<unsigned> out;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    out.push_back(static_cast<unsigned>(std::stoul(item)));
  }
  return out;
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s label file devices threads [repetitions]\n", argv[0]);
    return 2;
  }
  std::string const label = argv[1], path = argv[2];
  auto const devices         = list_of(argv[3]);
  auto const threads         = list_of(argv[4]);
  int const reps             = std::max(1, argc > 5 ? std::atoi(argv[5]) : 3);
  constexpr std::size_t task = std::size_t{4} << 20;
  kvikio::FileHandle file(path, "r");
  std::size_t const n = file.nbytes();
  std::vector<char*> buffers;
  for (unsigned d : devices) {
    char* p = nullptr;
    if (cudaSetDevice(static_cast<int>(d)) != cudaSuccess ||
        cudaMalloc(reinterpret_cast<void**>(&p), n) != cudaSuccess) {
      std::printf("cannot allocate %zu bytes on GPU %u\n", n, d);
      return 1;
    }
    buffers.push_back(p);
  }
  cudaSetDevice(static_cast<int>(devices.front()));
  // The file's first, middle and last 4 KiB, read by the system, to check every GPU's copy
  // against.
  std::size_t const edge = std::min<std::size_t>(4096, n);
  std::size_t const mid  = n / 2 / edge * edge;
  std::vector<char> head(edge), middle(edge), tail(edge), got(edge);
  int const fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0 || ::pread(fd, head.data(), edge, 0) != static_cast<ssize_t>(edge) ||
      ::pread(fd, middle.data(), edge, static_cast<off_t>(mid)) != static_cast<ssize_t>(edge) ||
      ::pread(fd, tail.data(), edge, static_cast<off_t>(n - edge)) != static_cast<ssize_t>(edge)) {
    std::puts("cannot read the file");
    return 1;
  }
  ::close(fd);
  std::string names;
  for (unsigned d : devices) {
    names += (names.empty() ? "" : ",") + std::to_string(d);
  }
  for (unsigned t : threads) {
    std::vector<std::unique_ptr<kvikio::ThreadPool>> pools;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      pools.push_back(std::make_unique<kvikio::ThreadPool>(t));
    }
    auto const into = [&](std::size_t i) {
      return file
               .pread(
                 buffers[i], n, 0, task, kvikio::defaults::gds_threshold(), true, pools[i].get())
               .get() == n;
    };
    auto const seconds = [](auto&& run) {
      auto const t0  = std::chrono::steady_clock::now();
      bool const ok  = run();
      double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return ok ? s : -1.0;
    };
    for (std::size_t i = 0; i < devices.size(); ++i) {  // warm: streams, staging, pools
      if (!into(i)) {
        std::puts("short read");
        return 1;
      }
    }
    std::vector<double> alone, together;
    for (int r = 0; r < reps; ++r) {
      double const a = seconds([&] { return into(0); });
      if (r == reps - 1) {  // the last reads at once must write every byte that is checked
        for (std::size_t i = 0; i < devices.size(); ++i) {
          cudaSetDevice(static_cast<int>(devices[i]));
          cudaMemset(buffers[i], 0xEE, n);
          cudaDeviceSynchronize();
        }
        cudaSetDevice(static_cast<int>(devices.front()));
      }
      double const b = seconds([&] {
        std::vector<std::thread> readers;
        std::vector<char> ok(devices.size(), 0);
        for (std::size_t i = 0; i < devices.size(); ++i) {
          readers.emplace_back([&, i] { ok[i] = into(i) ? 1 : 0; });
        }
        for (auto& reader : readers) {
          reader.join();
        }
        return std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
      });
      if (a < 0 || b < 0) {
        std::puts("short read");
        return 1;
      }
      alone.push_back(static_cast<double>(n) / a / 1e9);
      together.push_back(static_cast<double>(n * devices.size()) / b / 1e9);
    }
    for (std::size_t i = 0; i < devices.size(); ++i) {
      for (auto const& [want, at] :
           {std::pair{&head, std::size_t{0}}, {&middle, mid}, {&tail, n - edge}}) {
        cudaSetDevice(static_cast<int>(devices[i]));
        if (cudaMemcpy(got.data(), buffers[i] + at, edge, cudaMemcpyDeviceToHost) != cudaSuccess ||
            std::memcmp(got.data(), want->data(), edge) != 0) {
          std::printf("wrong bytes on GPU %u\n", devices[i]);
          return 1;
        }
      }
    }
    std::printf("%-10s devices %s threads %2u: alone %6.2f GB/s, at once %6.2f GB/s in total\n",
                label.c_str(),
                names.c_str(),
                t,
                median(alone),
                median(together));
    std::fflush(stdout);
  }
  return 0;
}
