/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench remote read: RemoteHandle::pread over each transport asked for (easy: N pool
 * threads; multi_poll: N transfers in flight on few reactors) beside plain libcurl fetching the
 * same ranges with N threads into host memory, interleaved A B A B; and once, one plain GET of
 * the whole object (what one connection can do).
 */
#include "remote_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <curl/curl.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "bench_common.hpp"
#include "devices_bench.hpp"

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

// The other baseline: one GET of the whole object on one connection.
void curl_single_get(std::string const& url, char* dst, std::size_t size)
{
  CURL* h = curl_easy_init();
  Target target{dst, size, 0};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &copy_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, static_cast<void*>(&target));
  if (curl_easy_perform(h) != CURLE_OK || target.got != size) {
    std::fprintf(stderr, "kvikio_bench: baseline GET of %s failed\n", url.c_str());
    std::abort();
  }
  curl_easy_cleanup(h);
}

}  // namespace

double curl_multi_random_reads(std::string const& url,
                               std::size_t object_size,
                               std::size_t io_size,
                               unsigned in_flight,
                               double seconds)
{
  struct Slot {
    CURL* easy;
    std::vector<char> dst;
    Target target;
    std::string range;
  };
  std::vector<Slot> slots(in_flight);
  std::mt19937_64 rng{4242};
  CURLM* multi          = curl_multi_init();
  auto const start_read = [&](Slot& s) {
    std::size_t const offset = rng() % (object_size - io_size);
    s.range                  = std::to_string(offset) + "-" + std::to_string(offset + io_size - 1);
    s.target                 = {s.dst.data(), io_size, 0};
    curl_easy_setopt(s.easy, CURLOPT_RANGE, s.range.c_str());
    curl_multi_add_handle(multi, s.easy);
  };
  for (auto& s : slots) {  // set up once; only the range changes from read to read
    s.easy = curl_easy_init();
    s.dst.resize(io_size);
    curl_easy_setopt(s.easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(s.easy, CURLOPT_WRITEFUNCTION, &copy_body);
    curl_easy_setopt(s.easy, CURLOPT_WRITEDATA, static_cast<void*>(&s.target));
    curl_easy_setopt(s.easy, CURLOPT_PRIVATE, static_cast<void*>(&s));
    start_read(s);
  }
  std::size_t reads   = 0;
  auto const t0       = std::chrono::steady_clock::now();
  auto const deadline = t0 + std::chrono::duration<double>(seconds);
  bool stopping       = false;
  for (int running = static_cast<int>(in_flight); running > 0 || !stopping;) {
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) { continue; }
      Slot* s = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &s);
      if (msg->data.result != CURLE_OK || s->target.got != io_size) {
        std::fprintf(stderr, "kvikio_bench: baseline GET of %s failed\n", s->range.c_str());
        std::abort();
      }
      curl_multi_remove_handle(multi, s->easy);
      ++reads;
      stopping = stopping || std::chrono::steady_clock::now() >= deadline;
      if (!stopping) { start_read(*s); }
    }
    curl_multi_perform(multi, &running);
    if (running == 0 && stopping) { break; }
    curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  double const took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& s : slots) {
    curl_easy_cleanup(s.easy);
  }
  curl_multi_cleanup(multi);
  return static_cast<double>(reads) / took;
}

namespace {

// `kvikio_bench remote read --mem device --devices 0,1,...`: the whole object into every GPU at
// once through the first transport asked for (easy: each GPU's pool; multi-poll: the reactors).
int run_remote_devices(RemoteOptions const& o, RemoteHandle& handle)
{
  KVIKIO_EXPECT(o.mem == "device", "--devices needs --mem device", std::invalid_argument);
  defaults::set_remote_backend(o.backends.front() == "easy"
                                 ? RemoteBackendType::LIBCURL_EASY
                                 : RemoteBackendType::LIBCURL_MULTI_POLL);
  DevicesRun const run{o.devices,
                       handle.nbytes(),
                       parse_size(o.task_size_text),
                       o.threads,
                       o.repeat,
                       o.command,
                       o.device_child};
  auto const read = [&](void* dst, ThreadPool* pool) {
    KVIKIO_EXPECT(handle.pread(dst, run.size, 0, run.task, pool).get() == run.size,
                  "short remote read");
  };
  std::string const date = utc_now();
  std::string const gpu  = gpu_name();
  auto const rows =
    run_devices(run,
                read,
                "kvikio_bench remote read: " + o.url + ", " + std::to_string(run.size) +
                  " bytes each, " + o.backends.front() + ", GPU " + gpu + ", " + date);
  if (!o.json.empty()) {
    write_json_lines(o.json, rows, ",\"url\":\"" + o.url + "\"" + machine_json_fields(gpu, date));
  }
  return 0;
}

}  // namespace

