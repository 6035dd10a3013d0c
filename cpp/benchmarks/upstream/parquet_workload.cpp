/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The columnar reader's workload (cpp/benchmarks/parquet_workload.hpp) as a program of the public
 * API alone, compiled against upstream KvikIO and against this project (ci/upstream-harness.sh,
 * run by ci/parquet-bench.sh).
 *
 * Usage: parquet_workload <label> <file> <host|device> <serial|inflight|batch> <seconds>
 *        [gap (65536)] [callers (1)]
 * With READER_URL set (not empty), the reads go to that object through RemoteHandle (its
 * transport as the settings say) and <file> is a local copy of its bytes, for the checks. Prints
 * one line: "<label> parquet <mode> <mem> c<callers>: <n> reads/s <x> GB/s <n> rowgroups/s".
 */
#include <cuda.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "../parquet_workload.hpp"
#include "driver_memory.hpp"

using kvikio::bench::driver::check;

int main(int argc, char** argv)
{
  if (argc < 6) {
    std::fprintf(
      stderr, "usage: %s label file host|device mode seconds [gap] [callers]\n", argv[0]);
    return 2;
  }
  try {
    std::string const label = argv[1];
    std::string const path  = argv[2];
    bool const device       = std::string{argv[3]} == "device";
    std::string const mode  = argv[4];
    double const seconds    = std::atof(argv[5]);
    std::size_t const gap   = argc > 6 ? std::stoull(argv[6]) : 65536;
    unsigned const callers  = argc > 7 ? static_cast<unsigned>(std::atoi(argv[7])) : 1;
    CUcontext const ctx     = kvikio::bench::driver::primary_context();
    kvikio::bench::WorkloadMemory const memory = kvikio::bench::driver::memory(device);
    int const fd                               = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) { throw std::runtime_error("cannot open " + path); }
    kvikio::bench::parquet::Target target{path, std::getenv("READER_URL")};
    auto const r =
      kvikio::bench::parquet::run(target, fd, memory, mode, seconds, gap, callers, [&] {
        check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
      });
    std::printf("%s parquet %s %s c%u: %.0f reads/s %.3f GB/s %.2f rowgroups/s\n",
                label.c_str(),
                mode.c_str(),
                device ? "device" : "host",
                callers,
                static_cast<double>(r.ranges) / r.seconds,
                static_cast<double>(r.bytes) / r.seconds / 1e9,
                static_cast<double>(r.row_groups) / r.seconds);
    ::close(fd);
    return 0;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "parquet_workload: %s\n", e.what());
    return 1;
  }
}
