/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "reader_options.hpp"

namespace kvikio::bench {

struct LocalOptions {
  std::string op;  // read | write
  std::string file;
  std::string size_text{"1GiB"};
  std::vector<unsigned> threads;
  std::vector<std::size_t> ring_depths;  // empty: the current setting
  std::string task_size_text{"4MiB"};
  std::string mem{"host"};
  unsigned repeat{5};
  bool direct{false};
  bool drop_cache{false};
  bool create{false};
  std::string json;
  // `random` (random_bench.cpp): the reader's workload, `threads` as pool sizes (0: no setting).
  ReaderOptions reader;
  std::string api{"pread"};  // async: device reads as N read_async back to back on one stream
  unsigned async_reads{8};   // N
  // Local backends to compare (KVIKIO_LOCAL_IO_BACKEND), and io_uring request shapes to sweep
  // ("SIZE:DEPTH"; none: the library's).
  std::vector<std::string> backends{"auto"};
  std::vector<std::string> io_uring_shapes;
  bool io_uring_unregistered{false};
  // Device reads into several GPUs at once (ordinals); empty: one GPU, the sweep above.
  std::vector<int> devices;
  // This program's command line (for one process per GPU), and whether this process is one
  // (devices_bench.hpp).
  std::vector<std::string> command;
  bool device_child{false};
};

/// Runs `kvikio_bench local ...`; returns the process exit code.
int run_local(LocalOptions const& options);

/// Runs `kvikio_bench local random ...` (the reader's workload); returns the exit code.
int run_local_random(LocalOptions const& options);

struct WorkloadMemory;  // reader_workload.hpp

/// Pinned host memory, or device memory of the current context, for the reader's workloads.
WorkloadMemory memory_of(bool device);

/// The file of `size` bytes at `path` exists (written with random bytes if it is shorter).
void ensure_file(std::string const& path, std::size_t size);

}  // namespace kvikio::bench
