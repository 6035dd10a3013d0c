/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "reader_options.hpp"

namespace kvikio::bench {

struct RemoteOptions {
  std::string op_text{"read"};  // read | random
  std::string url;
  std::vector<unsigned> threads;  ///< N: easy and baseline threads, multi-poll transfers in flight
  std::string task_size_text{"4MiB"};
  std::string mem{"host"};
  std::vector<std::string> backends{"easy"};  ///< transports measured: easy, multi_poll
  /// multi_poll reactors; read: the first (none or 0: one per 8 in flight, at least one);
  /// random: a variant per count (none: 1)
  std::vector<unsigned> reactors;
  /// multi_poll transfers in flight per reactor; read: 0 is N / reactors; random: 0 is the
  /// setting's default
  unsigned connections{0};
  unsigned repeat{5};
  std::string json;
  std::vector<int> devices;  ///< reads into these GPUs at once (devices_bench.hpp); empty: one
  std::vector<std::string> command;  ///< this program's command line (one process per GPU)
  bool device_child{false};          ///< this process is one of them (devices_bench.hpp)
  // `random` (random_bench.cpp): the reader's workload (`threads` are the easy variants' pool
  // sizes), the object being a copy of `reference`.
  std::string reference;
  ReaderOptions reader;
};

/// Runs `kvikio_bench remote read ...`; returns the process exit code.
int run_remote(RemoteOptions const& options);

/// The reader's workload's baseline: one thread, one libcurl multi handle and `in_flight` easy
/// handles set up once, fetching ranges of `io_size` bytes at random offsets of the object into
/// host memory for `seconds` (only the range changes between reads); reads per second.
double curl_multi_random_reads(std::string const& url,
                               std::size_t object_size,
                               std::size_t io_size,
                               unsigned in_flight,
                               double seconds);

/// Runs `kvikio_bench remote random ...` (the reader's workload); returns the exit code.
int run_remote_random(RemoteOptions const& options);

}  // namespace kvikio::bench
