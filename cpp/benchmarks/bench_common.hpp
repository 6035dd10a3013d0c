/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What kvikio_bench's subcommands share: sizes, timing, statistics, output.
 */
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>

namespace kvikio::bench {

/// "8GiB", "4MiB", "512KiB", "100" (bytes); also GB/MB/KB (powers of 1000).
inline std::size_t parse_size(std::string const& text)
{
  static std::map<std::string, std::size_t> const units{{"", 1},
                                                        {"B", 1},
                                                        {"KiB", 1UL << 10},
                                                        {"MiB", 1UL << 20},
                                                        {"GiB", 1UL << 30},
                                                        {"KB", 1000UL},
                                                        {"MB", 1000UL * 1000},
                                                        {"GB", 1000UL * 1000 * 1000}};
  std::size_t pos          = 0;
  std::size_t const number = std::stoull(text, &pos);
  auto const unit          = units.find(text.substr(pos));
  if (unit == units.end()) { throw std::invalid_argument("unknown size unit in \"" + text + "\""); }
  return number * unit->second;
}

/// Wall seconds and CPU seconds (user + system, all threads) of one run.
struct Measurement {
  double seconds;
  double cpu_seconds;
};

inline double cpu_seconds_now()
{
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto secs = [](timeval t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(usage.ru_utime) + secs(usage.ru_stime);
}

inline Measurement measure(std::function<void()> const& run)
{
  double const cpu0 = cpu_seconds_now();
  auto const t0     = std::chrono::steady_clock::now();
  run();
  auto const t1 = std::chrono::steady_clock::now();
  return {std::chrono::duration<double>(t1 - t0).count(), cpu_seconds_now() - cpu0};
}

/// One row of the table: a variant at one point, over its repeats.
struct Row {
  std::string op, mem, variant;
  unsigned threads;
  std::size_t task_size, bytes;
  std::vector<Measurement> runs;
  std::size_t ring_depth{0};    // 0: not KvikIO's ring (a baseline)
  std::size_t slot_size{0};     // bytes per ring slot
  std::size_t pinned_bytes{0};  // pinned bytes KvikIO's pool held after the runs

  [[nodiscard]] std::vector<double> gbps() const
  {
    std::vector<double> out;
    for (auto const& r : runs) {
      out.push_back(static_cast<double>(bytes) / r.seconds / 1e9);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  [[nodiscard]] double median_cpu_s_per_gb() const
  {
    std::vector<double> v;
    for (auto const& r : runs) {
      v.push_back(r.cpu_seconds / (static_cast<double>(bytes) / 1e9));
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

// The table of a run; the staging columns (ring depth k, slot, pinned bytes) only where a row
// reads into or writes from device memory, the only rows they describe.
inline void print_table(std::vector<Row> const& rows)
{
  bool const staged =
    std::any_of(rows.begin(), rows.end(), [](Row const& r) { return r.mem == "device"; });
  std::printf("\n%-6s %-6s %-36s %7s %5s", "op", "mem", "variant", "threads", "task");
  if (staged) { std::printf(" %4s %7s %8s", "k", "slot", "pinned"); }
  std::printf(" %9s %9s %9s %9s\n%-6s %-6s %-36s %7s %5s",
              "median",
              "min",
              "max",
              "CPU s/GB",
              "",
              "",
              "",
              "",
              "MiB");
  if (staged) { std::printf(" %4s %7s %8s", "", "KiB", "MiB"); }
  std::printf(" %9s %9s %9s %9s\n", "GB/s", "GB/s", "GB/s", "");
  for (auto const& r : rows) {
    auto const g = r.gbps();
    std::printf("%-6s %-6s %-36s %7u %5zu",
                r.op.c_str(),
                r.mem.c_str(),
                r.variant.c_str(),
                r.threads,
                r.task_size >> 20);
    if (staged) {
      std::printf(" %4zu %7zu %8zu", r.ring_depth, r.slot_size >> 10, r.pinned_bytes >> 20);
    }
    std::printf(
      " %9.2f %9.2f %9.2f %9.3f\n", g[g.size() / 2], g.front(), g.back(), r.median_cpu_s_per_gb());
  }
}

/**
 * The NVIDIA kernel module's version (the driver version nvidia-smi shows), from `path`: the
 * CUDA driver API only tells the CUDA version. "none" where there is no such module.
 */
inline std::string nvidia_driver_version(char const* path = "/proc/driver/nvidia/version")
{
  std::ifstream in{path};
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  <build date>", or with the open
  // module "... Open Kernel Module for x86_64  580.159.04  Release Build ...": the first word
  // after "Module" made of digits and dots.
  std::string word;
  bool after_module = false;
  while (in >> word) {
    after_module       = after_module || word == "Module";
    bool const version = after_module && word.find('.') != std::string::npos &&
                         word.find_first_not_of("0123456789.") == std::string::npos;
    if (version) { return word; }
  }
  return "none";
}

/// The name of GPU 0 (the device every subcommand uses). Needs the CUDA driver.
inline std::string gpu_name()
{
  char name[256] = {};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().DeviceGetName(name, sizeof(name), 0));
  return name;
}

/// The current time, UTC, ISO 8601 to the second.
inline std::string utc_now()
{
  std::time_t const now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

/// The machine and time of a run, as JSON fields (`,"gpu":...,"driver":...,"date":...`), so
/// that every line of results says where it was measured.
inline std::string machine_json_fields(std::string const& gpu, std::string const& date)
{
  return ",\"gpu\":\"" + gpu + "\",\"driver\":\"" + nvidia_driver_version() + "\",\"date\":\"" +
         date + "\"";
}

inline void write_json_lines(std::string const& path,
                             std::vector<Row> const& rows,
                             std::string const& extra)
{
  std::ofstream out{path, std::ios::app};
  for (auto const& r : rows) {
    auto const g = r.gbps();
    out << "{\"op\":\"" << r.op << "\",\"mem\":\"" << r.mem << "\",\"variant\":\"" << r.variant
        << "\",\"threads\":" << r.threads << ",\"task_size\":" << r.task_size
        << ",\"bytes\":" << r.bytes << ",\"gbps_median\":" << g[g.size() / 2]
        << ",\"gbps_min\":" << g.front() << ",\"gbps_max\":" << g.back()
        << ",\"cpu_s_per_gb\":" << r.median_cpu_s_per_gb() << ",\"repeats\":" << r.runs.size()
        << ",\"ring_depth\":" << r.ring_depth << ",\"slot_size\":" << r.slot_size
        << ",\"pinned_bytes\":" << r.pinned_bytes << extra << "}\n";
  }
}

}  // namespace kvikio::bench
