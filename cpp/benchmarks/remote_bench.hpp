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
  std::vector<unsigned> threads;
  std::string task_size_text{"4MiB"};
  std::string mem{"host"};
  std::string backend{"easy"};  ///< the remote transport measured
  unsigned repeat{5};
  std::string json;
};

/// Runs `kvikio_bench remote read ...`; returns the process exit code.
int run_remote(RemoteOptions const& options);

}  // namespace kvikio::bench
