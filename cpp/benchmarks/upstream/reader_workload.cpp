/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The reader's workload (cpp/benchmarks/reader_workload.hpp) as a program of the public API
 * alone, compiled against upstream KvikIO and against this project (ci/upstream-harness.sh):
 * for each size, `callers` threads x `in_flight` reads in flight at random unaligned offsets;
 * then one caller's synchronous reads (p50/p99); then the process's peak resident memory.
 *
 * Usage: reader_workload <label> <file> <host|device> <callers> <in_flight> <pool threads, 0: no
 *        setting> <seconds> <sizes, e.g. 65536,1048576> [latency sizes] [latency reads]
 * With READER_URL set, the reads go to that object through RemoteHandle (its transport as
 * KVIKIO_REMOTE_BACKEND says) and <file> is a local copy of its bytes, for the checks.
 */
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>

#include "../reader_workload.hpp"

namespace {

std::vector<std::size_t> sizes_of(std::string const& text)
{
  std::vector<std::size_t> out;
  std::stringstream in{text};
  for (std::string item; std::getline(in, item, ',');) {
    out.push_back(std::stoull(item));
  }
  return out;
}

void check(CUresult r, char const* what)
{
  if (r != CUDA_SUCCESS) {
    char const* name = nullptr;
    (void)cuGetErrorName(r, &name);
    throw std::runtime_error(std::string{what} + ": " + (name != nullptr ? name : "?"));
  }
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 9) {
    std::fprintf(stderr,
                 "usage: %s label file host|device callers in_flight pool_threads seconds sizes "
                 "[latency_sizes] [latency_reads]\n",
                 argv[0]);
    return 2;
  }
  try {
    std::string const label = argv[1];
    std::string const path  = argv[2];
    bool const device       = std::string{argv[3]} == "device";
    unsigned const callers  = static_cast<unsigned>(std::atoi(argv[4]));
    unsigned const in_fl    = static_cast<unsigned>(std::atoi(argv[5]));
    unsigned const pool     = static_cast<unsigned>(std::atoi(argv[6]));
    double const seconds    = std::atof(argv[7]);
    auto const sizes        = sizes_of(argv[8]);
    auto const lat_sizes    = argc > 9 ? sizes_of(argv[9]) : std::vector<std::size_t>{};
    std::size_t const reads = argc > 10 ? std::stoull(argv[10]) : 2000;
    if (pool > 0) { kvikio::defaults::set_thread_pool_nthreads(pool); }
    // The driver API (not the runtime), so that the program also runs on the project's driver
    // simulator.
    check(cuInit(0), "cuInit");
    CUdevice dev{};
    CUcontext ctx{};
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    kvikio::bench::WorkloadMemory const memory{
      [device](std::size_t n) {
        CUdeviceptr d{};
        void* h = nullptr;
        if (device) {
          check(cuMemAlloc(&d, n), "cuMemAlloc");
          return reinterpret_cast<void*>(d);
        }
        check(cuMemHostAlloc(&h, n, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
        return h;
      },
      [device](void* p) {
        (void)(device ? cuMemFree(reinterpret_cast<CUdeviceptr>(p)) : cuMemFreeHost(p));
      },
      [device](void* host, void const* mem, std::size_t n) {
        if (!device) {
          std::memcpy(host, mem, n);
          return;
        }
        check(cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(mem), n), "cuMemcpyDtoH");
      }};
    char const* const mem = device ? "device" : "host";
    char const* const url = std::getenv("READER_URL");
    kvikio::bench::ReadTarget target{path, url != nullptr ? url : ""};
    for (std::size_t const size : sizes) {
      auto const r =
        kvikio::bench::reader_throughput(target, memory, size, callers, in_fl, seconds, 1);
      std::printf("%s random %s %zu c%ux%u pool%u: %.0f reads/s %.2f GB/s\n",
                  label.c_str(),
                  mem,
                  size,
                  callers,
                  in_fl,
                  pool,
                  r.reads_per_second(),
                  r.reads_per_second() * static_cast<double>(size) / 1e9);
      std::fflush(stdout);
    }
    for (std::size_t const size : lat_sizes) {
      auto const l = kvikio::bench::reader_latency(target, memory, size, reads, 2);
      std::printf("%s latency %s %zu: p50 %.1f us p99 %.1f us\n",
                  label.c_str(),
                  mem,
                  size,
                  l.p50_us,
                  l.p99_us);
      if (!device) {
        auto const b = kvikio::bench::reader_latency(target, memory, size, reads, 2, true);
        std::printf("%s latency bare-pread %zu: p50 %.1f us p99 %.1f us\n",
                    label.c_str(),
                    size,
                    b.p50_us,
                    b.p99_us);
      }
      std::fflush(stdout);
    }
    std::printf(
      "%s peak-rss %s pool%u: %.0f MiB\n", label.c_str(), mem, pool, kvikio::bench::peak_rss_mib());
  } catch (std::exception const& e) {
    std::fprintf(stderr, "reader_workload: %s\n", e.what());
    return 1;
  }
  return 0;
}
