/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Stream-ordered reads: `count` FileHandle::read_async calls of `size` bytes each on one stream
 * (consecutive pieces of the file into consecutive device memory), then one wait for the
 * stream. Measures the bytes per second from the first call to the stream's end, how long
 * each call kept its caller (the median over the calls) and how long the process's first call
 * kept it (set-up included). With "memset", each read is followed on the stream by a memset of
 * another 64 MiB buffer: the stream's own work between reads, as an application has. Only the
 * public API, so the same source is compiled against upstream KvikIO and against this project
 * (ci/upstream-harness.sh); the bytes are compared with the file read by pread(2).
 *
 * Usage: read_async_bench <label> <file> <size> <count> [repetitions [memset]]
 * Prints: "<label> read_async <size> x <count>[ + memset]: median <x> min <y> max <z> GB/s,
 * caller back after <us> us per call, first call <us> us".
 */
#include <kvikio/file_handle.hpp>
#include <kvikio/stream.hpp>

#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s label file size count [repetitions]\n", argv[0]);
    return 2;
  }
  std::string const label = argv[1], path = argv[2];
  std::size_t const size       = std::stoull(argv[3]);
  std::size_t const count      = std::stoull(argv[4]);
  int const reps               = std::max(1, argc > 5 ? std::atoi(argv[5]) : 5);
  bool const memset_after      = argc > 6 && std::string{argv[6]} == "memset";
  std::size_t const n          = size * count;
  std::size_t const other_size = std::size_t{64} << 20;
  char* device                 = nullptr;
  char* other                  = nullptr;
  cudaStream_t stream{};
  if (cudaMalloc(reinterpret_cast<void**>(&device), n) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&other), other_size) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    std::puts("allocation failed");
    return 1;
  }
  kvikio::FileHandle file(path, "r");
  if (file.nbytes() < n) {
    std::puts("file too small");
    return 1;
  }
  std::vector<double> gbs, held_us;
  double first_call_us = -1;
  for (int r = 0; r < reps; ++r) {
    cudaMemsetAsync(device, 0xEE, n, stream);
    cudaStreamSynchronize(stream);
    std::vector<kvikio::StreamFuture> futures;
    futures.reserve(count);
    std::vector<double> held;
    auto const start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      auto const call = std::chrono::steady_clock::now();
      auto const at   = static_cast<off_t>(i * size);
      futures.push_back(file.read_async(device, size, at, at, stream));
      held.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - call).count());
      if (first_call_us < 0) { first_call_us = held.back(); }
      if (memset_after) { cudaMemsetAsync(other, static_cast<int>(i), other_size, stream); }
    }
    cudaStreamSynchronize(stream);
    std::chrono::duration<double> const took = std::chrono::steady_clock::now() - start;
    for (auto& f : futures) {
      if (f.check_bytes_done() != size) {
        std::puts("short read");
        return 1;
      }
    }
    gbs.push_back(static_cast<double>(n) / took.count() / 1e9);
    std::nth_element(held.begin(), held.begin() + held.size() / 2, held.end());
    held_us.push_back(held[held.size() / 2]);
  }
  // The bytes: the device buffer against the file read by the system.
  std::vector<char> want(n), got(n);
  int const fd     = ::open(path.c_str(), O_RDONLY);
  std::size_t have = 0;  // pread(2) moves at most about 2 GiB a call
  for (ssize_t r = 1; fd >= 0 && have < n && r > 0; have += static_cast<std::size_t>(r)) {
    r = ::pread(fd, want.data() + have, n - have, static_cast<off_t>(have));
    if (r < 0) { break; }
  }
  if (fd < 0 || have != n ||
      cudaMemcpy(got.data(), device, n, cudaMemcpyDeviceToHost) != cudaSuccess ||
      std::memcmp(want.data(), got.data(), n) != 0) {
    std::puts("wrong bytes");
    return 1;
  }
  ::close(fd);
  std::sort(gbs.begin(), gbs.end());
  std::sort(held_us.begin(), held_us.end());
  std::printf(
    "%-10s read_async %zu x %zu%s: median %6.2f  min %6.2f  max %6.2f GB/s, caller back "
    "after %.1f us per call, first call %.1f us\n",
    label.c_str(),
    size,
    count,
    memset_after ? " + memset" : "",
    gbs[gbs.size() / 2],
    gbs.front(),
    gbs.back(),
    held_us[held_us.size() / 2],
    first_call_us);
  return 0;
}
