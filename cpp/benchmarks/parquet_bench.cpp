/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench parquet: the columnar reader's workload (parquet_workload.hpp) on this library,
 * from a local file or (--url) a remote object holding the file's bytes, every mode in each
 * round (serial, inflight, batch), rounds interleaved.
 */
#include "parquet_bench.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "bench_common.hpp"
#include "local_bench.hpp"
#include "parquet_workload.hpp"

namespace kvikio::bench {

int run_parquet(ParquetOptions const& o)
{
  if (o.create) { ensure_file(o.file, parse_size(o.size_text)); }
  if (o.threads > 0) { defaults::set_thread_pool_nthreads(o.threads); }
  bool const device   = o.mem == "device";
  CUcontext const ctx = get_primary_cuda_context(0);  // pinned host memory needs one too
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxSetCurrent(ctx));
  auto const memory = memory_of(device);
  int const fd      = ::open(o.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) { throw std::runtime_error("kvikio_bench parquet: cannot open " + o.file); }
  parquet::Target target{o.file, o.url.c_str()};
  char const* const place = o.url.empty() ? "local" : "remote";
  for (unsigned round = 1; round <= o.repeat; ++round) {
    for (auto const& mode : o.modes) {
      auto const r = parquet::run(target, fd, memory, mode, o.seconds, o.gap, o.callers, [&] {
        KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxSetCurrent(ctx));
      });
      std::printf("parquet %s %s %-8s round %u c%u pool%u: %.0f reads/s %.3f GB/s\n",
                  place,
                  o.mem.c_str(),
                  mode.c_str(),
                  round,
                  o.callers,
                  defaults::thread_pool_nthreads(),
                  static_cast<double>(r.ranges) / r.seconds,
                  static_cast<double>(r.bytes) / r.seconds / 1e9);
      std::fflush(stdout);
    }
  }
  ::close(fd);
  return 0;
}

}  // namespace kvikio::bench
