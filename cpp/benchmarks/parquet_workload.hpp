/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * A columnar reader's workload, public API alone (so that the upstream comparison compiles it
 * against upstream KvikIO too: cpp/benchmarks/upstream/parquet_workload.cpp; kvikio_bench
 * parquet runs it on this library): a file of row groups, each of 24 column chunks of five sizes
 * (3 KB to 600 KB) separated by page headers (0.5 to 4.5 KB); the reader projects 18 of the 24
 * columns (every fourth is skipped) and reads row group after row group, each as 18 ranges into
 * one destination, waiting for a row group before the next. Modes:
 *   serial    each range read by pread() and waited for before the next (one read at a time)
 *   inflight  every range of the row group a pread() at once, then all waited for
 *   batch     the row group as one batch read with `gap` as coalesce_max_gap (libraries that
 *             have kvikio/batch_read.hpp: this project)
 * The first and the last row group each caller reads are compared with pread(2) of the file.
 */
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/file_handle.hpp>
#include <kvikio/remote_handle.hpp>
#if __has_include(<kvikio/batch_read.hpp>)
#include <kvikio/batch_read.hpp>
#define KVIKIO_BENCH_PARQUET_BATCH 1
#endif

#include "reader_workload.hpp"

namespace kvikio::bench::parquet {

/// One projected column chunk: `size` bytes at `file_offset`, landing `dst_offset` bytes into
/// the row group's destination.
struct Range {
  std::size_t file_offset, size, dst_offset;
};

inline constexpr std::size_t columns       = 24;
inline constexpr std::size_t chunk_sizes[] = {3000, 11000, 40000, 150000, 600000};
inline std::size_t chunk_size(std::size_t column) { return chunk_sizes[column % 5]; }
inline std::size_t header_size(std::size_t column) { return 512 + (column * 1237) % 4096; }

/// The bytes of one row group in the file.
inline std::size_t row_group_bytes()
{
  std::size_t n = 0;
  for (std::size_t c = 0; c < columns; ++c) {
    n += header_size(c) + chunk_size(c);
  }
  return n;
}

/// The projected ranges of row group `index`.
inline std::vector<Range> row_group(std::size_t index)
{
  std::vector<Range> out;
  std::size_t at  = index * row_group_bytes();
  std::size_t dst = 0;
  for (std::size_t c = 0; c < columns; ++c) {
    at += header_size(c);
    if (c % 4 != 3) {
      out.push_back({at, chunk_size(c), dst});
      dst += chunk_size(c);
    }
    at += chunk_size(c);
  }
  return out;
}

/// The bytes a row group's ranges read.
inline std::size_t wanted_bytes()
{
  std::size_t n = 0;
  for (auto const& r : row_group(0)) {
    n += r.size;
  }
  return n;
}

/// What the reads go to: the file at `path` through FileHandle (`url` null or empty), or the
/// object at `url` through RemoteHandle (its transport as the settings say).
class Target {
 public:
  Target(std::string const& path, char const* url)
  {
    if (url != nullptr && *url != '\0') {
      remote_ = std::make_unique<kvikio::RemoteHandle>(kvikio::RemoteHandle::open(url));
    } else {
      file_ = std::make_unique<kvikio::FileHandle>(path, "r");
    }
  }
  [[nodiscard]] std::size_t size() const { return remote_ ? remote_->nbytes() : file_->nbytes(); }
  std::future<std::size_t> pread(void* buf, std::size_t n, std::size_t offset)
  {
    return remote_ ? remote_->pread(buf, n, offset) : file_->pread(buf, n, offset);
  }
#ifdef KVIKIO_BENCH_PARQUET_BATCH
  std::vector<std::future<std::size_t>> batch(std::vector<kvikio::ReadRange> const& ranges,
                                              std::size_t gap)
  {
    kvikio::BatchReadOptions const options{.coalesce_max_gap = gap};
    return remote_ ? remote_->batch_read(ranges, options) : file_->batch_read(ranges, options);
  }
#endif

