/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <kvikio/threadpool_wrapper.hpp>

#include "bench_common.hpp"

namespace kvikio::bench {

/// What `--devices` measures: `size` bytes read into every listed GPU at once.
struct DevicesRun {
  std::vector<int> devices;  ///< ordinals
  std::size_t size;
  std::size_t task;
  std::vector<unsigned> threads;  ///< a pool of this many threads per GPU, per point
  unsigned repeat;
  /// This program's command line: run again once per GPU (one GPU, one thread count,
  /// `--device-child`) for the "one process each" row; empty: no such row.
  std::vector<std::string> command;
  /// This process is one of those (it reads into `devices[0]` with `threads[0]` threads when
  /// told to on its standard input, and prints the seconds each read took).
  bool child{false};
};

/// Reads `size` bytes into `dst` (host or device memory) with the tasks on `pool`.
using ReadInto = std::function<void(void* dst, ThreadPool* pool)>;

/**
 * @brief Per thread count, interleaved: `read` into host memory (the host's bound), into the
 * first GPU alone, and into every GPU at once from a thread each; rows per GPU (that GPU's own
 * time) and in total; then, with `run.command`, every GPU at once from a process each (started
 * together for each repeat: the total is the bytes over the slowest process's time). Prints the
 * table with `header` and returns the rows; in a child (`run.child`), serves its parent and
 * returns none.
 * @throws std::invalid_argument naming a GPU the machine does not have.
 */
std::vector<Row> run_devices(DevicesRun const& run,
                             ReadInto const& read,
                             std::string const& header);

}  // namespace kvikio::bench