int run_remote(RemoteOptions const& o)
{
  std::size_t const task = parse_size(o.task_size_text);
  bool const device      = o.mem == "device";
  auto handle            = RemoteHandle::open(o.url);
  if (!o.devices.empty()) { return run_remote_devices(o, handle); }
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
    gpu = gpu_name();
  }
  void* const dst = device ? reinterpret_cast<void*>(dptr) : host.get();
  (void)handle.pread(dst, size, 0, task).get();  // warm: connections, pools, server cache

  std::vector<Row> rows;
  Row single{"read", "host", "baseline one GET (host)", 1, size, size, {}};
  for (unsigned rep = 0; rep < o.repeat; ++rep) {
    single.runs.push_back(measure([&] { curl_single_get(o.url, host.get(), size); }));
  }
  rows.push_back(single);
  for (unsigned n : o.threads) {
    // multi_poll: the fewest reactors that N transfers in flight need (one per 8), or as asked.
    unsigned const asked       = o.reactors.empty() ? 0 : o.reactors.front();
    unsigned const reactors    = asked > 0 ? asked : std::max(1U, n / 8);
    unsigned const connections = o.connections > 0 ? o.connections : (n + reactors - 1) / reactors;
    std::vector<Row> kvikio;
    for (auto const& backend : o.backends) {
      std::string const variant =
        backend == "easy"
          ? std::string{"kvikio easy"}
          : "kvikio multi_poll R" + std::to_string(reactors) + " C" + std::to_string(connections);
      kvikio.push_back(
        Row{"read", o.mem, variant, backend == "easy" ? n : reactors, task, size, {}});
    }
    Row baseline{"read", "host", "baseline libcurl (host)", n, task, size, {}};
    auto const configure = [&](std::size_t b) {
      if (o.backends[b] == "easy") {
        defaults::set_remote_backend(RemoteBackendType::LIBCURL_EASY);
        defaults::set_thread_pool_nthreads(n);
      } else {
        defaults::set_remote_backend(RemoteBackendType::LIBCURL_MULTI_POLL);
        defaults::set_remote_io_num_reactors(reactors);
        defaults::set_remote_max_connections(connections);
      }
    };
    auto const read_all = [&] {
      KVIKIO_EXPECT(handle.pread(dst, size, 0, task).get() == size, "short remote read");
    };
    for (std::size_t b = 0; b < o.backends.size(); ++b) {  // warm: connections, reactors
      configure(b);
      read_all();
    }
    for (unsigned rep = 0; rep < o.repeat; ++rep) {
      for (std::size_t b = 0; b < o.backends.size(); ++b) {
        configure(b);
        kvikio[b].runs.push_back(measure(read_all));
      }
      baseline.runs.push_back(measure([&] { curl_baseline(o.url, host.get(), size, task, n); }));
    }
    // The pinned memory each variant needs: one more read from an empty pool.
    for (std::size_t b = 0; b < o.backends.size(); ++b) {
      configure(b);
      BounceBufferPool<>::instance().clear();
      read_all();
      kvikio[b].pinned_bytes = BounceBufferPool<>::instance().pinned_bytes();
      rows.push_back(kvikio[b]);
    }
    rows.push_back(baseline);
  }
  if (device) {
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemFree(dptr));
    CUcontext popped{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxPopCurrent(&popped));
  }
  std::string const date = utc_now();
  std::printf("kvikio_bench remote read: %s, %zu bytes, mem %s, GPU %s, %s\n",
              o.url.c_str(),
              size,
              o.mem.c_str(),
              gpu.c_str(),
              date.c_str());
  print_table(rows);
  if (!o.json.empty()) {
    write_json_lines(o.json, rows, ",\"url\":\"" + o.url + "\"" + machine_json_fields(gpu, date));
  }
  return 0;
}

}  // namespace kvikio::bench
