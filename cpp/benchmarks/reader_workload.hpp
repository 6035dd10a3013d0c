/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The reader's workload: what a columnar reader (cuDF's Parquet/ORC datasources) asks of
 * FileHandle::pread - many independent reads of a column chunk or page each, at random unaligned
 * offsets, from several caller threads each keeping several futures in flight - and one small
 * synchronous read's latency (footers, indexes).
 *
 * Only the public API, so that the same code is compiled against upstream KvikIO
 * (cpp/benchmarks/upstream/reader_workload.cpp, ci/upstream-harness.sh) and against this project
 * (kvikio_bench local random, kvikio_bench remote random). The caller provides the memory (device
 * or pinned host), so that neither needs the CUDA runtime here.
 *
 * The reads go to a local file through FileHandle, or to a remote object through RemoteHandle
 * (its URL given) whose bytes are those of the local file (the file a loopback server serves):
 * either way the file, read by pread(2), is what the reads are checked against.
 */
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/file_handle.hpp>
#ifdef KVIKIO_BENCH_REMOTE
#include <kvikio/remote_handle.hpp>
#endif

namespace kvikio::bench {

/// Memory the reads land in: `alloc(n)` / `release(p)`, and `to_host` to check what landed.
struct WorkloadMemory {
  std::function<void*(std::size_t)> alloc;
  std::function<void(void*)> release;
  std::function<void(void* host, void const* mem, std::size_t n)> to_host;
};

struct ThroughputResult {
  std::size_t reads;
  double seconds;
  [[nodiscard]] double reads_per_second() const { return static_cast<double>(reads) / seconds; }
};

struct LatencyResult {
  double p50_us, p99_us;
};

namespace detail {

/// `n` bytes at `offset` of `fd`, by pread(2) (the bytes to compare with, and the baseline).
inline void pread_exactly(int fd, void* buf, std::size_t n, std::size_t offset)
{
  std::size_t done = 0;
  while (done < n) {
    ssize_t const got =
      ::pread(fd, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(offset + done));
    if (got <= 0) { throw std::runtime_error("reader workload: pread(2) of the file failed"); }
    done += static_cast<std::size_t>(got);
  }
}

/// Whether `n` bytes at `mem` are the file's at `offset`.
inline void check_bytes(
  int fd, WorkloadMemory const& m, void const* mem, std::size_t n, std::size_t offset)
{
  std::vector<char> got(n), want(n);
  m.to_host(got.data(), mem, n);
  pread_exactly(fd, want.data(), n, offset);
  if (got != want) {
    throw std::runtime_error("reader workload: wrong bytes from the read at offset " +
                             std::to_string(offset));
  }
}

/// Joins `threads`; then rethrows the first of `errors` or runs `check` (of what landed), and
/// releases `base` whatever happened. Returns the seconds from `start` to the last join.
inline double join_check_release(std::vector<std::thread>& threads,
                                 std::chrono::steady_clock::time_point start,
                                 std::vector<std::exception_ptr> const& errors,
                                 WorkloadMemory const& memory,
                                 void* base,
                                 std::function<void()> const& check)
{
  for (auto& t : threads) {
    t.join();
  }
  double const took =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  try {
    for (auto const& e : errors) {
      if (e) { std::rethrow_exception(e); }
    }
    check();
  } catch (...) {
    memory.release(base);
    throw;
  }
  memory.release(base);
  return took;
}

/// The median and 99th percentile of `us` (not empty; sorted here).
inline LatencyResult percentiles(std::vector<double>& us)
{
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

inline std::size_t file_size(int fd)
{
  off_t const end = ::lseek(fd, 0, SEEK_END);
  if (end <= 0) { throw std::runtime_error("reader workload: the file is empty or unreadable"); }
  return static_cast<std::size_t>(end);
}

}  // namespace detail

/// What the reads go to: the file at `path` through FileHandle (`url` empty), or the object at
/// `url` through RemoteHandle (HTTP; the backend as the settings say; built with
/// KVIKIO_BENCH_REMOTE), which holds the bytes of the file at `path`. The file, opened for
/// pread(2), is the reference of the checks.
class ReadTarget {
 public:
  ReadTarget(std::string const& path, std::string const& url)
    : fd_{::open(path.c_str(), O_RDONLY | O_CLOEXEC)}
  {
    if (fd_ < 0) { throw std::runtime_error("reader workload: cannot open " + path); }
    try {
      size_ = detail::file_size(fd_);
      if (url.empty()) {
        file_ = std::make_unique<kvikio::FileHandle>(path, "r");
      } else {
#ifdef KVIKIO_BENCH_REMOTE
        remote_ = std::make_unique<kvikio::RemoteHandle>(kvikio::RemoteHandle::open(url));
        if (remote_->nbytes() != size_) {
          throw std::runtime_error("reader workload: " + url + " is not the size of " + path);
        }
#else
        throw std::invalid_argument("reader workload: built without remote reads");
#endif
      }
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~ReadTarget() { ::close(fd_); }
  ReadTarget(ReadTarget const&)            = delete;
  ReadTarget& operator=(ReadTarget const&) = delete;

  std::future<std::size_t> pread(void* buf, std::size_t n, std::size_t offset)
  {
#ifdef KVIKIO_BENCH_REMOTE
    if (remote_) { return remote_->pread(buf, n, offset); }
#endif
    return file_->pread(buf, n, offset);
  }
  [[nodiscard]] int reference_fd() const noexcept { return fd_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  int fd_;
  std::size_t size_{0};
  std::unique_ptr<kvikio::FileHandle> file_;
#ifdef KVIKIO_BENCH_REMOTE
  std::unique_ptr<kvikio::RemoteHandle> remote_;
#endif
};

/// `callers` threads, each keeping `in_flight` FileHandle::pread futures of `io_size` bytes at
/// random unaligned offsets (from `seed`) for `seconds`; each read has its own destination. The
/// last read of each destination is checked against pread(2) of the same bytes.
inline ThroughputResult reader_throughput(ReadTarget& target,
                                          WorkloadMemory const& memory,
                                          std::size_t io_size,
                                          unsigned callers,
                                          unsigned in_flight,
                                          double seconds,
                                          std::uint64_t seed)
{
  int const fd           = target.reference_fd();
  std::size_t const size = target.size();
  if (io_size == 0 || io_size >= size) {
    throw std::invalid_argument("reader workload: the read size must be in (0, file size)");
  }
  std::size_t const slots = std::size_t{callers} * in_flight;
  auto* const base        = static_cast<char*>(memory.alloc(slots * io_size));
  std::atomic<std::size_t> reads{0};
  std::vector<std::size_t> last_offset(slots);
  auto const start    = std::chrono::steady_clock::now();
  auto const deadline = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(callers);
  for (unsigned c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      std::vector<std::future<std::size_t>> pending(in_flight);
      try {
        std::mt19937_64 rng{seed * 1000003 + c};
        std::size_t done = 0;
        auto submit      = [&](unsigned q) {
          std::size_t const slot   = std::size_t{c} * in_flight + q;
          std::size_t const offset = rng() % (size - io_size);
          last_offset[slot]        = offset;
          pending[q]               = target.pread(base + slot * io_size, io_size, offset);
        };
        for (unsigned q = 0; q < in_flight; ++q) {
          submit(q);
        }
        // Round robin: wait for the oldest, give its destination the next read.
        for (unsigned q = 0;; q = (q + 1) % in_flight) {
          if (pending[q].get() != io_size) { throw std::runtime_error("short read"); }
          ++done;
          if (std::chrono::steady_clock::now() >= deadline) { break; }
          submit(q);
        }
        for (auto& f : pending) {
          if (f.valid() && f.get() == io_size) { ++done; }
        }
        reads += done;
      } catch (...) {
        errors[c] = std::current_exception();
        for (auto& f : pending) {  // nothing may still write into the memory once it is freed
          if (f.valid()) { f.wait(); }
        }
      }
    });
  }
  double const took = detail::join_check_release(threads, start, errors, memory, base, [&] {
    for (std::size_t s = 0; s < slots; ++s) {
      detail::check_bytes(fd, memory, base + s * io_size, io_size, last_offset[s]);
    }
  });
  return {reads.load(), took};
}

/// One caller, `reads` synchronous FileHandle::pread(...).get() of `io_size` bytes at random
/// unaligned offsets (after a tenth as many unmeasured): the median and 99th percentile.
/// `bare`: pread(2) of the same bytes into host memory instead (the floor for host reads).
inline LatencyResult reader_latency(ReadTarget& target,
                                    WorkloadMemory const& memory,
                                    std::size_t io_size,
                                    std::size_t reads,
                                    std::uint64_t seed,
                                    bool bare = false)
{
  int const fd           = target.reference_fd();
  std::size_t const size = target.size();
  std::vector<char> bare_buffer(bare ? io_size : 0);
  void* const dst = bare ? bare_buffer.data() : memory.alloc(io_size);
  std::mt19937_64 rng{seed};
  std::vector<double> us;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < reads + reads / 10; ++i) {
    offset          = rng() % (size - io_size);
    auto const t0   = std::chrono::steady_clock::now();
    std::size_t got = io_size;
    if (bare) {
      detail::pread_exactly(fd, dst, io_size, offset);
    } else {
      got = target.pread(dst, io_size, offset).get();
    }
    auto const t1 = std::chrono::steady_clock::now();
    if (got != io_size) { throw std::runtime_error("reader workload: short read"); }
    if (i >= reads / 10) {
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  if (!bare) {
    detail::check_bytes(fd, memory, dst, io_size, offset);
    memory.release(dst);
  }
  return detail::percentiles(us);
}

/// The process's peak resident memory so far, in MiB.
inline double peak_rss_mib()
{
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace kvikio::bench
