/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/stream_cache.hpp>

#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::detail {

CUstream stream_for_this_thread(CUcontext ctx)
{
  // Keyed by thread id: a thread that ends leaves its stream to the next thread given its id,
  // so pools that restart threads do not grow the number of streams.
  static std::mutex mutex;
  static auto* const streams = new std::map<std::pair<std::thread::id, CUcontext>, CUstream>();
  auto const key             = std::make_pair(std::this_thread::get_id(), ctx);
  {
    std::lock_guard const lock{mutex};
    if (auto it = streams->find(key); it != streams->end()) { return it->second; }
  }
  CUstream stream{};
  {
    PushAndPopContext const guard{ctx};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  }
  std::lock_guard const lock{mutex};
  streams->emplace(key, stream);  // only this thread inserts this key
  return stream;
}

}  // namespace kvikio::detail
