/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench ipc: what a handle costs. Exports are timed in this process; opens in this
 * process of handles from a producer process (this binary again, `--producer-fd`), which keeps
 * its allocations until its standard input closes. Each call is timed on its own; the table
 * gives the median, 90th percentile, minimum and maximum in microseconds.
 */
#include "ipc_bench.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/ipc.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "bench_common.hpp"

namespace kvikio::bench {
namespace {

struct Timing {
  std::string op, variant;
  std::vector<double> us;  // sorted
};

template <typename F>
Timing time_calls(std::string op, std::string variant, std::size_t calls, F&& call)
{
  Timing t{std::move(op), std::move(variant), {}};
  for (std::size_t i = 0; i < calls; ++i) {
    auto const t0 = std::chrono::steady_clock::now();
    call(i);
    t.us.push_back(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.us.begin(), t.us.end());
  return t;
}

void print(std::vector<Timing> const& rows, std::string const& json, std::string const& machine)
{
  std::printf("\n%-7s %-40s %7s %10s %10s %10s %10s\n",
              "op",
              "variant",
              "calls",
              "median",
              "p90",
              "min",
              "max");
  std::printf("%-7s %-40s %7s %10s %10s %10s %10s\n", "", "", "", "us", "us", "us", "us");
  std::ofstream out;
  if (!json.empty()) { out.open(json, std::ios::app); }
  for (auto const& r : rows) {
    auto const n     = r.us.size();
    double const med = r.us[n / 2];
    double const p90 = r.us[std::min(n - 1, n * 9 / 10)];
    std::printf("%-7s %-40s %7zu %10.2f %10.2f %10.2f %10.2f\n",
                r.op.c_str(),
                r.variant.c_str(),
                n,
                med,
                p90,
                r.us.front(),
                r.us.back());
    if (out) {
      out << "{\"op\":\"ipc-" << r.op << "\",\"variant\":\"" << r.variant << "\",\"calls\":" << n
          << ",\"us_median\":" << med << ",\"us_p90\":" << p90 << ",\"us_min\":" << r.us.front()
          << ",\"us_max\":" << r.us.back() << machine << "}\n";
    }
  }
}

void write_all(int fd, void const* data, std::size_t n)
{
  auto const* p = static_cast<char const*>(data);
  while (n > 0) {
    ssize_t const w = ::write(fd, p, n);
    KVIKIO_EXPECT(w > 0, "kvikio_bench ipc: writing to the pipe failed", std::runtime_error);
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// The producer: allocates, sends the handles, keeps the memory until stdin closes.
int run_producer(IpcOptions const& o, std::size_t size)
{
  std::vector<CUdeviceptr> buffers(o.allocations);
  for (auto& b : buffers) {
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemAlloc(&b, size));
    auto const bytes = ipc::export_memory(reinterpret_cast<void*>(b), size).to_bytes();
    write_all(o.producer_fd, bytes.data(), bytes.size());
  }
  ::close(o.producer_fd);
  char c{};
  while (::read(STDIN_FILENO, &c, 1) > 0) {}
  for (auto b : buffers) {
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemFree(b));
  }
  return 0;
}

}  // namespace

int run_ipc(IpcOptions const& o)
{
  std::size_t const size = parse_size(o.size_text);
  KVIKIO_EXPECT(o.allocations > 0 && o.calls > 0,
                "kvikio_bench ipc: --allocations and --calls must be positive",
                std::invalid_argument);
  PushAndPopContext const context{get_primary_cuda_context(0)};
  if (o.producer_fd >= 0) { return run_producer(o, size); }
  auto& api = cudaAPI::instance();
  std::vector<Timing> rows;

  // Exports of this process's own allocations.
  std::vector<CUdeviceptr> mine(o.allocations);
  for (auto& b : mine) {
    KVIKIO_CUDA_DRIVER_TRY(api.MemAlloc(&b, size));
  }
  auto ptr_of = [&](std::size_t i) { return reinterpret_cast<void*>(mine[i % mine.size()]); };
  rows.push_back(time_calls("export", "driver cuIpcGetMemHandle", o.calls, [&](std::size_t i) {
    CUipcMemHandle h{};
    KVIKIO_CUDA_DRIVER_TRY(api.IpcGetMemHandle(&h, mine[i % mine.size()]));
  }));
  defaults::set_ipc_export_cache_size(0);
  rows.push_back(
    time_calls("export", "kvikio export_memory, no cache", o.calls, [&](std::size_t i) {
      (void)ipc::export_memory(ptr_of(i), size);
    }));
  defaults::set_ipc_export_cache_size(1024);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    (void)ipc::export_memory(ptr_of(i), size);  // warm
  }
  rows.push_back(time_calls("export", "kvikio export_memory, cached", o.calls, [&](std::size_t i) {
    (void)ipc::export_memory(ptr_of(i), size);
  }));
  for (auto b : mine) {
    KVIKIO_CUDA_DRIVER_TRY(api.MemFree(b));
  }

