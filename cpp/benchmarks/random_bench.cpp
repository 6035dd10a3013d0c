/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The reader's workload (reader_workload.hpp) on this library, each point with its variants
 * interleaved:
 *   kvikio_bench local random   FileHandle::pread, a variant per pool size x
 *                               KVIKIO_LOCAL_IO_BACKEND, and pread(2) beside the host latencies;
 *   kvikio_bench remote random  RemoteHandle::pread of an object whose bytes are a local file's
 *                               (--reference), a variant per transport: easy with each --threads
 *                               pool, multi_poll with each --reactors count.
 */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "bench_common.hpp"
#include "local_bench.hpp"
#include "reader_workload.hpp"
#ifdef KVIKIO_BENCH_REMOTE
#include "remote_bench.hpp"
#endif

namespace kvikio::bench {
namespace {

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// One way of reading measured at every point: its name, pool size in the JSON rows (0: none),
/// and the settings it applies before each of its runs.
struct Variant {
  std::string name;
  unsigned pool;
  std::function<void()> apply;
};

/// What a sweep measures, from either subcommand's options.
struct Sweep {
  std::string bench;  // "local" or "remote": the JSON rows' "<bench> random" / "<bench> latency"
  std::string path;   // the file read, or the remote object's local copy
  std::string url;    // empty: the file itself
  std::string mem;
  ReaderOptions reader;
  unsigned repeat;
  std::string json;
  // A row measured beside the variants (host memory; none if empty): reads/s at a size.
  std::string baseline_name;
  std::function<double(std::size_t)> baseline;
};

// Each point: the variants in turn, `repeat` rounds, medians; the target is opened again for
// each run, after the variant's settings (a FileHandle takes its backend when it opens).
int run_sweep(Sweep const& s, std::vector<Variant> const& variants)
{
  bool const device   = s.mem == "device";
  CUcontext const ctx = get_primary_cuda_context(0);
  PushAndPopContext const context{ctx};
  auto const memory      = memory_of(device);
  std::string const gpu  = gpu_name();
  std::string const date = utc_now();
  std::ofstream json;
  if (!s.json.empty()) { json.open(s.json, std::ios::app); }
  std::string const where  = machine_json_fields(gpu, date);
  std::string const source = s.url.empty() ? s.path : s.url;
  std::printf("kvikio_bench %s random: %s, mem %s, %u callers x %u in flight, GPU %s, %s\n",
              s.bench.c_str(),
              source.c_str(),
              s.mem.c_str(),
              s.reader.callers,
              s.reader.in_flight,
              gpu.c_str(),
              date.c_str());
  std::printf("%-22s %7s %12s %9s %9s\n", "variant", "size", "reads/s", "GB/s", "CPU s/GB");
  for (auto const& size_text : s.reader.io_sizes) {
    std::size_t const size = parse_size(size_text);
    std::vector<std::vector<double>> rates(variants.size()), cpu(variants.size());
    std::vector<double> baseline;
    for (unsigned rep = 0; rep < s.repeat; ++rep) {
      if (s.baseline) { baseline.push_back(s.baseline(size)); }
      for (std::size_t v = 0; v < variants.size(); ++v) {
        variants[v].apply();
        ReadTarget target{s.path, s.url};
        double const cpu0 = cpu_seconds_now();
        auto const r      = reader_throughput(
          target, memory, size, s.reader.callers, s.reader.in_flight, s.reader.seconds, rep + 1);
        double const bytes = static_cast<double>(r.reads) * static_cast<double>(size);
        rates[v].push_back(r.reads_per_second());
        cpu[v].push_back((cpu_seconds_now() - cpu0) / (bytes / 1e9));
      }
    }
    if (s.baseline) {
      double const rate = median(baseline);
      std::printf("%-22s %7s %12.0f %9.2f %9s\n",
                  s.baseline_name.c_str(),
                  size_text.c_str(),
                  rate,
                  rate * static_cast<double>(size) / 1e9,
                  "-");
      if (json.is_open()) {
        json << "{\"bench\":\"" << s.bench << " random\",\"mem\":\"host\",\"variant\":\""
             << s.baseline_name << "\",\"io_size\":" << size << ",\"reads_per_s_median\":" << rate
             << ",\"repeats\":" << s.repeat << ",\"source\":\"" << source << "\"" << where << "}\n";
      }
    }
    for (std::size_t v = 0; v < variants.size(); ++v) {
      double const rate = median(rates[v]);
      double const gbps = rate * static_cast<double>(size) / 1e9;
      double const cpgb = median(cpu[v]);
      std::printf("%-22s %7s %12.0f %9.2f %9.3f\n",
                  variants[v].name.c_str(),
                  size_text.c_str(),
                  rate,
                  gbps,
                  cpgb);
      if (json.is_open()) {
        json << "{\"bench\":\"" << s.bench << " random\",\"mem\":\"" << s.mem << "\",\"variant\":\""
             << variants[v].name << "\",\"pool_threads\":" << variants[v].pool
             << ",\"io_size\":" << size << ",\"callers\":" << s.reader.callers
             << ",\"in_flight\":" << s.reader.in_flight << ",\"reads_per_s_median\":" << rate
             << ",\"gbps_median\":" << gbps << ",\"cpu_s_per_gb_median\":" << cpgb
             << ",\"repeats\":" << s.repeat << ",\"source\":\"" << source << "\"" << where << "}\n";
      }
    }
  }
  std::printf("\none caller, synchronous reads (%zu each): latency in us\n",
              s.reader.latency_reads);
  std::printf("%-22s %7s %9s %9s\n", "variant", "size", "p50", "p99");
  for (auto const& size_text : s.reader.latency_sizes) {
    std::size_t const size = parse_size(size_text);
    for (auto const& variant : variants) {
      variant.apply();
      ReadTarget target{s.path, s.url};
      auto const l = reader_latency(target, memory, size, s.reader.latency_reads, 7);
      std::printf(
        "%-22s %7s %9.1f %9.1f\n", variant.name.c_str(), size_text.c_str(), l.p50_us, l.p99_us);
      if (json.is_open()) {
        json << "{\"bench\":\"" << s.bench << " latency\",\"mem\":\"" << s.mem
             << "\",\"variant\":\"" << variant.name << "\",\"io_size\":" << size
             << ",\"p50_us\":" << l.p50_us << ",\"p99_us\":" << l.p99_us << ",\"source\":\""
             << source << "\"" << where << "}\n";
      }
    }
    if (!device) {
      ReadTarget target{s.path, s.url};
      auto const b = reader_latency(target, memory, size, s.reader.latency_reads, 7, true);
      std::printf("%-22s %7s %9.1f %9.1f\n", "pread(2)", size_text.c_str(), b.p50_us, b.p99_us);
    }
  }
  std::printf("\npeak resident memory: %.0f MiB\n", peak_rss_mib());
  return 0;
}

}  // namespace

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

int run_local_random(LocalOptions const& o)
{
  std::size_t const largest =
    std::max(parse_size(o.size_text),
             parse_size(o.reader.io_sizes.empty() ? "0" : o.reader.io_sizes.back()));
  if (o.create) { ensure_file(o.file, largest); }
  std::vector<Variant> variants;
  for (unsigned const pool : o.threads) {
    for (auto const& backend : o.backends) {
      auto const type = kvikio::detail::parse_local_io_backend("--backend", backend);
      variants.push_back(
        {backend + (pool > 0 ? " pool " + std::to_string(pool) : ""), pool, [pool, type] {
           if (pool > 0) { defaults::set_thread_pool_nthreads(pool); }
           defaults::set_local_io_backend(type);
         }});
    }
  }
  return run_sweep({"local", o.file, "", o.mem, o.reader, o.repeat, o.json, "", {}}, variants);
}

#ifdef KVIKIO_BENCH_REMOTE
int run_remote_random(RemoteOptions const& o)
{
  std::vector<Variant> variants;
  for (auto const& backend : o.backends) {
    if (backend == "easy") {
      for (unsigned const pool : o.threads) {
        variants.push_back({"easy pool " + std::to_string(pool), pool, [pool] {
                              defaults::set_remote_backend(RemoteBackendType::LIBCURL_EASY);
                              defaults::set_thread_pool_nthreads(pool);
                            }});
      }
      continue;
    }
    auto const counts = o.reactors.empty() ? std::vector<unsigned>{1} : o.reactors;
    for (unsigned const reactors : counts) {
      unsigned const connections = o.connections;
      variants.push_back(
        {"multi_poll reactors " + std::to_string(reactors), 0, [reactors, connections] {
           defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
           defaults::set_remote_io_num_reactors(reactors);
           if (connections > 0) { defaults::set_remote_max_connections(connections); }
         }});
    }
  }
  std::size_t const object_size = std::filesystem::file_size(o.reference);
  unsigned const in_flight      = o.reader.callers * o.reader.in_flight;
  return run_sweep({"remote",
                    o.reference,
                    o.url,
                    o.mem,
                    o.reader,
                    o.repeat,
                    o.json,
                    "libcurl multi, 1 thread",
                    [&o, object_size, in_flight](std::size_t size) {
                      return curl_multi_random_reads(
                        o.url, object_size, size, in_flight, o.reader.seconds);
                    }},
                   variants);
}
#endif

}  // namespace kvikio::bench
