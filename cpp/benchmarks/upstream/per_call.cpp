/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What one call costs the process, as a program of the public API alone, compiled against
 * upstream KvikIO and against this project (ci/upstream-harness.sh) and run by ci/per-call.sh:
 * <threads> callers each make <calls> synchronous reads of <size> bytes into pinned host memory
 * at random offsets of a hot file (`local`) or of an object over HTTP (`remote`, the transport as
 * KVIKIO_REMOTE_IO_BACKEND says), or keep 8 reads in flight and wait for them (`local8`,
 * `remote8`). The library's pool has <threads> threads. Per call it prints the process's CPU time
 * (every thread's, from getrusage), its context switches, its system calls (the raw_syscalls
 * tracepoint counted over every thread the process starts, where tracefs is mounted; "-" elsewhere)
 * and its heap allocations (malloc, calloc and realloc, counted here).
 *
 * With the label `plain`, no library call reads: each caller reads by pread(2), or over one
 * libcurl easy handle of its own (reused), the way a program without an I/O library would.
 *
 * Usage: per_call <label> <local|local8|remote|remote8> <file> <size> <threads> <calls> [url]
 * <file> is the object's local copy for remote kinds: every read is checked against it.
 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda.h>
#ifdef KVIKIO_BENCH_REMOTE
#include <curl/curl.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>
#ifdef KVIKIO_BENCH_REMOTE
#include <kvikio/remote_handle.hpp>
#endif

#include "driver_memory.hpp"

