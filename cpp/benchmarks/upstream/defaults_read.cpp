/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * "Out of the box": reads a whole hot file with FileHandle::pread into device and pinned host
 * memory with no setting at all (no KVIKIO_* variable is set by the caller, no defaults::set_*
 * call), so that it measures each library's defaults. Only the public API, so the same source is
 * compiled against upstream KvikIO and against this project (ci/upstream-harness.sh).
 *
 * Usage: defaults_read <label> <file> [repetitions]
 * Prints: "<label> defaults <mem>: median <x> min <y> max <z> GB/s".
 */
#include <kvikio/file_handle.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s label file [repetitions]\n", argv[0]);
    return 2;
  }
  std::string const label = argv[1];
  int const reps          = argc > 3 ? std::atoi(argv[3]) : 5;
  kvikio::FileHandle file(argv[2], "r");
  std::size_t const n = file.nbytes();
  void* device        = nullptr;
  void* host          = nullptr;
  if (cudaMalloc(&device, n) != cudaSuccess || cudaMallocHost(&host, n) != cudaSuccess) {
    std::puts("allocation failed");
    return 1;
  }
  for (int mem = 0; mem < 2; ++mem) {
    std::vector<double> gbs;
    for (int r = 0; r < reps; ++r) {
      auto const start                         = std::chrono::steady_clock::now();
      std::size_t const got                    = file.pread(mem == 0 ? device : host, n).get();
      std::chrono::duration<double> const took = std::chrono::steady_clock::now() - start;
      if (got != n) {
        std::puts("short read");
        return 1;
      }
      gbs.push_back(static_cast<double>(n) / took.count() / 1e9);
    }
    std::sort(gbs.begin(), gbs.end());
    std::printf("%-10s defaults %-6s: median %6.2f  min %6.2f  max %6.2f GB/s\n",
                label.c_str(),
                mem == 0 ? "device" : "host",
                gbs[gbs.size() / 2],
                gbs.front(),
                gbs.back());
    std::fflush(stdout);
  }
  return 0;
}
