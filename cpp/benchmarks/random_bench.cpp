/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench local random: the reader's workload (reader_workload.hpp) on this library, each
 * point with its KVIKIO_LOCAL_IO_BACKEND variants interleaved, and pread(2) beside the host
 * latencies.
 */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "bench_common.hpp"
#include "local_bench.hpp"
#include "reader_workload.hpp"

namespace kvikio::bench {
namespace {

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

WorkloadMemory memory_of(bool device)
{
  auto& api = cudaAPI::instance();
  return {[device, &api](std::size_t n) {
            CUdeviceptr d{};
            void* h = nullptr;
            if (device) {
              KVIKIO_CUDA_DRIVER_TRY(api.MemAlloc(&d, n));
              return reinterpret_cast<void*>(d);
            }
            KVIKIO_CUDA_DRIVER_TRY(api.MemHostAlloc(&h, n, CU_MEMHOSTALLOC_PORTABLE));
            return h;
          },
          [device, &api](void* p) {
            (void)(device ? api.MemFree(convert_void2deviceptr(p)) : api.MemFreeHost(p));
          },
          [device, &api](void* host, void const* mem, std::size_t n) {
            if (!device) {
              std::memcpy(host, mem, n);
              return;
            }
            KVIKIO_CUDA_DRIVER_TRY(api.MemcpyDtoH(host, convert_void2deviceptr(mem), n));
          }};
}

}  // namespace

int run_local_random(LocalOptions const& o)
{
  bool const device = o.mem == "device";
  std::size_t const largest =
    std::max(parse_size(o.size_text), parse_size(o.io_sizes.empty() ? "0" : o.io_sizes.back()));
  if (o.create) { ensure_file(o.file, largest); }
  CUcontext const ctx = get_primary_cuda_context(0);
  PushAndPopContext const context{ctx};
  auto const memory      = memory_of(device);
  std::string const gpu  = gpu_name();
  std::string const date = utc_now();
  std::ofstream json;
  if (!o.json.empty()) { json.open(o.json, std::ios::app); }
  std::string const where = machine_json_fields(gpu, date);
  std::printf("kvikio_bench local random: %s, mem %s, %u callers x %u in flight, GPU %s, %s\n",
              o.file.c_str(),
              o.mem.c_str(),
              o.callers,
              o.in_flight,
              gpu.c_str(),
              date.c_str());
  std::printf("%-9s %7s %7s %12s %9s\n", "backend", "pool", "size", "reads/s", "GB/s");
  for (unsigned const pool : o.threads) {
    if (pool > 0) { defaults::set_thread_pool_nthreads(pool); }
    for (auto const& size_text : o.io_sizes) {
      std::size_t const size = parse_size(size_text);
      for (auto const& backend : o.backends) {
        defaults::set_local_io_backend(
          kvikio::detail::parse_local_io_backend("--backend", backend));
        std::vector<double> rates;
        for (unsigned rep = 0; rep < o.repeat; ++rep) {
          rates.push_back(
            reader_throughput(o.file, memory, size, o.callers, o.in_flight, o.seconds, rep + 1)
              .reads_per_second());
        }
        double const rate = median(rates);
        std::printf("%-9s %7u %7s %12.0f %9.2f\n",
                    backend.c_str(),
                    pool,
                    size_text.c_str(),
                    rate,
                    rate * static_cast<double>(size) / 1e9);
        if (json.is_open()) {
          json << "{\"bench\":\"local random\",\"mem\":\"" << o.mem << "\",\"backend\":\""
               << backend << "\",\"pool_threads\":" << pool << ",\"io_size\":" << size
               << ",\"callers\":" << o.callers << ",\"in_flight\":" << o.in_flight
               << ",\"reads_per_s_median\":" << rate
               << ",\"gbps_median\":" << rate * static_cast<double>(size) / 1e9
               << ",\"repeats\":" << o.repeat << where << "}\n";
        }
      }
    }
  }
  std::printf("\none caller, synchronous reads (%zu each): latency in us\n", o.latency_reads);
  std::printf("%-14s %7s %9s %9s\n", "variant", "size", "p50", "p99");
  for (auto const& size_text : o.latency_sizes) {
    std::size_t const size = parse_size(size_text);
    for (auto const& backend : o.backends) {
      defaults::set_local_io_backend(kvikio::detail::parse_local_io_backend("--backend", backend));
      auto const l = reader_latency(o.file, memory, size, o.latency_reads, 7);
      std::printf(
        "%-14s %7s %9.1f %9.1f\n", backend.c_str(), size_text.c_str(), l.p50_us, l.p99_us);
      if (json.is_open()) {
        json << "{\"bench\":\"local latency\",\"mem\":\"" << o.mem << "\",\"backend\":\"" << backend
             << "\",\"io_size\":" << size << ",\"p50_us\":" << l.p50_us
             << ",\"p99_us\":" << l.p99_us << where << "}\n";
      }
    }
    if (!device) {
      auto const b = reader_latency(o.file, memory, size, o.latency_reads, 7, true);
      std::printf("%-14s %7s %9.1f %9.1f\n", "pread(2)", size_text.c_str(), b.p50_us, b.p99_us);
    }
  }
  std::printf("\npeak resident memory: %.0f MiB\n", peak_rss_mib());
  return 0;
}

}  // namespace kvikio::bench