// Heap allocations of the whole process: the program's definitions take the place of the C
// library's for every shared library too, and forward to it.
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void __libc_free(void*);
}
namespace {
std::atomic<std::uint64_t> allocations{0};
}
extern "C" void* malloc(std::size_t n)
{
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
extern "C" void* calloc(std::size_t n, std::size_t size)
{
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, std::size_t n)
{
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
extern "C" void free(void* p) { __libc_free(p); }

namespace {

using kvikio::bench::driver::check;

// System calls of this thread and of every thread started after it (the library's pools): the
// raw_syscalls:sys_enter tracepoint, -1 where the kernel or tracefs does not offer it.
class SyscallCounter {
 public:
  SyscallCounter()
  {
    for (char const* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
      std::ifstream id_file{std::string{dir} + "/events/raw_syscalls/sys_enter/id"};
      std::uint64_t id{};
      if (!(id_file >> id)) { continue; }
      perf_event_attr attr{};
      attr.type    = PERF_TYPE_TRACEPOINT;
      attr.size    = sizeof(attr);
      attr.config  = id;
      attr.inherit = 1;
      fd_ =
        static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd_ >= 0) { return; }
    }
  }
  SyscallCounter(SyscallCounter const&)            = delete;
  SyscallCounter& operator=(SyscallCounter const&) = delete;
  ~SyscallCounter()
  {
    if (fd_ >= 0) { ::close(fd_); }
  }
  [[nodiscard]] std::int64_t read() const
  {
    std::uint64_t value{};
    if (fd_ < 0 || ::read(fd_, &value, sizeof(value)) != sizeof(value)) { return -1; }
    return static_cast<std::int64_t>(value);
  }

 private:
  int fd_{-1};
};

struct Usage {
  double cpu_us;
  std::int64_t switches;
  std::int64_t syscalls;
  std::uint64_t allocations;
  double wall_s;
};

Usage usage_now(SyscallCounter const& syscalls)
{
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto const us = [](timeval t) { return t.tv_sec * 1e6 + t.tv_usec; };
  return {
    us(ru.ru_utime) + us(ru.ru_stime),
    ru.ru_nvcsw + ru.ru_nivcsw,
    syscalls.read(),
    allocations.load(),
    std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count()};
}

std::vector<char> file_bytes(std::string const& path)
{
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

// One caller's reads: `calls` times `in_flight` reads of `size` bytes at random offsets, each
// checked against the file's bytes (a poisoned word before and after the destination too).
struct Caller {
  std::size_t size;
  std::size_t in_flight;
  std::size_t calls;
  std::vector<char> const* expected;
  std::mt19937_64 rng;
  char* memory;  // in_flight x (size + 16) pinned bytes

  char* destination(std::size_t i) const { return memory + i * (size + 16) + 8; }
  std::size_t next_offset() { return rng() % (expected->size() - size); }
  void check(std::size_t i, std::size_t offset, std::size_t got) const
  {
    char const* dst = destination(i);
    if (got != size || std::memcmp(dst, expected->data() + offset, size) != 0 ||
        dst[-1] != '\x5a' || dst[size] != '\x5a') {
      throw std::runtime_error("a read of " + std::to_string(size) + " bytes at " +
                               std::to_string(offset) + " returned wrong bytes or " +
                               std::to_string(got));
    }
  }
};

template <typename Read>
void run_caller(Caller& c, Read&& read)
{
  std::vector<std::size_t> offsets(c.in_flight);
  for (std::size_t call = 0; call < c.calls; ++call) {
    for (std::size_t i = 0; i < c.in_flight; ++i) {
      offsets[i] = c.next_offset();
    }
    auto const got = read(offsets);
    for (std::size_t i = 0; i < c.in_flight; ++i) {
      c.check(i, offsets[i], got[i]);
    }
  }
}

// A caller of the library: each round's reads asked for with pread() at once, then waited for.
template <typename Handle>
std::function<void(Caller&)> library_reader(std::shared_ptr<Handle> handle)
{
  return [handle](Caller& c) {
    run_caller(c, [&](std::vector<std::size_t> const& offsets) {
      std::vector<std::future<std::size_t>> futures;
      for (std::size_t i = 0; i < offsets.size(); ++i) {
        futures.push_back(handle->pread(c.destination(i), c.size, offsets[i]));
      }
      std::vector<std::size_t> got;
      for (auto& f : futures) {
        got.push_back(f.get());
      }
      return got;
    });
  };
}

std::size_t plain_pread(int fd, char* dst, std::size_t size, std::size_t offset)
{
  std::size_t done = 0;
  while (done < size) {
    ssize_t const r = ::pread(fd, dst + done, size - done, static_cast<off_t>(offset + done));
    if (r <= 0) { throw std::runtime_error("pread failed"); }
    done += static_cast<std::size_t>(r);
  }
  return done;
}

#ifdef KVIKIO_BENCH_REMOTE
std::size_t on_body(char* data, std::size_t, std::size_t n, void* user)
{
  auto* cursor = static_cast<std::pair<char*, std::size_t>*>(user);
  std::memcpy(cursor->first + cursor->second, data, n);
  cursor->second += n;
  return n;
}

// A plain caller's easy handle: a ranged GET into the destination.
std::size_t plain_get(CURL* curl, char* dst, std::size_t size, std::size_t offset)
{
  std::string const range = std::to_string(offset) + "-" + std::to_string(offset + size - 1);
  std::pair<char*, std::size_t> cursor{dst, 0};
  curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &cursor);
  if (curl_easy_perform(curl) != CURLE_OK) { throw std::runtime_error("curl_easy_perform"); }
  return cursor.second;
}
#endif

}  // namespace

int main(int argc, char** argv)
try {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: %s <label> <local|local8|remote|remote8> <file> <size> <threads> "
                 "<calls> [url]\n",
                 argv[0]);
    return 2;
  }
  SyscallCounter const syscalls;  // before any thread starts
  std::string const label     = argv[1];
  std::string const kind      = argv[2];
  std::string const path      = argv[3];
  std::size_t const size      = std::stoull(argv[4]);
  unsigned const threads      = std::stoul(argv[5]);
  std::size_t const calls     = std::stoull(argv[6]);
  bool const remote           = kind.rfind("remote", 0) == 0;
  std::size_t const in_flight = kind.back() == '8' ? 8 : 1;
  std::string const url       = argc > 7 ? argv[7] : "";
  bool const plain            = label == "plain";
  if (remote && url.empty()) { throw std::invalid_argument("a remote kind needs a url"); }
#ifndef KVIKIO_BENCH_REMOTE
  if (remote) { throw std::invalid_argument("built without remote reads"); }
