/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The reader's workload (cpp/benchmarks/reader_workload.hpp) as a program of the public API
 * alone, compiled against upstream KvikIO and against this project (ci/upstream-harness.sh):
 * for each size, `callers` threads x `in_flight` reads in flight at random unaligned offsets;
 * then one caller's synchronous reads (p50/p99); then the process's peak resident memory.
 *
 * Usage: reader_workload <label> <file> <host|device> <callers> <in_flight> <pool threads, 0: no
 *        setting> <seconds> <sizes, e.g. 65536,1048576> [latency sizes] [latency reads]
 * With READER_URL set, the reads go to that object through RemoteHandle (its transport as
 * KVIKIO_REMOTE_BACKEND says) and <file> is a local copy of its bytes, for the checks.
 *
 * With a label "plain/<variant>" and READER_URL set, no library call reads either: one thread
 * of libcurl's multi interface keeps <callers> x <in_flight> ranged GETs in flight (an easy handle
 * each, reused; host memory written by the write callback, device memory through a pinned buffer
 * per transfer copied with cuMemcpyHtoD once it arrived): the plain way of one reactor.
 *
 * With the label `plain`, no library call reads: <pool threads> threads (at least one) of the
 * plain way instead, into <callers> x <in_flight> destinations taken in turn, each read by
 * pread(2) (into a pinned buffer of the thread's and, for device memory, copied with one
 * cuMemcpyHtoDAsync on the thread's stream and waited for); the latency sizes likewise on one
 * thread. What that many threads of the simplest code reach: the floor a
 * library is to beat and, for host memory, what the page cache gives that many threads.
 */
#include <cuda.h>
#ifdef KVIKIO_BENCH_REMOTE
#include <curl/curl.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/defaults.hpp>

#include "../reader_workload.hpp"
#include "driver_memory.hpp"

using kvikio::bench::driver::check;

namespace {

std::vector<std::size_t> sizes_of(std::string const& text)
{
  std::vector<std::size_t> out;
  std::stringstream in{text};
  for (std::string item; std::getline(in, item, ',');) {
    out.push_back(std::stoull(item));
  }
  return out;
}

// The plain way of one read: pread(2) into `staging` (pinned) and, for device memory, one copy
// on `stream` and a wait for it.
void plain_read(int fd,
                void* staging,
                void* dst,
                std::size_t size,
                std::size_t offset,
                bool device,
                CUstream stream)
{
  kvikio::bench::detail::pread_exactly(fd, device ? staging : dst, size, offset);
  if (device) {
    check(cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), staging, size, stream),
          "cuMemcpyHtoDAsync");
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
}

// `threads` threads of plain_read() of `size` bytes at random unaligned offsets for `seconds`,
// into `destinations` destinations (at least one per thread), thread t taking t, t + threads, ...
// in turn: the same memory as the library's reads, so that neither keeps its destinations in a
// cache the other's spill out of. The last read of each is checked against pread(2).
kvikio::bench::ThroughputResult plain_throughput(kvikio::bench::ReadTarget const& target,
                                                 kvikio::bench::WorkloadMemory const& memory,
                                                 CUcontext ctx,
                                                 bool device,
                                                 std::size_t size,
                                                 unsigned threads,
                                                 std::size_t destinations,
                                                 double seconds)
{
  int const fd                = target.reference_fd();
  std::size_t const file_size = target.size();
  if (size == 0 || size >= file_size) {
    throw std::invalid_argument("reader workload: the read size must be in (0, file size)");
  }
  std::size_t const slots       = std::max<std::size_t>(destinations, threads);
  auto* const base              = static_cast<char*>(memory.alloc(slots * size));
  std::atomic<std::size_t> done = 0;
  std::vector<std::size_t> last(slots);
  std::vector<char> written(slots, 0);  // not vector<bool>: threads write neighbouring slots
  std::vector<std::exception_ptr> errors(threads);
  auto const start    = std::chrono::steady_clock::now();
  auto const deadline = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      void* staging    = nullptr;
      CUstream stream  = nullptr;
      std::size_t mine = 0;
      try {
        check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
        check(cuMemHostAlloc(&staging, size, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
        check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        std::mt19937_64 rng{1000003 + t};
        std::size_t slot = t;
        do {
          last[slot] = rng() % (file_size - size);
          plain_read(fd, staging, base + slot * size, size, last[slot], device, stream);
          written[slot] = 1;
          ++mine;
          slot = slot + threads < slots ? slot + threads : t;
        } while (std::chrono::steady_clock::now() < deadline);
      } catch (...) {
        errors[t] = std::current_exception();
      }
      if (stream != nullptr) { (void)cuStreamDestroy(stream); }
      if (staging != nullptr) { (void)cuMemFreeHost(staging); }
      done += mine;
    });
  }
  double const took =
    kvikio::bench::detail::join_check_release(pool, start, errors, memory, base, [&] {
      for (std::size_t s = 0; s < slots; ++s) {
        if (written[s] != 0) {
          kvikio::bench::detail::check_bytes(fd, memory, base + s * size, size, last[s]);
        }
      }
    });
  return {done.load(), took};
}

