/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * A columnar reader's workload, as a program of the public API alone, compiled against upstream
 * KvikIO and against this project (ci/upstream-harness.sh): a file of row groups, each of 24
 * column chunks of five sizes (3 KB to 600 KB) separated by page headers (0.5 to 4.5 KB); the
 * reader projects 18 of the 24 columns (every fourth is skipped) and reads row group after row
 * group, each as 18 ranges into one destination, waiting for a row group before the next. Modes:
 *   serial    each range read by pread() and waited for before the next (one read at a time)
 *   inflight  every range of the row group a pread() at once, then all waited for
 *   batch     the row group as one batch read with `gap` as coalesce_max_gap (libraries that
 *             have kvikio/batch_read.hpp: this project)
 * The first and the last row group each caller reads are compared with pread(2) of the file.
 *
 * Usage: parquet_workload <label> <file> <host|device> <mode> <seconds> [gap (65536)]
 *        [callers (1)]
 * With READER_URL set (not empty), the reads go to that object through RemoteHandle (its transport
 * as the settings say) and <file> is a local copy of its bytes, for the checks. Prints one line:
 * "<label> parquet <mode> <mem> c<callers>: <ranges>/s reads/s <GB/s> GB/s <row groups>/s".
 */
#include <cuda.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#define PARQUET_WORKLOAD_BATCH 1
#endif

