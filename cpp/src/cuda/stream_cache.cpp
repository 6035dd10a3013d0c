/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/stream_cache.hpp"

#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

// Keyed by thread id: a thread that ends leaves its streams to the next thread given its id, so
// pools that restart threads do not grow the number of streams.
struct StreamCache {
  std::mutex mutex;
  std::map<std::tuple<std::thread::id, CUcontext, unsigned>, CUstream> streams;
};

StreamCache& cache()
{
  static detail::BuiltOnce<StreamCache> instance;  // never destroyed: streams outlive exit
  return instance.get([] { return new StreamCache(); });
}

// The stream of this thread, `ctx` and `flags` in the shared map, made at the first call.
CUstream shared_stream_for_this_thread(CUcontext ctx, unsigned flags)
{
  auto& c        = cache();
  auto const key = std::make_tuple(std::this_thread::get_id(), ctx, flags);
  {
    std::lock_guard const lock{c.mutex};
    if (auto it = c.streams.find(key); it != c.streams.end()) { return it->second; }
  }
  CUstream stream{};
  {
    PushAndPopContext const guard{ctx};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamCreate(&stream, flags));
  }
  std::lock_guard const lock{c.mutex};
  c.streams.emplace(key, stream);  // only this thread inserts this key
  return stream;
}

// This thread's own copy of its entries: every device read asks, from every pool thread at
// once, and the shared map's mutex would be taken by all of them.
CUstream cached_stream_for_this_thread(CUcontext ctx, unsigned flags)
{
  struct Mine {
    CUcontext ctx;
    unsigned flags;
    CUstream stream;
  };
  thread_local std::vector<Mine> mine;
  for (auto const& m : mine) {
    if (m.ctx == ctx && m.flags == flags) { return m.stream; }
  }
  CUstream const stream = shared_stream_for_this_thread(ctx, flags);
  mine.push_back({ctx, flags, stream});
  return stream;
}

}  // namespace

CUstream stream_for_this_thread(CUcontext ctx)
{
  // Blocking (not CU_STREAM_NON_BLOCKING): its copies are ordered after work queued earlier on
  // the legacy default stream, as the non-async CUDA API's are, without the host waiting for
  // that stream before each transfer.
  return cached_stream_for_this_thread(ctx, CU_STREAM_DEFAULT);
}

CUstream independent_stream_for_this_thread(CUcontext ctx)
{
  return cached_stream_for_this_thread(ctx, CU_STREAM_NON_BLOCKING);
}

std::size_t stream_count(CUcontext ctx)
{
  auto& c = cache();
  std::lock_guard const lock{c.mutex};
  std::size_t n = 0;
  for (auto const& [key, stream] : c.streams) {
    n += std::get<1>(key) == ctx ? 1 : 0;
  }
  return n;
}

}  // namespace kvikio::detail
