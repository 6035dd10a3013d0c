/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * A whole file read or written at once, from or into device and pinned host memory, in 4 MiB
 * tasks, for each thread count: through FileHandle::pread/pwrite (a library's label), or the
 * plain way with no I/O library (label "plain": T threads each taking the next 4 MiB task,
 * pread(2)/pwrite(2) straight into or out of the pinned host buffer, and for device memory
 * through a pinned buffer of the thread's own with one cudaMemcpyAsync and its wait per task;
 * writes go through an O_DIRECT descriptor, as both libraries write whole pages by default,
 * KVIKIO_AUTO_DIRECT_IO_WRITE).
 * Only the public API, so the same source is compiled against upstream KvikIO and against this
 * project (ci/upstream-harness.sh).
 *
 * Usage: whole_file <label> <read|write> <file> <threads list, e.g. 1,4,16> [repetitions]
 * A read reads the existing file; a write writes a file of the size given by WHOLE_FILE_SIZE
 * (bytes, default 2 GiB) over the same pages every repetition (hot page cache: the library's
 * costs, not a disk's), checking a few of its bytes against the source afterwards.
 * Prints: "<label> <pread|pwrite> <mem> threads <t> task 4 MiB: median <x> min <y> max <z> GB/s".
 */
#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>

#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t task = std::size_t{4} << 20;

// The plain way: `threads` threads, each taking the next task of the file.
bool plain(
  bool read, int fd, int fd_direct, bool device, char* dst, std::size_t n, unsigned threads)
{
  std::atomic<std::size_t> next{0};
  std::atomic<bool> ok{true};
  auto work = [&] {
    char* staging = nullptr;
    cudaStream_t stream{};
    if (device && (cudaMallocHost(reinterpret_cast<void**>(&staging), task) != cudaSuccess ||
                   cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)) {
      ok = false;
      return;
    }
    for (std::size_t at; (at = next.fetch_add(task)) < n;) {
      std::size_t const len = std::min(task, n - at);
      char* const host      = device ? staging : dst + at;
      if (!read && device) {
        cudaMemcpyAsync(host, dst + at, len, cudaMemcpyDeviceToHost, stream);
        cudaStreamSynchronize(stream);
      }
      ssize_t const r =
        read ? ::pread(fd, host, len, static_cast<off_t>(at))
             : ::pwrite(len % 4096 == 0 ? fd_direct : fd, host, len, static_cast<off_t>(at));
      if (r != static_cast<ssize_t>(len)) { ok = false; }
      if (read && device) {
        cudaMemcpyAsync(dst + at, host, len, cudaMemcpyHostToDevice, stream);
        cudaStreamSynchronize(stream);
      }
    }
    if (device) {
      cudaStreamDestroy(stream);
      cudaFreeHost(staging);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back(work);
  }
  for (auto& t : pool) {
    t.join();
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s label read|write file threads [repetitions]\n", argv[0]);
    return 2;
  }
  std::string const label = argv[1], path = argv[3];
  bool const read = std::string{argv[2]} == "read";
  std::vector<unsigned> threads;
  std::stringstream list(argv[4]);
  for (std::string t; std::getline(list, t, ',');) {
    threads.push_back(static_cast<unsigned>(std::stoul(t)));
  }
  int const reps   = argc > 5 ? std::atoi(argv[5]) : 5;
  char const* size = std::getenv("WHOLE_FILE_SIZE");
  std::size_t n    = size != nullptr ? std::stoull(size) : std::size_t{2} << 30;
  if (read) { n = kvikio::FileHandle(path, "r").nbytes(); }
  char* device = nullptr;
  char* host   = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&device), n) != cudaSuccess ||
      cudaMallocHost(reinterpret_cast<void**>(&host), n) != cudaSuccess) {
    std::puts("allocation failed");
    return 1;
  }
  std::vector<unsigned> pattern(n / sizeof(unsigned));  // what a write writes
  std::mt19937 random{42};
  for (auto& v : pattern) {
    v = random();
  }
  std::memcpy(host, pattern.data(), pattern.size() * sizeof(unsigned));
  cudaMemcpy(device, host, n, cudaMemcpyHostToDevice);
  int const fd        = ::open(path.c_str(), read ? O_RDONLY : (O_RDWR | O_CREAT), 0644);
  int const fd_direct = read ? -1 : ::open(path.c_str(), O_RDWR | O_DIRECT);
  if (fd < 0 || (!read && (fd_direct < 0 || ::ftruncate(fd, static_cast<off_t>(n)) != 0))) {
    std::puts("open failed");
    return 1;
  }
  for (unsigned nt : threads) {
    kvikio::defaults::set_thread_pool_nthreads(nt);
    for (int mem = 0; mem < 2; ++mem) {
      char* const buf = mem == 0 ? device : host;
      std::vector<double> gbs;
      for (int r = 0; r < reps; ++r) {
        auto const start = std::chrono::steady_clock::now();
        bool ok          = true;
        if (label == "plain") {
          ok = plain(read, fd, fd_direct, mem == 0, buf, n, nt);
        } else {
          kvikio::FileHandle file(path, read ? "r" : "r+");
          ok = (read ? file.pread(buf, n, 0, task) : file.pwrite(buf, n, 0, task)).get() == n;
        }
        std::chrono::duration<double> const took = std::chrono::steady_clock::now() - start;
        if (!ok) {
          std::puts("short transfer");
          return 1;
        }
        gbs.push_back(static_cast<double>(n) / took.count() / 1e9);
      }
      if (!read) {  // the file holds the source: a word at a few places
        for (std::size_t at : {std::size_t{0}, n / 3, n / 2, n - sizeof(unsigned)}) {
          unsigned got = 0;
          at           = at / sizeof(unsigned) * sizeof(unsigned);
          if (::pread(fd, &got, sizeof got, static_cast<off_t>(at)) != sizeof got ||
              got != pattern[at / sizeof(unsigned)]) {
            std::printf("wrong bytes at %zu\n", at);
            return 1;
          }
        }
      }
      std::sort(gbs.begin(), gbs.end());
      std::printf(
        "%-10s %s %-6s threads %2u task %2zu MiB: median %6.2f  min %6.2f  max %6.2f GB/s\n",
        label.c_str(),
        read ? "pread" : "pwrite",
        mem == 0 ? "device" : "host",
        nt,
        task >> 20,
        gbs[gbs.size() / 2],
        gbs.front(),
        gbs.back());
      std::fflush(stdout);
    }
  }
  ::close(fd);
  if (fd_direct >= 0) { ::close(fd_direct); }
  return 0;
}
