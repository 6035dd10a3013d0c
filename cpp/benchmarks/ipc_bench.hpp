/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <string>

namespace kvikio::bench {

struct IpcOptions {
  std::size_t calls{2000};         // timed calls per variant
  std::size_t allocations{4};      // the producer's allocations, opened in turn
  std::string size_text{"64MiB"};  // bytes per allocation
  std::string json;                // append one JSON line per row
  int producer_fd{-1};             // set: this process is the producer, writing handles here
};

/// Cached and uncached export_memory/open beside the driver's own calls (a producer process is
/// started from this binary), per-call microseconds.
int run_ipc(IpcOptions const& o);

}  // namespace kvikio::bench
