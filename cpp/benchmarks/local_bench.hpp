/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

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
  std::size_t random_ops{0};  // > 0: that many reads of io_size at random offsets per point
  std::string io_size_text{"4KiB"};
  std::string api{"pread"};  // async: device reads as N read_async back to back on one stream
  unsigned async_reads{8};   // N
  // Local backends to compare (KVIKIO_LOCAL_IO_BACKEND), and io_uring request shapes to sweep
  // ("SIZE:DEPTH"; none: the library's).
  std::vector<std::string> backends{"posix"};
  std::vector<std::string> io_uring_shapes;
  bool io_uring_unregistered{false};
  // Device reads into several GPUs at once (ordinals); empty: one GPU, the sweep above.
  std::vector<int> devices;
};

/// Runs `kvikio_bench local ...`; returns the process exit code.
int run_local(LocalOptions const& options);

}  // namespace kvikio::bench