#endif

  CUcontext const context          = kvikio::bench::driver::primary_context();
  std::vector<char> const expected = file_bytes(path);
  if (expected.size() <= size) { throw std::invalid_argument("the file is not larger than size"); }
  if (!plain) { kvikio::defaults::set_thread_pool_nthreads(threads); }
#ifdef KVIKIO_BENCH_REMOTE
  curl_global_init(CURL_GLOBAL_DEFAULT);
#endif

  std::vector<Caller> callers;
  for (unsigned t = 0; t < threads; ++t) {
    void* memory            = nullptr;
    std::size_t const bytes = in_flight * (size + 16);
    check(cuMemHostAlloc(&memory, bytes, 0), "cuMemHostAlloc");
    std::memset(memory, 0x5a, bytes);
    callers.push_back(
      {size, in_flight, calls, &expected, std::mt19937_64{t + 1}, static_cast<char*>(memory)});
  }

  // Each caller's reader, made before the measured part (handles opened, connections made by
  // a first read).
  std::vector<std::function<void(Caller&)>> bodies;
  std::vector<std::shared_ptr<void>> keep;
  for (unsigned t = 0; t < threads; ++t) {
    if (!remote && plain) {
      int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) { throw std::runtime_error("open " + path); }
      keep.emplace_back(nullptr, [fd](void*) { ::close(fd); });
      bodies.emplace_back([fd](Caller& c) {
        run_caller(c, [&](std::vector<std::size_t> const& offsets) {
          std::vector<std::size_t> got(offsets.size());
          for (std::size_t i = 0; i < offsets.size(); ++i) {
            got[i] = plain_pread(fd, c.destination(i), c.size, offsets[i]);
          }
          return got;
        });
      });
    } else if (!remote) {
      auto file = std::make_shared<kvikio::FileHandle>(path, "r");
      keep.push_back(file);
      bodies.emplace_back(library_reader(file));
    }
#ifdef KVIKIO_BENCH_REMOTE
    else if (plain) {
      std::shared_ptr<CURL> curl{curl_easy_init(), curl_easy_cleanup};
      curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
      curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
      keep.push_back(curl);
      bodies.emplace_back([curl](Caller& c) {
        run_caller(c, [&](std::vector<std::size_t> const& offsets) {
          std::vector<std::size_t> got(offsets.size());
          for (std::size_t i = 0; i < offsets.size(); ++i) {
            got[i] = plain_get(curl.get(), c.destination(i), c.size, offsets[i]);
          }
          return got;
        });
      });
    } else {
      auto handle = std::make_shared<kvikio::RemoteHandle>(
        std::make_unique<kvikio::HttpEndpoint>(url), expected.size());
      keep.push_back(handle);
      bodies.emplace_back(library_reader(handle));
    }
#endif
  }
  // A first round of each caller's reads, unmeasured: pools started, connections open.
  auto run_all = [&](std::size_t n) {
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
        Caller c = callers[t];
        c.calls  = n;
        bodies[t](c);
      });
    }
    for (auto& w : workers) {
      w.join();
    }
  };
  run_all(std::max<std::size_t>(calls / 10, 2));
  Usage const before = usage_now(syscalls);
  run_all(calls);
  Usage const after = usage_now(syscalls);

  double const reads    = static_cast<double>(threads) * calls * in_flight;
  char syscall_text[32] = "-";
  if (before.syscalls >= 0 && after.syscalls >= 0) {
    std::snprintf(
      syscall_text, sizeof(syscall_text), "%.2f", (after.syscalls - before.syscalls) / reads);
  }
  std::printf(
    "per_call %-10s %-8s size %8zu threads %2u reads %8.0f: cpu_us %8.2f switches %6.2f "
    "syscalls %6s allocs %6.2f reads_per_s %10.0f\n",
    label.c_str(),
    kind.c_str(),
    size,
    threads,
    reads,
    (after.cpu_us - before.cpu_us) / reads,
    static_cast<double>(after.switches - before.switches) / reads,
    syscall_text,
    static_cast<double>(after.allocations - before.allocations) / reads,
    reads / (after.wall_s - before.wall_s));
  return 0;
} catch (std::exception const& e) {
  std::fprintf(stderr, "per_call: %s\n", e.what());
  return 1;
}
