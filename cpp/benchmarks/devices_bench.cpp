/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench local|remote read --mem device --devices 0,1,...: reads into several GPUs at once
 * from one process, beside one GPU alone, beside host memory (one pool, and every pool at once:
 * the host's bound) and beside one process per GPU, in the same run.
 */
#include "devices_bench.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

extern char** environ;

namespace kvikio::bench {
namespace {

// The descriptor a child answers its parent on: not standard output, which the library may
// write to (notices).
constexpr int answer_fd = 3;

// A child's side: reads into `devices[0]` with a pool of `threads[0]` once to warm up, answers
// "ready", then reads once per line on its standard input and answers "took <seconds>".
void serve_parent(DevicesRun const& run, ReadInto const& read)
{
  std::unique_ptr<FILE, int (*)(FILE*)> answer{::fdopen(answer_fd, "w"), std::fclose};
  KVIKIO_EXPECT(answer != nullptr, "--device-child: no answer descriptor (run by a parent only)");
  auto& api = cudaAPI::instance();
  PushAndPopContext const in{get_primary_cuda_context(run.devices.front())};
  CUdeviceptr dptr{};
  KVIKIO_CUDA_DRIVER_TRY(api.MemAlloc(&dptr, run.size));
  ThreadPool pool{run.threads.front()};
  read(reinterpret_cast<void*>(dptr), &pool);
  std::fprintf(answer.get(), "ready\n");
  std::fflush(answer.get());
  for (char line[16]; std::fgets(line, sizeof line, stdin) != nullptr;) {
    auto const t0 = std::chrono::steady_clock::now();
    read(reinterpret_cast<void*>(dptr), &pool);
    std::fprintf(answer.get(),
                 "took %.9f\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fflush(answer.get());
  }
  KVIKIO_CUDA_DRIVER_TRY(api.MemFree(dptr));
}

// The command line of the child for `device` with `threads` threads: this program's, without
// its --devices and --threads (and their values, one or several).
std::vector<std::string> child_command(std::vector<std::string> const& command,
                                       int device,
                                       unsigned threads)
{
  std::vector<std::string> out;
  for (std::size_t i = 0; i < command.size(); ++i) {
    auto const& a = command[i];
    if (a == "--devices" || a == "--threads") {
      while (i + 1 < command.size() && command[i + 1].rfind('-', 0) != 0) {
        ++i;  // its values
      }
    } else if (a.rfind("--devices=", 0) != 0 && a.rfind("--threads=", 0) != 0) {
      out.push_back(a);
    }
  }
  out.insert(
    out.end(),
    {"--devices", std::to_string(device), "--threads", std::to_string(threads), "--device-child"});
  return out;
}

// One process per GPU, each with a pool of `threads`: for each repeat, every process reads at
// once; the measurement is the slowest one's time.
std::vector<Measurement> one_process_each(DevicesRun const& run, unsigned threads)
{
  struct Child {
    pid_t pid{-1};
    FILE* to{nullptr};
    FILE* from{nullptr};
  };
  std::signal(SIGPIPE, SIG_IGN);  // a child that died fails the write, not this process
  std::vector<Child> children;
  auto const finish = [&] {
    for (auto& c : children) {
      if (c.to != nullptr) { std::fclose(c.to); }  // end of input: the child exits
    }
    for (auto& c : children) {
      if (c.from != nullptr) { std::fclose(c.from); }
      if (c.pid > 0) { ::waitpid(c.pid, nullptr, 0); }
    }
  };
  try {
    for (int d : run.devices) {
      int to[2], from[2];
      // Close-on-exec: a later child must not hold this one's input open (it would never end).
      KVIKIO_EXPECT(::pipe2(to, O_CLOEXEC) == 0, "pipe failed");
      if (::pipe2(from, O_CLOEXEC) != 0) {
        ::close(to[0]);
        ::close(to[1]);
        KVIKIO_FAIL("pipe failed");
      }
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_adddup2(&actions, to[0], 0);
      posix_spawn_file_actions_adddup2(&actions, from[1], answer_fd);
      for (int fd : {to[0], to[1], from[0], from[1]}) {
        posix_spawn_file_actions_addclose(&actions, fd);
      }
      auto const args = child_command(run.command, d, threads);
      std::vector<char*> argv;
      for (auto const& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
      }
      argv.push_back(nullptr);
      Child c;
      int const r =
        ::posix_spawn(&c.pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&actions);
      ::close(to[0]);
      ::close(from[1]);
      c.to   = ::fdopen(to[1], "w");
      c.from = ::fdopen(from[0], "r");
      if (c.to == nullptr) { ::close(to[1]); }
      if (c.from == nullptr) { ::close(from[0]); }
      children.push_back(c);
      KVIKIO_EXPECT(r == 0 && c.to != nullptr && c.from != nullptr,
                    "cannot start a process for GPU " + std::to_string(d));
    }
    char line[64];
    for (auto& c : children) {
      KVIKIO_EXPECT(
        std::fgets(line, sizeof line, c.from) != nullptr && std::strcmp(line, "ready\n") == 0,
        "a process for one GPU ended before it was ready (its error is above)");
    }
    std::vector<Measurement> runs;
    for (unsigned rep = 0; rep < run.repeat; ++rep) {
      for (auto& c : children) {
        std::fputs("go\n", c.to);
        std::fflush(c.to);
      }
      double slowest = 0;
      for (auto& c : children) {
        double took = 0;
        KVIKIO_EXPECT(std::fgets(line, sizeof line, c.from) != nullptr &&
                        std::sscanf(line, "took %lf", &took) == 1,
                      "a process for one GPU ended during a read (its error is above)");
        slowest = std::max(slowest, took);
      }
      runs.push_back({slowest, 0.0});  // the children's CPU time is not this process's
    }
    finish();
    return runs;
  } catch (...) {
    finish();
    throw;
  }
}

}  // namespace

std::vector<Row> run_devices(DevicesRun const& run, ReadInto const& read, std::string const& header)
{
  if (run.child) {
    serve_parent(run, read);
    return {};
  }
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
  // One host buffer per GPU: the host's bound is every pool reading into host memory at once.
  std::vector<std::unique_ptr<char, void (*)(void*)>> hosts;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    hosts.emplace_back(
      static_cast<char*>(std::aligned_alloc(4096, (run.size + 4095) / 4096 * 4096)), std::free);
    KVIKIO_EXPECT(hosts.back() != nullptr, "cannot allocate a host buffer");
    std::memset(hosts.back().get(), 0x5A, run.size);  // fault the pages in before timing
  }

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
    Row host_all = row("host", "every pool into host memory, total", run.size * targets.size());
    Row alone =
      row("device", "GPU " + std::to_string(targets.front().ordinal) + " alone", run.size);
    Row total = row("device", "GPUs " + list + " at once, total", run.size * targets.size());
    std::vector<Row> each;
    for (auto const& t : targets) {
      each.push_back(row("device", "GPU " + std::to_string(t.ordinal) + " of " + list, run.size));
    }
    // Every pool at once, each reading with `one(i)`; each one's own time into `seconds`.
    auto const at_once = [&](auto const& one, std::vector<double>& seconds) {
      std::vector<std::thread> readers;
      for (std::size_t i = 0; i < targets.size(); ++i) {
        readers.emplace_back([&, i] {
          auto const t0 = std::chrono::steady_clock::now();
          one(i);
          seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        });
      }
      for (auto& r : readers) {
        r.join();
      }
    };
    for (unsigned rep = 0; rep < run.repeat; ++rep) {
      host_row.runs.push_back(measure([&] { read(hosts[0].get(), pools[0].get()); }));
      std::vector<double> seconds(targets.size());
      host_all.runs.push_back(measure(
        [&] { at_once([&](std::size_t i) { read(hosts[i].get(), pools[i].get()); }, seconds); }));
      alone.runs.push_back(measure([&] { into(0); }));
      total.runs.push_back(measure([&] { at_once(into, seconds); }));
      for (std::size_t i = 0; i < targets.size(); ++i) {
        each[i].runs.push_back({seconds[i], total.runs.back().cpu_seconds});
      }
    }
    rows.push_back(std::move(host_row));
    rows.push_back(std::move(host_all));
    rows.push_back(std::move(alone));
    rows.push_back(std::move(total));
    for (auto& r : each) {
      rows.push_back(std::move(r));
    }
    if (!run.command.empty() && targets.size() > 1) {
      Row separate =
        row("device", "GPUs " + list + ", a process each, total", run.size * targets.size());
      separate.runs = one_process_each(run, nthreads);
      rows.push_back(std::move(separate));
    }
  }
  for (auto const& t : targets) {
    PushAndPopContext const in{t.ctx};
    KVIKIO_CUDA_DRIVER_TRY(api.MemFree(t.dptr));
  }
  std::printf(
    "%s\nreads into GPUs %s at once (a pool of the row's threads per GPU; per-GPU rows: that "
    "GPU's own time, their CPU column the whole run's; every pool into host memory: the host's "
    "bound for this process)\n",
    header.c_str(),
    list.c_str());
  print_table(rows);
  return rows;
}

}  // namespace kvikio::bench
