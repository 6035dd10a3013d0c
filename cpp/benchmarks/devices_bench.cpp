/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench local|remote read --mem device --devices 0,1,...: reads into several GPUs at once
 * from one process, beside one GPU alone and beside host memory, in the same run.
 */
#include "devices_bench.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::bench {

std::vector<Row> run_devices(DevicesRun const& run, ReadInto const& read, std::string const& header)
{
  auto& api = cudaAPI::instance();
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(api.DeviceGetCount(&count));
  std::string list;
  for (int d : run.devices) {
    KVIKIO_EXPECT(d >= 0 && d < count,
                  "--devices: no GPU " + std::to_string(d) + " (this machine has " +
                    std::to_string(count) + ")",
                  std::invalid_argument);
    if (!list.empty()) { list += ','; }
    list += std::to_string(d);
  }
  struct Target {
    int ordinal;
    CUcontext ctx;
    CUdeviceptr dptr;
  };
  std::vector<Target> targets;
  for (int d : run.devices) {
    CUcontext const ctx = get_primary_cuda_context(d);
    PushAndPopContext const in{ctx};
    CUdeviceptr dptr{};
    KVIKIO_CUDA_DRIVER_TRY(api.MemAlloc(&dptr, run.size));
    targets.push_back({d, ctx, dptr});
  }
  std::unique_ptr<char, void (*)(void*)> host{
    static_cast<char*>(std::aligned_alloc(4096, (run.size + 4095) / 4096 * 4096)), std::free};
  KVIKIO_EXPECT(host != nullptr, "cannot allocate the host buffer");
  std::memset(host.get(), 0x5A, run.size);  // fault the pages in before timing

  std::vector<Row> rows;
  for (unsigned nthreads : run.threads) {
    std::vector<std::unique_ptr<ThreadPool>> pools;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      pools.push_back(std::make_unique<ThreadPool>(nthreads));
    }
    auto into = [&](std::size_t i) {
      read(reinterpret_cast<void*>(targets[i].dptr), pools[i].get());
    };
    for (std::size_t i = 0; i < targets.size(); ++i) {  // warm: streams, staging, connections
      into(i);
    }
    auto const row = [&](char const* mem, std::string variant, std::size_t bytes) {
      return Row{"read", mem, std::move(variant), nthreads, run.task, bytes, {}};
    };
    Row host_row = row("host", "into host memory", run.size);
    Row alone =
      row("device", "GPU " + std::to_string(targets.front().ordinal) + " alone", run.size);
    Row total = row("device", "GPUs " + list + " at once, total", run.size * targets.size());
    std::vector<Row> each;
    for (auto const& t : targets) {
      each.push_back(row("device", "GPU " + std::to_string(t.ordinal) + " of " + list, run.size));
    }
    for (unsigned rep = 0; rep < run.repeat; ++rep) {
      host_row.runs.push_back(measure([&] { read(host.get(), pools[0].get()); }));
      alone.runs.push_back(measure([&] { into(0); }));
      std::vector<double> seconds(targets.size());
      total.runs.push_back(measure([&] {
        std::vector<std::thread> readers;
        for (std::size_t i = 0; i < targets.size(); ++i) {
          readers.emplace_back([&, i] {
            auto const t0 = std::chrono::steady_clock::now();
            into(i);
            seconds[i] =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          });
        }
        for (auto& r : readers) {
          r.join();
        }
      }));
      for (std::size_t i = 0; i < targets.size(); ++i) {
        each[i].runs.push_back({seconds[i], total.runs.back().cpu_seconds});
      }
    }
    rows.push_back(std::move(host_row));
    rows.push_back(std::move(alone));
    rows.push_back(std::move(total));
    for (auto& r : each) {
      rows.push_back(std::move(r));
    }
  }
  for (auto const& t : targets) {
    PushAndPopContext const in{t.ctx};
    KVIKIO_CUDA_DRIVER_TRY(api.MemFree(t.dptr));
  }
  std::printf(
    "%s\nreads into GPUs %s at once (a pool of the row's threads per GPU; per-GPU rows: that "
    "GPU's own time, their CPU column the whole run's)\n",
    header.c_str(),
    list.c_str());
  print_table(rows);
  return rows;
}

}  // namespace kvikio::bench