#ifdef KVIKIO_BENCH_REMOTE
// The plain way of one reactor: one thread, `transfers` ranged GETs of `size` bytes at random
// unaligned offsets of `url` in flight through libcurl's multi interface for `seconds`, each
// into its own destination (device memory: through its pinned buffer, copied on arrival). The
// last bytes of each destination are checked against pread(2).
kvikio::bench::ThroughputResult plain_multi_throughput(std::string const& url,
                                                       kvikio::bench::ReadTarget const& target,
                                                       kvikio::bench::WorkloadMemory const& memory,
                                                       bool device,
                                                       std::size_t size,
                                                       std::size_t transfers,
                                                       double seconds)
{
  struct Transfer {
    CURL* easy{nullptr};
    char* dst{nullptr};
    char* landing{nullptr};  // where the body goes: dst, or a pinned buffer for device memory
    std::size_t size{0};
    std::size_t got{0};
    std::size_t offset{0};
    std::size_t last{0};  // the offset of the last transfer that arrived whole
    std::string range;
    bool written{false};
  };
  std::size_t const file_size = target.size();
  auto* const base            = static_cast<char*>(memory.alloc(transfers * size));
  std::vector<Transfer> all(transfers);
  CURLM* const multi = curl_multi_init();
  std::mt19937_64 rng{7};
  auto const write = +[](char* data, std::size_t n, std::size_t m, void* self) -> std::size_t {
    auto& t             = *static_cast<Transfer*>(self);
    std::size_t const k = n * m;
    if (t.got + k > t.size) { return 0; }  // more than the range: the transfer fails
    std::memcpy(t.landing + t.got, data, k);
    t.got += k;
    return k;
  };
  auto const start_one = [&](Transfer& t) {
    t.offset = rng() % (file_size - size);
    t.got    = 0;
    t.range  = std::to_string(t.offset) + "-" + std::to_string(t.offset + size - 1);
    curl_easy_setopt(t.easy, CURLOPT_RANGE, t.range.c_str());
    curl_multi_add_handle(multi, t.easy);
  };
  for (std::size_t i = 0; i < transfers; ++i) {
    auto& t = all[i];
    t.dst   = base + i * size;
    t.size  = size;
    if (device) {
      void* pinned = nullptr;
      check(cuMemHostAlloc(&pinned, size, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
      t.landing = static_cast<char*>(pinned);
    } else {
      t.landing = t.dst;
    }
    t.easy = curl_easy_init();
    curl_easy_setopt(t.easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, write);
    curl_easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(t.easy, CURLOPT_PRIVATE, &t);
    start_one(t);
  }
  std::size_t done = 0;
  auto const begin = std::chrono::steady_clock::now();
  auto const until = begin + std::chrono::duration<double>(seconds);
  std::string failed;
  int running = 0;
  while (failed.empty() && std::chrono::steady_clock::now() < until) {
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) { continue; }
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      curl_multi_remove_handle(multi, t->easy);
      if (msg->data.result != CURLE_OK || t->got != size) {
        failed = "plain multi: a transfer failed or came short";
        break;
      }
      if (device) {
        check(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(t->dst), t->landing, size),
              "cuMemcpyHtoD");
      }
      t->written = true;
      t->last    = t->offset;
      ++done;
      start_one(*t);
    }
    curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  double const took =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (auto& t : all) {
    curl_multi_remove_handle(multi, t.easy);
    curl_easy_cleanup(t.easy);
    if (device) { (void)cuMemFreeHost(t.landing); }
  }
  curl_multi_cleanup(multi);
  try {
    if (!failed.empty()) { throw std::runtime_error(failed); }
    for (auto const& t : all) {
      // A transfer cut off at the end may have overwritten part of what its last one left.
      if (t.written && (device || t.got == 0)) {
        kvikio::bench::detail::check_bytes(target.reference_fd(), memory, t.dst, size, t.last);
      }
    }
  } catch (...) {
    memory.release(base);
    throw;
  }
  memory.release(base);
  return {done, took};
}
#endif

