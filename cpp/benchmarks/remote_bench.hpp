/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kvikio::bench {

struct RemoteOptions {
  std::string op_text{"read"};
  std::string url;
  std::vector<unsigned> threads;  ///< N: easy and baseline threads, multi-poll transfers in flight
  std::string task_size_text{"4MiB"};
  std::string mem{"host"};
  std::vector<std::string> backends{"easy"};  ///< transports measured: easy, multi_poll
  unsigned reactors{0};     ///< multi_poll reactors; 0: one per 8 in flight (at least one)
  unsigned connections{0};  ///< multi_poll transfers in flight per reactor; 0: N / reactors
  unsigned repeat{5};
  std::string json;
  std::vector<int> devices;  ///< reads into these GPUs at once (devices_bench.hpp); empty: one
};

/// Runs `kvikio_bench remote read ...`; returns the process exit code.
int run_remote(RemoteOptions const& options);

}  // namespace kvikio::bench
