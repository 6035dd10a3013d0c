/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio_bench local: FileHandle::pread/pwrite between a file and host or device memory, beside
 * the baselines of PERFORMANCE.md measured in the same run, variants interleaved (A B A B).
 */
#include "local_bench.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/stream.hpp>
#include <kvikio/threadpool_wrapper.hpp>

#include <kvikio/file_utils.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>
#include "io/io_uring/io_uring_io.hpp"
#include "parallel/stream_ordered.hpp"

#include "bench_common.hpp"
#include "devices_bench.hpp"

namespace kvikio::bench {
namespace {

bool const progress_to_terminal = ::isatty(STDERR_FILENO) != 0;

void progress(std::string const& text)
{
  if (progress_to_terminal) { std::fprintf(stderr, "\r\033[K%s", text.c_str()); }
}

// Random bytes (splitmix64), written with plain pwrite.
void create_file(std::string const& path, std::size_t size)
{
  int const fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  KVIKIO_SYSCALL_CHECK(fd, "open(" + path + ")");
  std::vector<std::uint64_t> block((64UL << 20) / 8);
  std::uint64_t state = 0x1234567;
  for (std::size_t off = 0; off < size; off += block.size() * 8) {
    for (auto& w : block) {
      std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
      z               = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z               = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      w               = z ^ (z >> 31);
    }
    std::size_t const n = std::min(block.size() * 8, size - off);
    for (std::size_t done = 0; done < n;) {
      auto const w = ::pwrite(
        fd, reinterpret_cast<char*>(block.data()) + done, n - done, static_cast<off_t>(off + done));
      KVIKIO_SYSCALL_CHECK(w, "pwrite(" + path + ")");
      done += static_cast<std::size_t>(w);
    }
    progress("creating " + path + ": " + std::to_string((off + n) >> 20) + " MiB");
  }
  ::close(fd);
  progress("");
}

void exact(bool read, int fd, char* buf, std::size_t n, std::size_t offset)
{
  for (std::size_t done = 0; done < n;) {
    auto const r = read ? ::pread(fd, buf + done, n - done, static_cast<off_t>(offset + done))
                        : ::pwrite(fd, buf + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) { continue; }
    KVIKIO_SYSCALL_CHECK(r, "baseline pread/pwrite");
    KVIKIO_EXPECT(r > 0, "baseline: unexpected end of file");
    done += static_cast<std::size_t>(r);
  }
}

// Chunk i of `size` goes to thread i % nthreads; each thread calls `chunk(thread, offset, n)`.
void run_threads(unsigned nthreads,
                 std::size_t size,
                 std::size_t task,
                 std::function<void(unsigned, std::size_t, std::size_t)> const& chunk)
{
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t off = t * task; off < size;
           off += static_cast<std::size_t>(nthreads) * task) {
        chunk(t, off, std::min(task, size - off));
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
}

// Per-thread staging for the device baseline: a pinned buffer of one task and a stream.
struct Staging {
  void* pinned{nullptr};
  CUstream stream{nullptr};
};

// `kvikio_bench local read --mem device --devices 0,1,...` (devices_bench.hpp).
int run_local_devices(LocalOptions const& o)
{
  KVIKIO_EXPECT(o.op == "read" && o.mem == "device" && o.api == "pread",
                "--devices needs read, --mem device and --api pread",
                std::invalid_argument);
  DevicesRun const run{o.devices,
                       parse_size(o.size_text),
                       parse_size(o.task_size_text),
                       o.threads,
                       o.repeat,
                       o.command,
                       o.device_child};
  if (o.create) { ensure_file(o.file, run.size); }
  FileHandle file{o.file, "r"};
  auto const read = [&](void* dst, ThreadPool* pool) {
    KVIKIO_EXPECT(file.pread(dst, run.size, 0, run.task, 0, false, pool).get() == run.size,
                  "short read");
  };
  std::string const date = utc_now();
  std::string const gpu  = gpu_name();
  auto const rows =
    run_devices(run,
                read,
                "kvikio_bench local read: " + o.file + ", " + std::to_string(run.size) +
                  " bytes each, hot, GPU " + gpu + ", " + date);
  if (!o.json.empty()) {
    write_json_lines(
      o.json, rows, ",\"cache\":\"hot\",\"direct\":false" + machine_json_fields(gpu, date));
  }
  return 0;
}

}  // namespace

void ensure_file(std::string const& path, std::size_t size)
{
  std::size_t current = 0;
  try {
    current = get_file_size(path);
  } catch (std::exception const&) {  // missing: created below
  }
  if (current < size) { create_file(path, size); }
}

int run_local(LocalOptions const& o)
{
  if (o.op == "random") { return run_local_random(o); }
  if (!o.devices.empty()) { return run_local_devices(o); }
  std::size_t const size = parse_size(o.size_text);
  std::size_t const task = parse_size(o.task_size_text);
  bool const read        = o.op == "read";
  bool const device      = o.mem == "device";
  bool const async       = o.api == "async";
  KVIKIO_EXPECT(
    !async || (read && device), "--api async needs read and --mem device", std::invalid_argument);
  if (read && o.create) { ensure_file(o.file, size); }
  defaults::set_auto_direct_io_read(o.direct);
  defaults::set_auto_direct_io_write(o.direct);
  std::string const cache = read ? (o.drop_cache ? "cold" : "hot") : "page-cache";

  // Destination/source memory.
  // The driver is needed only for device memory: host runs work without one.
  cudaAPI* const driver = device ? &cudaAPI::instance() : nullptr;
  CUcontext ctx         = nullptr;
  CUdeviceptr dptr      = 0;
  std::unique_ptr<char, void (*)(void*)> host{nullptr, std::free};
  std::string gpu = "none";
  if (device) {
    auto& api = *driver;
    ctx       = get_primary_cuda_context(0);
    KVIKIO_CUDA_DRIVER_TRY(api.CtxPushCurrent(ctx));
    KVIKIO_CUDA_DRIVER_TRY(api.MemAlloc(&dptr, size));
    gpu = gpu_name();
  } else {
    host.reset(static_cast<char*>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096)));
    KVIKIO_EXPECT(host != nullptr, "cannot allocate the host buffer");
    std::memset(host.get(), 0x5A, size);  // fault the pages in before timing
  }
  void* const kvikio_buf = device ? reinterpret_cast<void*>(dptr) : host.get();

  FileHandle file{o.file, read ? "r" : "w"};  // writes start from an empty file
  // The baselines' descriptor: with --direct, the O_DIRECT one (raw O_DIRECT throughput).
  int const fd = o.direct && file.fd(true) >= 0 ? file.fd(true) : file.fd();
  auto drop    = [&] {
    if (read && o.drop_cache && !drop_system_page_cache(false, false)) { drop_file_page_cache(fd); }
  };
  // One untimed run: reads warm the page cache, writes give the file its blocks.
  if (!(read && o.drop_cache)) {
    (void)(read ? file.pread(kvikio_buf, size, 0, task).get()
                : file.pwrite(kvikio_buf, size, 0, task).get());
  }

  std::vector<Row> rows;
  // --api async: a stream per variant (each stream keeps its own staging ring, so variants do
  // not reshape one ring back and forth), and each call's time on the caller's thread per
  // (threads, variant).
  std::map<std::size_t, CUstream> async_streams;  // per ring depth k
  std::map<std::pair<unsigned, std::string>, std::vector<double>> call_us;
  auto async_stream = [&](std::size_t k) {
    auto& s = async_streams[k];
    if (s == nullptr) { KVIKIO_CUDA_DRIVER_TRY(driver->StreamCreate(&s, CU_STREAM_NON_BLOCKING)); }
    return s;
  };
  for (unsigned nthreads : o.threads) {
    defaults::set_thread_pool_nthreads(nthreads);
    std::vector<Staging> staging(nthreads);
    if (device) {
      auto& api = *driver;
      for (auto& s : staging) {
        KVIKIO_CUDA_DRIVER_TRY(api.MemHostAlloc(&s.pinned, task, CU_MEMHOSTALLOC_PORTABLE));
        KVIKIO_CUDA_DRIVER_TRY(api.StreamCreate(&s.stream, CU_STREAM_NON_BLOCKING));
      }
    }
    // KvikIO once per ring depth (k = 1 beside the others), then the baselines.
    struct Variant {
      std::string name;
      std::size_t depth;  // 0 for baselines
      std::function<void()> run;
      bool stream_staged{false};  // read_async: staged by the stream's ring, not the pool
    };
    std::vector<Variant> variants;
    std::vector<std::size_t> depths = o.ring_depths;
    if (depths.empty()) { depths.push_back(defaults::num_bounce_buffers()); }
    if (async) {
      // N reads of size / N, enqueued back to back on one stream and synchronised once, against
      // the same reads as pread().get() one after the other.
      std::size_t const piece = size / o.async_reads;
      for (std::size_t k : depths) {
        std::string const name =
          "kvikio read_async x" + std::to_string(o.async_reads) + " k=" + std::to_string(k);
        variants.push_back(
          {name,
           k,
           [&, k, piece, name, stream = async_stream(k)] {
             defaults::set_num_bounce_buffers(k);
             std::vector<StreamFuture> futures;
             for (unsigned i = 0; i < o.async_reads; ++i) {
               auto const off = static_cast<off_t>(i * piece);
               auto const t0  = std::chrono::steady_clock::now();
               futures.push_back(file.read_async(kvikio_buf, piece, off, off, stream));
               call_us[{nthreads, name}].push_back(
                 std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                   .count());
             }
             for (auto& f : futures) {
               KVIKIO_EXPECT(f.check_bytes_done() == piece, "short read_async");
             }
           },
           true});
        variants.push_back(
          {"kvikio pread+get x" + std::to_string(o.async_reads) + " k=" + std::to_string(k),
           k,
           [&, k, piece] {
             defaults::set_num_bounce_buffers(k);
             for (unsigned i = 0; i < o.async_reads; ++i) {
               auto* dst = static_cast<char*>(kvikio_buf) + i * piece;
               KVIKIO_EXPECT(file.pread(dst, piece, i * piece, task).get() == piece, "short read");
             }
           }});
      }
    } else {
      // io_uring: one variant per request shape, SIZE:DEPTH[:WORKERS] (none given: the
      // library's; WORKERS: kernel workers per ring, 0 or none: the kernel's bound).
      auto set_shape = [](std::string const& shape) {
        auto const colon = shape.find(':');
        KVIKIO_EXPECT(colon != std::string::npos,
                      "--io-uring-shape wants SIZE:DEPTH[:WORKERS], got " + shape,
                      std::invalid_argument);
        auto const second = shape.find(':', colon + 1);
        detail::set_io_uring_request_shape(
          parse_size(shape.substr(0, colon)),
          static_cast<unsigned>(std::stoul(shape.substr(colon + 1, second - colon - 1))));
        detail::set_io_uring_max_workers(
          second == std::string::npos
            ? 0
            : static_cast<unsigned>(std::stoul(shape.substr(second + 1))));
      };
      for (auto const& backend : o.backends) {
        std::vector<std::string> shapes{""};
        if (backend == "io_uring" && !o.io_uring_shapes.empty()) { shapes = o.io_uring_shapes; }
        std::vector<bool> registrations{true};
        if (backend == "io_uring" && o.io_uring_unregistered) { registrations.push_back(false); }
        for (auto const& shape : shapes) {
          for (bool registered : registrations) {
            for (std::size_t k : depths) {
              // The ring depth k stages device memory only.
              std::string const name = "kvikio " + backend + (shape.empty() ? "" : " " + shape) +
                                       (registered ? "" : " unregistered") +
                                       (device ? " k=" + std::to_string(k) : "");
              variants.push_back({name, k, [&, k, backend, shape, registered] {
                                    defaults::set_num_bounce_buffers(k);
                                    if (!shape.empty()) { set_shape(shape); }
                                    detail::set_io_uring_registered_buffers(registered);
                                    defaults::set_local_io_backend(
                                      detail::parse_local_io_backend("--backend", backend));
                                    auto const n = read
                                                     ? file.pread(kvikio_buf, size, 0, task).get()
                                                     : file.pwrite(kvikio_buf, size, 0, task).get();
                                    defaults::set_local_io_backend(LocalIOBackend::AUTO);
                                    detail::set_io_uring_registered_buffers(true);
                                    KVIKIO_EXPECT(n == size,
                                                  "kvikio moved " + std::to_string(n) + " of " +
                                                    std::to_string(size) + " bytes");
                                  }});
            }
          }
        }
      }
      if (!device) {
        variants.push_back(
          {std::string{"baseline posix "} + (read ? "pread" : "pwrite"), 0, [&] {
             run_threads(nthreads, size, task, [&](unsigned, std::size_t off, std::size_t n) {
               exact(read, fd, host.get() + off, n, off);
             });
           }});
      } else {
        auto& api = *driver;
        variants.push_back(
          {read ? "baseline pread+H2D+sync" : "baseline D2H+sync+pwrite", 0, [&] {
             run_threads(nthreads, size, task, [&](unsigned t, std::size_t off, std::size_t n) {
               PushAndPopContext const guard{ctx};
               auto& s = staging[t];
               if (read) {
                 exact(true, fd, static_cast<char*>(s.pinned), n, off);
                 KVIKIO_CUDA_DRIVER_TRY(api.MemcpyHtoDAsync(dptr + off, s.pinned, n, s.stream));
                 KVIKIO_CUDA_DRIVER_TRY(api.StreamSynchronize(s.stream));
               } else {
                 KVIKIO_CUDA_DRIVER_TRY(api.MemcpyDtoHAsync(s.pinned, dptr + off, n, s.stream));
                 KVIKIO_CUDA_DRIVER_TRY(api.StreamSynchronize(s.stream));
                 exact(false, fd, static_cast<char*>(s.pinned), n, off);
               }
             });
           }});
        if (read) {
          // The host-side ceiling: the same reads without any copy to the device.
          variants.push_back(
            {"baseline posix pread (host)", 0, [&] {
               run_threads(nthreads, size, task, [&](unsigned t, std::size_t off, std::size_t n) {
                 exact(true, fd, static_cast<char*>(staging[t].pinned), n, off);
               });
             }});
        }
      }
    }
    std::vector<Row> point;
    for (auto const& v : variants) {
      point.push_back(Row{o.op, o.mem, v.name, nthreads, task, size, {}});
    }
    if (async) {
      // Untimed first: a stream's staging ring is pinned at its first call (about 1.7 GB/s).
      for (auto const& v : variants) {
        v.run();
      }
      std::erase_if(call_us, [&](auto const& entry) { return entry.first.first == nthreads; });
    }
    for (unsigned rep = 0; rep < o.repeat; ++rep) {
      for (std::size_t i = 0; i < variants.size(); ++i) {  // interleaved: A B A B
        progress(std::to_string(nthreads) + " threads, repeat " + std::to_string(rep + 1) + "/" +
                 std::to_string(o.repeat) + ": " + variants[i].name);
        drop();
        point[i].runs.push_back(measure(variants[i].run));
        if (variants[i].depth > 0) {
          point[i].ring_depth   = variants[i].depth;
          point[i].slot_size    = defaults::bounce_buffer_size() / variants[i].depth;
          point[i].pinned_bytes = BounceBufferPool<>::instance().pinned_bytes();
          if (variants[i].stream_staged) {  // the stream's ring: threads x buffer in k slots
            point[i].slot_size    = nthreads * defaults::bounce_buffer_size() / variants[i].depth;
            point[i].pinned_bytes = kvikio::detail::staging_pinned_bytes();
          }
        }
      }
    }
    rows.insert(rows.end(), point.begin(), point.end());
    for (auto& s : staging) {
      if (s.pinned != nullptr) { KVIKIO_CUDA_DRIVER_TRY(driver->MemFreeHost(s.pinned)); }
      if (s.stream != nullptr) { KVIKIO_CUDA_DRIVER_TRY(driver->StreamDestroy(s.stream)); }
    }
  }
  progress("");
  for (auto const& [m, stream] : async_streams) {
    KVIKIO_CUDA_DRIVER_TRY(driver->StreamDestroy(stream));
  }
  if (device) {
    KVIKIO_CUDA_DRIVER_TRY(driver->MemFree(dptr));
    CUcontext popped{};
    KVIKIO_CUDA_DRIVER_TRY(driver->CtxPopCurrent(&popped));
  }

  std::string const date = utc_now();
  std::printf(
    "kvikio_bench local %s: %s, %zu bytes, %s, mem %s, GPU %s, O_DIRECT %s, bounce buffer %zu MiB "
    "x %zu, %s\n",
    o.op.c_str(),
    o.file.c_str(),
    size,
    cache.c_str(),
    o.mem.c_str(),
    gpu.c_str(),
    o.direct ? "on" : "off",
    defaults::bounce_buffer_size() >> 20,
    defaults::num_bounce_buffers(),
    date.c_str());
  print_table(rows);
  for (auto& [key, us] : call_us) {
    std::sort(us.begin(), us.end());
    std::printf(
      "\n%s, %u threads: the calling thread returned after %.1f us (median), %.1f "
      "us (max) over %zu calls",
      key.second.c_str(),
      key.first,
      us[us.size() / 2],
      us.back(),
      us.size());
  }
  if (!call_us.empty()) { std::printf("\n"); }
  if (!o.json.empty()) {
    write_json_lines(o.json,
                     rows,
                     ",\"cache\":\"" + cache + "\",\"direct\":" + (o.direct ? "true" : "false") +
                       machine_json_fields(gpu, date));
  }
  return 0;
}

}  // namespace kvikio::bench
