/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "io/local_plan.hpp"

#include <algorithm>
#include <string>

#include <kvikio/shim/cufile.hpp>
#include <kvikio/utils.hpp>

#include "core/threadpool_internals.hpp"
#include "core/waiting_callers.hpp"
#include "io/io_uring/io_uring_io.hpp"
#include "io/staging/device_staging.hpp"

namespace kvikio::detail {
namespace {

// One range per pool thread, a multiple of `task_size`: a device write's ring overlaps writing
// chunk i with copying chunk i+1 across the whole range (with one task per chunk every task would
// end waiting for its only copy), cuFile takes each range in one request, and io_uring keeps many
// requests of a range in flight.
std::size_t range_per_thread(std::size_t size, std::size_t task_size, std::size_t threads)
{
  threads                      = std::max<std::size_t>(threads, 1);
  std::size_t const per_thread = (size + threads - 1) / threads;
  return std::max(task_size, (per_thread + task_size - 1) / task_size * task_size);
}

}  // namespace

bool io_uring_selected(bool reading,
                       std::size_t size,
                       std::size_t pool_threads,
                       bool pool_backlogged)
{
  switch (defaults::local_io_backend()) {
    case LocalIOBackend::IO_URING: return io_uring_available();
    case LocalIOBackend::AUTO: {
      // io_uring's kernel workers copy on cores of their own: with more threads than half the
      // cores, POSIX reads as fast into host memory and faster into device memory. The threads
      // are those of every pool of the process (a program feeding several GPUs runs a pool for
      // each), not only the call's. A backlogged pool (at least as many tasks queued as it has
      // threads: many callers, each with reads in flight) keeps its threads busy already: a
      // deeper queue adds kernel workers competing for the same cores, not reads.
      return reading && !pool_backlogged && size > io_uring_piece_size() &&
             at_most_half_the_cores(threads_sharing_the_cores(pool_threads), machine_cores()) &&
             io_uring_available();
    }
    default: return false;
  }
}

std::string gds_unavailable_reason()
{
  if (is_gds_available()) { return {}; }
  if (!is_cufile_library_available()) { return cufile_unavailable_reason(); }
  if (!is_nvidia_fs_loaded()) {
    return "GPUDirect Storage is not available (nvidia-fs is not loaded), so cuFile would only "
           "run its own POSIX fallback";
  }
  // The driver was opened to ask.
  return is_cufile_usable()
           ? "GPUDirect Storage is not available (cuFile's driver reports no nvidia-fs)"
           : cufile_unusable_reason();
}

LocalBackendChoice local_backend_choice(std::size_t pool_threads)
{
  auto const setting      = defaults::local_io_backend();
  std::string const piece = std::to_string(io_uring_piece_size() >> 10) + " KiB";
  if (setting == LocalIOBackend::POSIX) { return {"posix", "KVIKIO_LOCAL_IO_BACKEND=posix"}; }
  if (!io_uring_available()) {
    return {"posix",
            std::string{"io_uring cannot be set up in this process (KVIKIO_LOCAL_IO_BACKEND="} +
              local_io_backend_name(setting) + ")"};
  }
  if (setting == LocalIOBackend::IO_URING) {
    return {"io_uring", "KVIKIO_LOCAL_IO_BACKEND=io_uring"};
  }
  std::size_t const threads = threads_sharing_the_cores(pool_threads);
  std::string const pool =
    std::to_string(threads) +
    (threads == 1 ? " pool thread in the process on " : " pool threads in the process on ") +
    std::to_string(machine_cores()) + " cores";
  if (io_uring_selected(true, io_uring_piece_size() + 1, pool_threads)) {
    return {"io_uring",
            "KVIKIO_LOCAL_IO_BACKEND=auto: reads of more than " + piece + " with " + pool +
              " (at most half); writes, smaller reads and reads while the pool is backlogged "
              "through posix"};
  }
  return {"posix",
          "KVIKIO_LOCAL_IO_BACKEND=auto: " + pool +
            " (io_uring's kernel workers need cores of their own: it serves at most half the "
            "cores' worth of pool threads, counting every pool of the process)"};
}

ByteMover& host_mover(bool reading,
                      std::size_t size,
                      std::size_t pool_threads,
                      bool pool_backlogged)
{
  return io_uring_selected(reading, size, pool_threads, pool_backlogged) ? io_uring_mover()
                                                                         : posix_mover();
}

LocalPlan plan_local_transfer(bool reading,
                              bool host_memory,
                              std::size_t size,
                              std::size_t task_size,
                              std::size_t gds_threshold,
                              ThreadPool const& pool,
                              LocalFile const& file)
{
  std::size_t const threads   = pool.get_thread_count();
  std::size_t const alignment = file.direct() ? get_page_size() : 0;
  bool const cufile           = !host_memory && file.cufile != nullptr;
  bool const backlogged       = pool.is_backlogged();
  LocalPlan plan;
  plan.mover            = cufile ? nullptr : &host_mover(reading, size, threads, backlogged);
  bool const deep_queue = plan.mover == &io_uring_mover();
  if (size < gds_threshold) { return plan; }  // a task hand-off would cost more than the bytes
  if (host_memory) {
    // A read of one task by system calls on the caller while the pool is backlogged (the task
    // would wait behind a whole round of others, and the calling thread adds a core's worth of
    // copying: many callers each keeping reads in flight, as a columnar reader's column
    // chunks), or where the caller waits for each of its reads (a hand-off would only add a
    // wake-up and a context switch each way).
    if (reading && size <= task_size && !deep_queue && alignment == 0) {
      if (backlogged || caller_waits_for_each_read()) { return plan; }
      plan.marks_hand_off = true;
    }
    plan.strategy  = LocalStrategy::ranges;
    plan.task_size = deep_queue ? range_per_thread(size, task_size, threads) : task_size;
    plan.alignment = alignment;
    return plan;
  }
  // A device read is not moved onto the caller when the pool is backlogged: its copy is ordered
  // after the legacy default stream, and pread() would then wait for whatever the GPU runs there.
  if (reading && !cufile) {
    // One slot's worth (a column chunk, a page): its worker reads it into a slot of its own
    // ring, starts the copy (or holds it to go with the reads that come while copies run) and
    // goes on to the next task. Larger: each pool thread takes the next chunk (a slot of its
    // ring) when it is ready for one, so one that falls behind delays only its own chunk. While
    // the pool is backlogged its threads already overlap one another's reads and copies: a
    // chunk is a whole task, read at once and copied at once.
    if (size <= overlapped_read_limit()) {
      plan.strategy = LocalStrategy::overlapped;
    } else {
      plan.strategy = LocalStrategy::shared_chunks;
      plan.workers  = std::min<std::size_t>(threads, (size + task_size - 1) / task_size);
      // (io_uring's deep staging takes the whole read, and a task larger than a bounce buffer
      // would become one slot read and copied in turn.)
      if (backlogged && !deep_queue && task_size <= staging_buffer_size()) {
        plan.chunks = StagingRingShape{1, task_size};
      }
    }
    return plan;
  }
  plan.strategy  = LocalStrategy::ranges;
  plan.task_size = range_per_thread(size, task_size, threads);
  plan.alignment = cufile ? 0 : alignment;
  return plan;
}

}  // namespace kvikio::detail
