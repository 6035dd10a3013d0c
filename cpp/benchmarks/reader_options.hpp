/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kvikio::bench {

/// The reader's workload (reader_workload.hpp) as `kvikio_bench local|remote random` runs it:
/// `callers` x `in_flight` reads of each of `io_sizes` for `seconds`, then `latency_reads`
/// synchronous reads of each of `latency_sizes`.
struct ReaderOptions {
  std::vector<std::string> io_sizes{"64KiB", "1MiB", "8MiB"};
  unsigned callers{4};
  unsigned in_flight{8};
  double seconds{2.0};
  std::vector<std::string> latency_sizes{"4KiB", "64KiB"};
  std::size_t latency_reads{2000};
};

}  // namespace kvikio::bench
