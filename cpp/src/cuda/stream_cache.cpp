/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "cuda/stream_cache.hpp"

#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {
namespace {

// Keyed by thread id: a thread that ends leaves its stream to the next thread given its id, so
// pools that restart threads do not grow the number of streams.
struct StreamCache {
  std::mutex mutex;
  std::map<std::pair<std::thread::id, CUcontext>, CUstream> streams;
};

StreamCache& cache()
{
  static detail::BuiltOnce<StreamCache> instance;  // never destroyed: streams outlive exit
  return instance.get([] { return new StreamCache(); });
}

// The stream of this thread and `ctx` in the shared map, made at the first call.
CUstream shared_stream_for_this_thread(CUcontext ctx)
{
  auto& c        = cache();
  auto const key = std::make_pair(std::this_thread::get_id(), ctx);
  {
    std::lock_guard const lock{c.mutex};
    if (auto it = c.streams.find(key); it != c.streams.end()) { return it->second; }
  }
  CUstream stream{};
  {
    PushAndPopContext const guard{ctx};
    // Blocking (not CU_STREAM_NON_BLOCKING): its copies are ordered after work queued earlier
    // on the legacy default stream, as the non-async CUDA API's are, without the host waiting for
    // that stream before each transfer.
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamCreate(&stream, CU_STREAM_DEFAULT));
  }
  std::lock_guard const lock{c.mutex};
  c.streams.emplace(key, stream);  // only this thread inserts this key
  return stream;
}

}  // namespace

CUstream stream_for_this_thread(CUcontext ctx)
{
  // This thread's own copy of its entries: every device read asks, from every pool thread at
  // once, and the shared map's mutex would be taken by all of them.
  thread_local std::vector<std::pair<CUcontext, CUstream>> mine;
  for (auto const& [c, s] : mine) {
    if (c == ctx) { return s; }
  }
  CUstream const stream = shared_stream_for_this_thread(ctx);
  mine.emplace_back(ctx, stream);
  return stream;
}

std::size_t stream_count(CUcontext ctx)
{
  auto& c = cache();
  std::lock_guard const lock{c.mutex};
  std::size_t n = 0;
  for (auto const& [key, stream] : c.streams) {
    n += key.second == ctx ? 1 : 0;
  }
  return n;
}

}  // namespace kvikio::detail