namespace {

void check(CUresult r, char const* what)
{
  if (r != CUDA_SUCCESS) {
    char const* name = nullptr;
    (void)cuGetErrorName(r, &name);
    throw std::runtime_error(std::string{what} + ": " + (name != nullptr ? name : "?"));
  }
}

struct Range {
  std::size_t file_offset, size, dst_offset;
};

// The projected ranges of row group `index` and the bytes of one row group in the file.
constexpr std::size_t columns       = 24;
constexpr std::size_t chunk_sizes[] = {3000, 11000, 40000, 150000, 600000};
std::size_t chunk_size(std::size_t column) { return chunk_sizes[column % 5]; }
std::size_t header_size(std::size_t column) { return 512 + (column * 1237) % 4096; }
std::size_t row_group_bytes()
{
  std::size_t n = 0;
  for (std::size_t c = 0; c < columns; ++c) {
    n += header_size(c) + chunk_size(c);
  }
  return n;
}
std::vector<Range> row_group(std::size_t index)
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

std::size_t wanted_bytes(std::vector<Range> const& ranges)
{
  std::size_t n = 0;
  for (auto const& r : ranges) {
    n += r.size;
  }
  return n;
}

class Target {
 public:
  Target(std::string const& path, char const* url)
  {
    if (url != nullptr) {
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
#ifdef PARQUET_WORKLOAD_BATCH
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

// Reads one row group into `dst` as `mode` says.
void read_row_group(Target& target,
                    std::vector<Range> const& ranges,
                    std::byte* dst,
                    std::string const& mode,
                    std::size_t gap)
{
  if (mode == "serial") {
    for (auto const& r : ranges) {
      if (target.pread(dst + r.dst_offset, r.size, r.file_offset).get() != r.size) {
        throw std::runtime_error("short read");
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
#ifdef PARQUET_WORKLOAD_BATCH
    std::vector<kvikio::ReadRange> batch;
    for (auto const& r : ranges) {
      batch.push_back({dst + r.dst_offset, r.size, r.file_offset});
    }
    futures = target.batch(batch, gap);
#else
    (void)gap;
    throw std::invalid_argument("this library has no batch read");
#endif
  } else {
    throw std::invalid_argument("unknown mode " + mode);
  }
  for (std::size_t i = 0; i < futures.size(); ++i) {
    if (futures[i].get() != ranges[i].size) { throw std::runtime_error("short read"); }
  }
}

// The destination holds the ranges' bytes as pread(2) of `fd` reads them.
void check_row_group(
  int fd, std::vector<Range> const& ranges, std::byte const* dst, bool device, std::size_t bytes)
{
  std::vector<std::byte> got(bytes);
  if (device) {
    check(cuMemcpyDtoH(got.data(), reinterpret_cast<CUdeviceptr>(dst), bytes), "cuMemcpyDtoH");
  } else {
    std::memcpy(got.data(), dst, bytes);
  }
  std::vector<std::byte> want;
  for (auto const& r : ranges) {
    want.resize(r.size);
    std::size_t done = 0;
    while (done < r.size) {
      ssize_t const n = ::pread(fd, want.data() + done, r.size - done, r.file_offset + done);
      if (n <= 0) { throw std::runtime_error("pread of the reference file failed"); }
      done += static_cast<std::size_t>(n);
    }
    if (std::memcmp(want.data(), got.data() + r.dst_offset, r.size) != 0) {
      throw std::runtime_error("wrong bytes at file offset " + std::to_string(r.file_offset));
    }
  }
}

}  // namespace

int main(int argc, char** argv)
{
  if (argc < 6) {
    std::fprintf(
      stderr, "usage: %s label file host|device mode seconds [gap] [callers]\n", argv[0]);
    return 2;
  }
  try {
    std::string const label = argv[1];
    std::string const path  = argv[2];
    bool const device       = std::string{argv[3]} == "device";
    std::string const mode  = argv[4];
    double const seconds    = std::atof(argv[5]);
    std::size_t const gap   = argc > 6 ? std::stoull(argv[6]) : 65536;
    unsigned const callers  = argc > 7 ? static_cast<unsigned>(std::atoi(argv[7])) : 1;
    check(cuInit(0), "cuInit");
    CUdevice dev{};
    CUcontext ctx{};
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) { throw std::runtime_error("cannot open " + path); }
    char const* url = std::getenv("READER_URL");
    Target target{path, url != nullptr && *url != '\0' ? url : nullptr};
    std::size_t const groups = target.size() / row_group_bytes();
    if (groups < callers) { throw std::invalid_argument("the file holds too few row groups"); }
    std::size_t const bytes = wanted_bytes(row_group(0));

    std::atomic<std::size_t> ranges_read{0}, bytes_read{0}, groups_read{0};
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(callers);
    auto const t0 = std::chrono::steady_clock::now();
    for (unsigned c = 0; c < callers; ++c) {
      threads.emplace_back([&, c] {
        try {
          check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
          void* mem = nullptr;
          CUdeviceptr d{};
          if (device) {
            check(cuMemAlloc(&d, bytes), "cuMemAlloc");
            mem = reinterpret_cast<void*>(d);
          } else {
            check(cuMemHostAlloc(&mem, bytes, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
          }
          auto* const dst   = static_cast<std::byte*>(mem);
          std::size_t index = c;
          std::vector<Range> ranges;
          for (std::size_t n = 0;; ++n) {
            ranges = row_group(index % groups);
            read_row_group(target, ranges, dst, mode, gap);
            if (n == 0) { check_row_group(fd, ranges, dst, device, bytes); }
            ranges_read += ranges.size();
            bytes_read += bytes;
            ++groups_read;
            index += callers;
            std::chrono::duration<double> const spent = std::chrono::steady_clock::now() - t0;
            if (spent.count() >= seconds) { break; }
          }
          check_row_group(fd, ranges, dst, device, bytes);
          (void)(device ? cuMemFree(d) : cuMemFreeHost(mem));
        } catch (...) {
          errors[c] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    std::chrono::duration<double> const spent = std::chrono::steady_clock::now() - t0;
    for (auto const& e : errors) {
      if (e) { std::rethrow_exception(e); }
    }
    double const s = spent.count();
    std::printf("%s parquet %s %s c%u: %.0f reads/s %.3f GB/s %.2f rowgroups/s\n",
                label.c_str(),
                mode.c_str(),
                device ? "device" : "host",
                callers,
                static_cast<double>(ranges_read.load()) / s,
                static_cast<double>(bytes_read.load()) / s / 1e9,
                static_cast<double>(groups_read.load()) / s);
    ::close(fd);
    return 0;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "parquet_workload: %s\n", e.what());
    return 1;
  }
}
