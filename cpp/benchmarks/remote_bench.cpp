/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench remote read: RemoteHandle::pread (easy transport) beside plain libcurl fetching
 * the same ranges with the same number of threads into host memory, interleaved A B A B.
 */
#include "remote_bench.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <thread>

#include <curl/curl.h>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "bench_common.hpp"

namespace kvikio::bench {
namespace {

struct Target {
  char* dst;
  std::size_t capacity;
  std::size_t got;
};

std::size_t copy_body(char* data, std::size_t size, std::size_t nmemb, void* self) noexcept
{
  auto* t             = static_cast<Target*>(self);
  std::size_t const n = size * nmemb;
  if (n > t->capacity - t->got) { return 0; }
  std::memcpy(t->dst + t->got, data, n);
  t->got += n;
  return n;
}

// The baseline: each thread fetches its chunks with one plain libcurl easy handle of its own.
void curl_baseline(
  std::string const& url, char* dst, std::size_t size, std::size_t task, unsigned nthreads)
{
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      CURL* h = curl_easy_init();
      for (std::size_t off = t * task; off < size;
           off += static_cast<std::size_t>(nthreads) * task) {
        std::size_t const n     = std::min(task, size - off);
        std::string const range = std::to_string(off) + "-" + std::to_string(off + n - 1);
        Target target{dst + off, n, 0};
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &copy_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, static_cast<void*>(&target));
        if (curl_easy_perform(h) != CURLE_OK || target.got != n) {
          std::fprintf(stderr, "kvikio_bench: baseline GET of %s failed\n", range.c_str());
          std::abort();
        }
      }
      curl_easy_cleanup(h);
    });
  }
  for (auto& th : threads) {
    th.join();
  }
}

}  // namespace

int run_remote(RemoteOptions const& o)
{
  std::size_t const task = parse_size(o.task_size_text);
  bool const device      = o.mem == "device";
  auto handle            = RemoteHandle::open(o.url);
  std::size_t const size = handle.nbytes();
  std::unique_ptr<char, void (*)(void*)> host{static_cast<char*>(std::malloc(size)), std::free};
  KVIKIO_EXPECT(host != nullptr, "cannot allocate the host buffer");
  std::memset(host.get(), 0x5A, size);
  CUdeviceptr dptr = 0;
  CUcontext ctx    = nullptr;
  std::string gpu  = "none";
  if (device) {
    auto& api = cudaAPI::instance();
    ctx       = get_primary_cuda_context(0);
    KVIKIO_CUDA_DRIVER_TRY(api.CtxPushCurrent(ctx));
    KVIKIO_CUDA_DRIVER_TRY(api.MemAlloc(&dptr, size));
    char name[256] = {};
    KVIKIO_CUDA_DRIVER_TRY(api.DeviceGetName(name, sizeof(name), 0));
    gpu = name;
  }
  void* const dst = device ? reinterpret_cast<void*>(dptr) : host.get();
  (void)handle.pread(dst, size, 0, task).get();  // warm: connections, pools, server cache

  std::vector<Row> rows;
  for (unsigned nthreads : o.threads) {
    defaults::set_thread_pool_nthreads(nthreads);
    Row kvikio{"read", o.mem, "kvikio " + o.backend, nthreads, task, size, {}};
    Row baseline{"read", "host", "baseline libcurl (host)", nthreads, task, size, {}};
    for (unsigned rep = 0; rep < o.repeat; ++rep) {
      kvikio.runs.push_back(measure([&] {
        KVIKIO_EXPECT(handle.pread(dst, size, 0, task).get() == size, "short remote read");
      }));
      baseline.runs.push_back(
        measure([&] { curl_baseline(o.url, host.get(), size, task, nthreads); }));
    }
    rows.push_back(kvikio);
    rows.push_back(baseline);
  }
  if (device) {
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemFree(dptr));
    CUcontext popped{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxPopCurrent(&popped));
  }
  std::time_t const now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::printf("kvikio_bench remote read: %s, %zu bytes, mem %s, GPU %s, %s\n",
              o.url.c_str(),
              size,
              o.mem.c_str(),
              gpu.c_str(),
              date);
  print_table(rows);
  if (!o.json.empty()) {
    write_json_lines(
      o.json, rows, ",\"url\":\"" + o.url + "\",\"gpu\":\"" + gpu + "\",\"date\":\"" + date + "\"");
  }
  return 0;
}

}  // namespace kvikio::bench
