/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/shim/cuda.hpp>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <kvikio/error.hpp>

#include "shim/dynamic_library.hpp"

#define KVIKIO_DETAIL_STRINGIFY_IMPL(x) #x
// Expands macros first, so that `cuMemAlloc` becomes "cuMemAlloc_v2".
#define KVIKIO_DETAIL_STRINGIFY(x) KVIKIO_DETAIL_STRINGIFY_IMPL(x)

namespace kvikio {
namespace {

std::mutex library_name_mutex;
std::string library_name{"libcuda.so.1"};
bool library_looked_for{false};

}  // namespace

// Loads the driver once; keeps either the table or the reason there is none. Hidden, like all
// process-wide state: a second copy of the library in the process keeps its own (docs/design.md,
// "Trust boundaries").
struct [[gnu::visibility("hidden")]] CudaDriverLoader
{
  std::unique_ptr<cudaAPI> api;
  std::string unavailable_reason;

  CudaDriverLoader()
  {
    std::string name;
    {
      std::lock_guard const lock{library_name_mutex};
      library_looked_for = true;
      name               = library_name;
    }
    try {
      detail::DynamicLibrary const lib{name};
      auto table = std::unique_ptr<cudaAPI>(new cudaAPI());
#define KVIKIO_DETAIL_RESOLVE_ENTRY(member, function) \
  lib.resolve(table->member, KVIKIO_DETAIL_STRINGIFY(function));
      KVIKIO_CUDA_DRIVER_ENTRY_POINTS(KVIKIO_DETAIL_RESOLVE_ENTRY)
#undef KVIKIO_DETAIL_RESOLVE_ENTRY
#define KVIKIO_DETAIL_RESOLVE_OPTIONAL_ENTRY(member, function) \
  table->member = lib.find<decltype(table->member)>(KVIKIO_DETAIL_STRINGIFY(function));
      KVIKIO_CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(KVIKIO_DETAIL_RESOLVE_OPTIONAL_ENTRY)
#undef KVIKIO_DETAIL_RESOLVE_OPTIONAL_ENTRY
      CUresult const init = table->Init(0);
      if (init != CUDA_SUCCESS) {
        // cuGetErrorName works before a successful cuInit.
        char const* err_name = nullptr;
        table->GetErrorName(init, &err_name);
        unavailable_reason = "the CUDA driver (" + name +
                             ") failed to initialise: cuInit(0) returned " +
                             (err_name != nullptr ? err_name : std::to_string(init));
        return;
      }
      table->DriverGetVersion(&table->driver_version);
      api = std::move(table);
    } catch (std::runtime_error const& e) {
      unavailable_reason = std::string{"no CUDA driver found: "} + e.what();
    }
  }

  static CudaDriverLoader const& get()
  {
    if (auto const* loaded = done.load(std::memory_order_acquire)) { return *loaded; }
    std::lock_guard const lock{loading};
    if (auto const* loaded = done.load(std::memory_order_acquire)) { return *loaded; }
    auto const* loaded = new CudaDriverLoader();  // never freed: the table is used until exit
    done.store(loaded, std::memory_order_release);
    return *loaded;
  }

  // The load runs under `loading`, which fork() waits for (the handlers below): a child forked
  // while another thread loads would find the load forever in progress (its thread is not
  // there), and every first device check of the child would wait for it.
  static inline std::mutex loading;
  static inline std::atomic<CudaDriverLoader const*> done{nullptr};
};

namespace {

// Registered when the library is loaded; never starts a load (a fork must not initialise the
// driver: CUDA does not survive fork after cuInit).
[[maybe_unused]] int const fork_waits_for_the_driver_load =
  ::pthread_atfork([] { CudaDriverLoader::loading.lock(); },
                   [] { CudaDriverLoader::loading.unlock(); },
                   [] { CudaDriverLoader::loading.unlock(); });

}  // namespace

cudaAPI& cudaAPI::instance()
{
  auto const& loader = CudaDriverLoader::get();
  if (!loader.api) {
    throw CUfileException{"KvikIO: this operation needs a GPU, but " + loader.unavailable_reason};
  }
  return *loader.api;
}

CUresult cudaAPI::cuda_memcpy_async(CUdeviceptr dst,
                                    CUdeviceptr src,
                                    std::size_t size,
                                    CUstream stream)
{
  if (can_batch_copies(stream)) { return memcpy_batch_async(&dst, &src, &size, 1, stream); }
  return instance().MemcpyAsync(dst, src, size, stream);
}

bool cudaAPI::can_batch_copies(CUstream stream)
{
  auto const& api = instance();
  return api.MemcpyBatchAsync != nullptr && api.driver_version >= 12080 && stream != nullptr;
}

CUresult cudaAPI::memcpy_batch_async(
  CUdeviceptr* dsts, CUdeviceptr* srcs, std::size_t* sizes, std::size_t count, CUstream stream)
{
  CUmemcpyAttributes attrs{};
  attrs.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  std::size_t attrs_index{0};
  return instance().MemcpyBatchAsync(dsts, srcs, sizes, count, &attrs, &attrs_index, 1, stream);
}

bool is_cuda_available() noexcept { return CudaDriverLoader::get().api != nullptr; }

namespace detail {

CUcontext current_context_where_cuda_is_in_use() noexcept
{
  if (auto const* loaded = CudaDriverLoader::done.load(std::memory_order_acquire)) {
    CUcontext ctx{};
    if (loaded->api == nullptr || loaded->api->CtxGetCurrent(&ctx) != CUDA_SUCCESS) {
      return nullptr;
    }
    return ctx;
  }
  std::string name;
  try {
    std::lock_guard const lock{library_name_mutex};
    name = library_name;
  } catch (...) {
    return nullptr;
  }
  // Asked through the process's own handle, which answers CUDA_ERROR_NOT_INITIALIZED before
  // cuInit: loading this library's table calls cuInit, which only a process using CUDA has done.
  void* const handle = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) { return nullptr; }
  using GetCurrent = CUresult (*)(CUcontext*);
  auto const get   = reinterpret_cast<GetCurrent>(::dlsym(handle, "cuCtxGetCurrent"));
  CUcontext ctx{};
  bool const in_use = get != nullptr && get(&ctx) == CUDA_SUCCESS && ctx != nullptr;
  ::dlclose(handle);
  return in_use && is_cuda_available() ? ctx : nullptr;
}

std::string cuda_unavailable_reason() { return CudaDriverLoader::get().unavailable_reason; }

void set_cuda_driver_library_name(std::string name)
{
  std::lock_guard const lock{library_name_mutex};
  if (library_looked_for) {
    throw std::logic_error("set_cuda_driver_library_name(" + name +
                           "): the CUDA driver was already looked for in this process");
  }
  library_name = std::move(name);
}

}  // namespace detail
}  // namespace kvikio
