/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Stress: 16 threads of random operations of random sizes for KVIKIO_STRESS_SECONDS (default
 * 10; ./build.sh soak runs longer), on each local backend (".io_uring"): parallel reads into
 * host and device memory, stream-ordered reads on each thread's own stream, mmap reads, and
 * writes into each thread's own region of the file read back by the same paths. Every byte is
 * checked against a copy kept in memory; afterwards the bounce buffers are all back in their
 * pool and no descriptor of the file is left open.
 * Run under ASan+UBSan and TSan by ./build.sh test like every suite: five variants of 10 s a
 * build.
 */
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/utils.hpp>

#include "common/device.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::api;
using kvikio::test::pattern;

namespace {

constexpr std::size_t nthreads     = 16;
constexpr std::size_t shared_bytes = 24 << 20;  // read by everyone, never written
constexpr std::size_t region_bytes = 1 << 20;   // one per thread, after the shared part
constexpr std::size_t max_io       = 3 << 20;

// Descriptors of this process open on `path` (FileHandle's two, MmapHandle's one, ...).
std::size_t descriptors_on(std::string const& path)
{
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent const* e = ::readdir(d)) {
      std::string const link = std::string{"/proc/self/fd/"} + e->d_name;
      char target[4096]      = {};
      auto const len         = ::readlink(link.c_str(), target, sizeof(target) - 1);
      if (len > 0 && path == std::string{target, static_cast<std::size_t>(len)}) { ++n; }
    }
    ::closedir(d);
  }
  return n;
}

// KVIKIO_STRESS_SKIP: operations (0-5, as in the switch below) to leave out, to narrow a
// failure down (default: none).
bool skipped(unsigned op)
{
  char const* text       = std::getenv("KVIKIO_STRESS_SKIP");
  std::string const skip = text != nullptr ? text : "";
  return skip.find(static_cast<char>('0' + op)) != std::string::npos;
}

double stress_seconds()
{
  char const* text = std::getenv("KVIKIO_STRESS_SECONDS");
  return text != nullptr ? std::atof(text) : 10.0;
}

class Stress : public kvikio::test::OnDevice {};

TEST_F(Stress, RandomOperationsFromSixteenThreads)
{
  kvikio::defaults::set_thread_pool_nthreads(4);
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  kvikio::test::TempDir dir;
  auto const path = dir.file("stress.bin");
  // The file: the shared part, then a region per thread; `content` is what it holds.
  auto content = pattern(shared_bytes + nthreads * region_bytes, 71);
  kvikio::test::write_file(path, content);
  auto& pool = kvikio::BounceBufferPool<>::instance();

  auto const deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(stress_seconds()));
  std::atomic<std::size_t> operations{0};
  std::atomic<std::size_t> mismatches{0};
  std::vector<std::string> failures(nthreads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        kvikio::PushAndPopContext const context{ctx_};
        std::mt19937_64 rng{t * 7919 + 1};
        kvikio::FileHandle file{path, "r+"};
        kvikio::MmapHandle map{path};
        kvikio::test::Stream stream;
        kvikio::test::DeviceBuffer dev{max_io};
        std::vector<std::uint8_t> host(max_io);
        std::size_t const region = shared_bytes + t * region_bytes;
        auto check               = [&](std::uint8_t const* got, std::size_t offset, std::size_t n) {
          if (std::memcmp(got, content.data() + offset, n) != 0) { ++mismatches; }
        };
        auto device_bytes = [&](std::size_t n) {
          KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(host.data(), dev.ptr, n));
          return host.data();
        };
        while (std::chrono::steady_clock::now() < deadline) {
          auto const op = static_cast<unsigned>(rng() % 6);
          if (skipped(op)) { continue; }
          // A range in the shared part (reads) or in this thread's region (op 5).
          std::size_t n      = 1 + rng() % (op == 5 ? region_bytes : max_io);
          std::size_t offset = rng() % (shared_bytes - n + 1);
          switch (op) {
            case 0:  // parallel read, host
              if (file.pread(host.data(), n, offset, 1 + rng() % (1 << 20)).get() != n) {
                ++mismatches;
              }
              check(host.data(), offset, n);
              break;
            case 1:  // parallel read, device
              if (file.pread(dev.get(), n, offset, 1 + rng() % (1 << 20)).get() != n) {
                ++mismatches;
              }
              check(device_bytes(n), offset, n);
              break;
            case 2: {  // stream-ordered read on this thread's stream
              auto f = file.read_async(dev.get(), n, static_cast<off_t>(offset), 0, stream.handle);
              if (f.check_bytes_done() != n) { ++mismatches; }
              check(device_bytes(n), offset, n);
              break;
            }
            case 3:  // mmap, host
              if (map.read(host.data(), n, offset) != n) { ++mismatches; }
              check(host.data(), offset, n);
              break;
            case 4:  // mmap, device
              if (map.pread(dev.get(), n, offset).get() != n) { ++mismatches; }
              check(device_bytes(n), offset, n);
              break;
            default: {  // write new bytes into this thread's region, then read them back
              offset                 = region + rng() % (region_bytes - n + 1);
              auto const fresh       = pattern(n, static_cast<std::uint32_t>(rng()));
              bool const from_device = (rng() & 1) != 0;
              if (from_device) {
                KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, fresh.data(), n));
                // From pageable memory the copy may still be in flight when it returns.
                KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(nullptr));
              }
              std::size_t const wrote =
                file
                  .pwrite(from_device ? dev.get() : static_cast<void const*>(fresh.data()),
                          n,
                          offset,
                          1 + rng() % (1 << 20))
                  .get();
              if (wrote != n) { ++mismatches; }
              std::memcpy(content.data() + offset, fresh.data(), n);  // only this thread's part
              std::vector<std::uint8_t> back(n);
              if (file.pread(back.data(), n, offset).get() != n) { ++mismatches; }
              check(back.data(), offset, n);
            }
          }
          ++operations;
        }
      } catch (std::exception const& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  for (std::size_t t = 0; t < nthreads; ++t) {
    EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
  }
  EXPECT_EQ(mismatches.load(), 0U);
  EXPECT_GT(operations.load(), nthreads) << "the threads hardly ran";
  std::printf("%zu operations in %.0f s\n", operations.load(), stress_seconds());
  // Every byte of the file is what the threads wrote (or the original).
  EXPECT_EQ(kvikio::test::read_file(path), content);
  // Pools back to their starting counts.
  EXPECT_EQ(pool.bytes_on_loan(), 0U) << "bounce buffers still on loan";
  EXPECT_EQ(descriptors_on(path), 0U) << "descriptors of the file left open";
}

}  // namespace