 private:
  std::unique_ptr<kvikio::FileHandle> file_;
  std::unique_ptr<kvikio::RemoteHandle> remote_;
};

/// Reads one row group into `dst` as `mode` says.
inline void read_row_group(Target& target,
                           std::vector<Range> const& ranges,
                           std::byte* dst,
                           std::string const& mode,
                           std::size_t gap)
{
  if (mode == "serial") {
    for (auto const& r : ranges) {
      if (target.pread(dst + r.dst_offset, r.size, r.file_offset).get() != r.size) {
        throw std::runtime_error("parquet workload: short read");
      }
    }
    return;
  }
  std::vector<std::future<std::size_t>> futures;
  if (mode == "inflight") {
    for (auto const& r : ranges) {
      futures.push_back(target.pread(dst + r.dst_offset, r.size, r.file_offset));
    }
  } else if (mode == "batch") {
#ifdef KVIKIO_BENCH_PARQUET_BATCH
    std::vector<kvikio::ReadRange> batch;
    for (auto const& r : ranges) {
      batch.push_back({dst + r.dst_offset, r.size, r.file_offset});
    }
    futures = target.batch(batch, gap);
#else
    (void)gap;
    throw std::invalid_argument("parquet workload: this library has no batch read");
#endif
  } else {
    throw std::invalid_argument("parquet workload: unknown mode " + mode);
  }
  for (std::size_t i = 0; i < futures.size(); ++i) {
    if (futures[i].get() != ranges[i].size) {
      throw std::runtime_error("parquet workload: short read");
    }
  }
}

/// The destination holds the ranges' bytes as pread(2) of `fd` reads them.
inline void check_row_group(int fd,
                            std::vector<Range> const& ranges,
                            void const* dst,
                            WorkloadMemory const& memory,
                            std::size_t bytes)
{
  std::vector<char> got(bytes);
  memory.to_host(got.data(), dst, bytes);
  std::vector<char> want;
  for (auto const& r : ranges) {
    want.resize(r.size);
    detail::pread_exactly(fd, want.data(), r.size, r.file_offset);
    if (std::memcmp(want.data(), got.data() + r.dst_offset, r.size) != 0) {
      throw std::runtime_error("parquet workload: wrong bytes at file offset " +
                               std::to_string(r.file_offset));
    }
  }
}

struct Result {
  std::size_t ranges, bytes, row_groups;
  double seconds;
};

/// `callers` threads, each reading row groups (caller c: c, c + callers, ...) as `mode` says
/// for `seconds`; `on_caller` runs first on each (making a CUDA context current).
inline Result run(Target& target,
                  int reference_fd,
                  WorkloadMemory const& memory,
                  std::string const& mode,
                  double seconds,
                  std::size_t gap,
                  unsigned callers,
                  std::function<void()> const& on_caller)
{
  std::size_t const groups = target.size() / row_group_bytes();
  if (callers == 0 || groups < callers) {
    throw std::invalid_argument("parquet workload: the file holds too few row groups");
  }
  std::size_t const bytes = wanted_bytes();
  std::atomic<std::size_t> ranges_read{0}, groups_read{0};
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(callers);
  auto const t0 = std::chrono::steady_clock::now();
  for (unsigned c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      void* mem = nullptr;
      try {
        on_caller();
        mem             = memory.alloc(bytes);
        auto* const dst = static_cast<std::byte*>(mem);
        std::vector<Range> ranges;
        for (std::size_t n = 0, index = c;; ++n, index += callers) {
          ranges = row_group(index % groups);
          read_row_group(target, ranges, dst, mode, gap);
          if (n == 0) { check_row_group(reference_fd, ranges, dst, memory, bytes); }
          ranges_read += ranges.size();
          ++groups_read;
          if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >=
              seconds) {
            break;
          }
        }
        check_row_group(reference_fd, ranges, dst, memory, bytes);
      } catch (...) {
        errors[c] = std::current_exception();
      }
      if (mem != nullptr) { memory.release(mem); }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto const& e : errors) {
    if (e) { std::rethrow_exception(e); }
  }
  return {ranges_read.load(), groups_read.load() * bytes, groups_read.load(), s};
}

}  // namespace kvikio::bench::parquet