  // Opens of a producer's handles.
  int handles[2];
  int keep[2];
  KVIKIO_EXPECT(::pipe(handles) == 0 && ::pipe(keep) == 0, "kvikio_bench ipc: pipe failed");
  std::string const fd_text = std::to_string(handles[1]);
  std::string const count   = std::to_string(o.allocations);
  std::string const size_t_ = o.size_text;
  pid_t const child         = ::fork();
  if (child == 0) {
    ::dup2(keep[0], STDIN_FILENO);
    ::close(keep[1]);
    ::close(handles[0]);
    char const* argv[] = {"kvikio_bench",
                          "ipc",
                          "--producer-fd",
                          fd_text.c_str(),
                          "--allocations",
                          count.c_str(),
                          "--size",
                          size_t_.c_str(),
                          nullptr};
    ::execv("/proc/self/exe", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(handles[1]);
  ::close(keep[0]);
  std::vector<ipc::IpcHandle> theirs;
  for (std::size_t i = 0; i < o.allocations; ++i) {
    std::array<std::byte, ipc::IpcHandle::nbytes> bytes{};
    std::size_t got = 0;
    while (got < bytes.size()) {
      ssize_t const r = ::read(handles[0], bytes.data() + got, bytes.size() - got);
      KVIKIO_EXPECT(r > 0, "kvikio_bench ipc: the producer sent no handle", std::runtime_error);
      got += static_cast<std::size_t>(r);
    }
    theirs.push_back(ipc::IpcHandle::from_bytes(bytes.data(), bytes.size()));
  }
  ::close(handles[0]);
  auto handle_of = [&](std::size_t i) -> ipc::IpcHandle const& {
    return theirs[i % theirs.size()];
  };
  std::vector<CUdeviceptr> opened;
  rows.push_back(
    time_calls("open", "driver cuIpcOpenMemHandle + Close", o.calls, [&](std::size_t i) {
      CUdeviceptr p{};
      KVIKIO_CUDA_DRIVER_TRY(
        api.IpcOpenMemHandle(&p, handle_of(i).cuda_handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
      KVIKIO_CUDA_DRIVER_TRY(api.IpcCloseMemHandle(p));  // timed too: a mapping per call
    }));
  defaults::set_ipc_open_cache_size(0);
  rows.push_back(time_calls("open", "kvikio open + release, no cache", o.calls, [&](std::size_t i) {
    (void)ipc::open(handle_of(i));
  }));
  defaults::set_ipc_open_cache_size(128);
  for (std::size_t i = 0; i < theirs.size(); ++i) {
    (void)ipc::open(handle_of(i));  // warm
  }
  rows.push_back(time_calls("open", "kvikio open + release, cached", o.calls, [&](std::size_t i) {
    (void)ipc::open(handle_of(i));
  }));
  auto const stats = ipc::open_cache_stats();
  ipc::clear();
  ::close(keep[1]);  // the producer frees and exits
  int status = 0;
  ::waitpid(child, &status, 0);
  print(rows, o.json, machine_json_fields(gpu_name(), utc_now()));
  std::printf("\nopen cache: %zu hits, %zu misses, %zu evictions; producer exit %d\n",
              stats.hits,
              stats.misses,
              stats.evictions,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace kvikio::bench
