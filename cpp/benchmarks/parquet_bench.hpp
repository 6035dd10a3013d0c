/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kvikio::bench {

/// `kvikio_bench parquet`: the columnar reader's workload (parquet_workload.hpp).
struct ParquetOptions {
  std::string file;
  std::string url;  // empty: the local file
  std::string size_text{"2GiB"};
  bool create{false};
  std::string mem{"device"};
  std::vector<std::string> modes{"serial", "inflight", "batch"};
  std::size_t gap{65536};
  double seconds{3.0};
  unsigned callers{1};
  unsigned threads{0};  // 0: the pool as the settings make it
  unsigned repeat{2};
};

/// Runs `kvikio_bench parquet ...`; returns the process exit code.
int run_parquet(ParquetOptions const& options);

}  // namespace kvikio::bench