// One thread, `reads` plain_read() of `size` bytes (after a tenth as many unmeasured).
kvikio::bench::LatencyResult plain_latency(kvikio::bench::ReadTarget const& target,
                                           kvikio::bench::WorkloadMemory const& memory,
                                           bool device,
                                           std::size_t size,
                                           std::size_t reads)
{
  if (size == 0 || size >= target.size()) {
    throw std::invalid_argument("reader workload: the read size must be in (0, file size)");
  }
  void* staging   = nullptr;
  CUstream stream = nullptr;
  check(cuMemHostAlloc(&staging, size, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  void* const dst = memory.alloc(size);
  std::mt19937_64 rng{2};
  std::vector<double> us;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < reads + reads / 10; ++i) {
    offset        = rng() % (target.size() - size);
    auto const t0 = std::chrono::steady_clock::now();
    plain_read(target.reference_fd(), staging, dst, size, offset, device, stream);
    auto const t1 = std::chrono::steady_clock::now();
    if (i >= reads / 10) {
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  kvikio::bench::detail::check_bytes(target.reference_fd(), memory, dst, size, offset);
  memory.release(dst);
  (void)cuStreamDestroy(stream);
  (void)cuMemFreeHost(staging);
  return kvikio::bench::detail::percentiles(us);
}

// The line of one size's throughput, as ci/reader-table.py and ci/remote-reader-table.py read it.
void print_rate(std::string const& label,
                char const* mem,
                std::size_t size,
                unsigned callers,
                unsigned in_flight,
                unsigned pool,
                kvikio::bench::ThroughputResult const& r)
{
  std::printf("%s random %s %zu c%ux%u pool%u: %.0f reads/s %.2f GB/s\n",
              label.c_str(),
              mem,
              size,
              callers,
              in_flight,
              pool,
              r.reads_per_second(),
              r.reads_per_second() * static_cast<double>(size) / 1e9);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 9) {
    std::fprintf(stderr,
                 "usage: %s label file host|device callers in_flight pool_threads seconds sizes "
                 "[latency_sizes] [latency_reads]\n",
                 argv[0]);
    return 2;
  }
  try {
    std::string const label = argv[1];
    std::string const path  = argv[2];
    bool const device       = std::string{argv[3]} == "device";
    unsigned const callers  = static_cast<unsigned>(std::atoi(argv[4]));
    unsigned const in_fl    = static_cast<unsigned>(std::atoi(argv[5]));
    unsigned const pool     = static_cast<unsigned>(std::atoi(argv[6]));
    double const seconds    = std::atof(argv[7]);
    auto const sizes        = sizes_of(argv[8]);
    auto const lat_sizes    = argc > 9 ? sizes_of(argv[9]) : std::vector<std::size_t>{};
    std::size_t const reads = argc > 10 ? std::stoull(argv[10]) : 2000;
    if (reads == 0) { throw std::invalid_argument("latency reads must be positive, got 0"); }
    if (pool > 0) { kvikio::defaults::set_thread_pool_nthreads(pool); }
    CUcontext const ctx                        = kvikio::bench::driver::primary_context();
    kvikio::bench::WorkloadMemory const memory = kvikio::bench::driver::memory(device);
    char const* const mem                      = device ? "device" : "host";
    char const* const url                      = std::getenv("READER_URL");
    kvikio::bench::ReadTarget target{path, url != nullptr ? url : ""};
#ifdef KVIKIO_BENCH_REMOTE
    if (label.rfind("plain/", 0) == 0 && url != nullptr) {
      for (std::size_t const size : sizes) {
        print_rate(label,
                   mem,
                   size,
                   callers,
                   in_fl,
                   pool,
                   plain_multi_throughput(
                     url, target, memory, device, size, std::size_t{callers} * in_fl, seconds));
      }
      return 0;
    }
#endif
    if (label == "plain") {
      unsigned const threads = pool > 0 ? pool : 1;
      for (std::size_t const size : sizes) {
        auto const r = plain_throughput(
          target, memory, ctx, device, size, threads, std::size_t{callers} * in_fl, seconds);
        std::printf("plain random %s %zu threads%u: %.0f reads/s %.2f GB/s\n",
                    mem,
                    size,
                    threads,
                    r.reads_per_second(),
                    r.reads_per_second() * static_cast<double>(size) / 1e9);
        std::fflush(stdout);
      }
      for (std::size_t const size : lat_sizes) {
        auto const l = plain_latency(target, memory, device, size, reads);
        std::printf(
          "plain latency %s %zu: p50 %.1f us p99 %.1f us\n", mem, size, l.p50_us, l.p99_us);
        std::fflush(stdout);
      }
      return 0;
    }
    for (std::size_t const size : sizes) {
      print_rate(
        label,
        mem,
        size,
        callers,
        in_fl,
        pool,
        kvikio::bench::reader_throughput(target, memory, size, callers, in_fl, seconds, 1));
    }
    for (std::size_t const size : lat_sizes) {
      auto const l = kvikio::bench::reader_latency(target, memory, size, reads, 2);
      std::printf("%s latency %s %zu: p50 %.1f us p99 %.1f us\n",
                  label.c_str(),
                  mem,
                  size,
                  l.p50_us,
                  l.p99_us);
      if (!device) {
        auto const b = kvikio::bench::reader_latency(target, memory, size, reads, 2, true);
        std::printf("%s latency bare-pread %zu: p50 %.1f us p99 %.1f us\n",
                    label.c_str(),
                    size,
                    b.p50_us,
                    b.p99_us);
      }
      std::fflush(stdout);
    }
    std::printf(
      "%s peak-rss %s pool%u: %.0f MiB\n", label.c_str(), mem, pool, kvikio::bench::peak_rss_mib());
  } catch (std::exception const& e) {
    std::fprintf(stderr, "reader_workload: %s\n", e.what());
    return 1;
  }
  return 0;
}
