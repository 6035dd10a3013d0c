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
 * (bytes, default 2 GiB) over the same pages every repetition. The handle (or the plain way's
 * buffers and streams) is made before the timing. Before the last repetition 17 words of the
 * destination are poisoned; after it they must hold the source's.
 * The plain way starts its threads inside the timing (a library's pool has them already).
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
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t task = std::size_t{4} << 20;
constexpr unsigned poison  = 0xEEEEEEEEU;

// A plain thread's own pinned buffer and stream, for device memory (made before the timing).
struct Staging {
  char* pinned{nullptr};
  cudaStream_t stream{};
};

// The plain way: a thread per staging, each taking the next task of the file.
bool plain(bool read,
           int fd,
           int fd_direct,
           bool device,
           char* dst,
           std::size_t n,
           std::vector<Staging> const& staging)
{
  std::atomic<std::size_t> next{0};
  std::atomic<bool> ok{true};
  auto work = [&](Staging const& mine) {
    for (std::size_t at; (at = next.fetch_add(task)) < n;) {
      std::size_t const len = std::min(task, n - at);
      char* const host      = device ? mine.pinned : dst + at;
      if (!read && device &&
          (cudaMemcpyAsync(host, dst + at, len, cudaMemcpyDeviceToHost, mine.stream) !=
             cudaSuccess ||
           cudaStreamSynchronize(mine.stream) != cudaSuccess)) {
        ok = false;
      }
      ssize_t const r =
        read ? ::pread(fd, host, len, static_cast<off_t>(at))
             : ::pwrite(len % 4096 == 0 ? fd_direct : fd, host, len, static_cast<off_t>(at));
      if (r != static_cast<ssize_t>(len)) { ok = false; }
      if (read && device &&
          (cudaMemcpyAsync(dst + at, host, len, cudaMemcpyHostToDevice, mine.stream) !=
             cudaSuccess ||
           cudaStreamSynchronize(mine.stream) != cudaSuccess)) {
        ok = false;
      }
    }
  };
  std::vector<std::thread> pool;
  for (auto const& mine : staging) {
    pool.emplace_back(work, std::cref(mine));
  }
  for (auto& t : pool) {
    t.join();
  }
  return ok;
}

// Where the bytes are checked: 16 words spread over the file, and its last word.
std::vector<std::size_t> spots(std::size_t n)
{
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < 16; ++i) {
    out.push_back(n / 16 * i / sizeof(unsigned) * sizeof(unsigned));
  }
  out.push_back((n - sizeof(unsigned)) / sizeof(unsigned) * sizeof(unsigned));
  return out;
}

// A word of `buf` (device or host memory) at `at`, read or set.
unsigned word_of(char const* buf, bool device, std::size_t at)
{
  unsigned v = 0;
  if (device) {
    cudaMemcpy(&v, buf + at, sizeof v, cudaMemcpyDeviceToHost);
  } else {
    std::memcpy(&v, buf + at, sizeof v);
  }
  return v;
}
void set_word(char* buf, bool device, std::size_t at, unsigned v)
{
  if (device) {
    cudaMemcpy(buf + at, &v, sizeof v, cudaMemcpyHostToDevice);
  } else {
    std::memcpy(buf + at, &v, sizeof v);
  }
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
  int const reps   = std::max(1, argc > 5 ? std::atoi(argv[5]) : 5);
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
  if (!read) {  // what a write writes
    std::mt19937 random{42};
    for (std::size_t at = 0; at + sizeof(unsigned) <= n; at += sizeof(unsigned)) {
      unsigned const v = random();
      std::memcpy(host + at, &v, sizeof v);
    }
    cudaMemcpy(device, host, n, cudaMemcpyHostToDevice);
  }
  int const fd        = ::open(path.c_str(), read ? O_RDONLY : (O_RDWR | O_CREAT), 0644);
  int const fd_direct = read ? -1 : ::open(path.c_str(), O_RDWR | O_DIRECT);
  if (fd < 0 || (!read && (fd_direct < 0 || ::ftruncate(fd, static_cast<off_t>(n)) != 0))) {
    std::puts("open failed");
    return 1;
  }
  auto const file_word = [&](std::size_t at) {
    unsigned v = 0;
    return ::pread(fd, &v, sizeof v, static_cast<off_t>(at)) == sizeof v ? v : ~poison;
  };
  for (unsigned nt : threads) {
    kvikio::defaults::set_thread_pool_nthreads(nt);
    for (int mem = 0; mem < 2; ++mem) {
      bool const on_device = mem == 0;
      char* const buf      = on_device ? device : host;
      std::vector<Staging> staging(label == "plain" ? nt : 0);
      for (auto& s : staging) {
        if (on_device &&
            (cudaMallocHost(reinterpret_cast<void**>(&s.pinned), task) != cudaSuccess ||
             cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) != cudaSuccess)) {
          std::puts("allocation failed");
          return 1;
        }
      }
      std::unique_ptr<kvikio::FileHandle> file;
      if (label != "plain") {
        file = std::make_unique<kvikio::FileHandle>(path, read ? "r" : "r+");
      }
      std::vector<double> gbs;
      for (int r = 0; r < reps; ++r) {
        if (r == reps - 1) {  // poison where the last repetition is checked: it must write there
          for (std::size_t at : spots(n)) {
            if (read) {
              set_word(buf, on_device, at, poison);
            } else if (::pwrite(fd, &poison, sizeof poison, static_cast<off_t>(at)) !=
                       sizeof poison) {
              std::puts("cannot poison the file");
              return 1;
            }
          }
        }
        auto const start = std::chrono::steady_clock::now();
        bool const ok =
          label == "plain"
            ? plain(read, fd, fd_direct, on_device, buf, n, staging)
            : (read ? file->pread(buf, n, 0, task) : file->pwrite(buf, n, 0, task)).get() == n;
        std::chrono::duration<double> const took = std::chrono::steady_clock::now() - start;
        if (!ok) {
          std::puts("short transfer");
          return 1;
        }
        gbs.push_back(static_cast<double>(n) / took.count() / 1e9);
      }
      for (std::size_t at : spots(n)) {  // the destination holds the source's words
        unsigned const want = read ? file_word(at) : word_of(host, false, at);
        unsigned const got  = read ? word_of(buf, on_device, at) : file_word(at);
        if (got != want || got == poison) {
          std::printf("wrong bytes at %zu\n", at);
          return 1;
        }
      }
      for (auto& s : staging) {
        if (on_device) {
          cudaStreamDestroy(s.stream);
          cudaFreeHost(s.pinned);
        }
      }
      std::sort(gbs.begin(), gbs.end());
      std::printf(
        "%-10s %s %-6s threads %2u task %2zu MiB: median %6.2f  min %6.2f  max %6.2f GB/s\n",
        label.c_str(),
        read ? "pread" : "pwrite",
        on_device ? "device" : "host",
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
