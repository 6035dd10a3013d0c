/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "parallel/batch_plan.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "core/observed_promise.hpp"
#include "cuda/stream_cache.hpp"

namespace kvikio::detail {
namespace {

// Where a merged span lands before its members' bytes are copied out: a buffer of the
// page-aligned pool (host destinations) or of the pinned pool (device destinations), the
// smallest that holds the span; heap memory for a span larger than the pools' buffers.
class Scratch {
 public:
  Scratch(CUcontext context, std::size_t size)
  {
    if (context == nullptr) {
      take(BounceBufferPool<PageAlignedAllocator>::instance(), size);
    } else {
      PushAndPopContext const pushed{context};  // pinned memory is made in the destination's
      take(BounceBufferPool<CudaPinnedAllocator>::instance(), size);
    }
  }
  [[nodiscard]] std::byte* data() const noexcept { return data_; }

 private:
  template <typename Pool>
  void take(Pool& pool, std::size_t size)
  {
    if (size <= pool.buffer_size()) {
      auto buffer = pool.part_pool_for(size).get();
      // The size setting may change between the check and get(): the buffer is checked itself.
      if (buffer.size() >= size) {
        data_ = static_cast<std::byte*>(buffer.get());
        held_ = std::make_shared<typename Pool::Buffer>(std::move(buffer));
        return;
      }
    }
    auto heap = std::make_unique_for_overwrite<std::byte[]>(size);
    data_     = heap.get();
    held_     = std::shared_ptr<std::byte[]>(std::move(heap));
  }
  std::byte* data_{nullptr};
  std::shared_ptr<void> held_;
};

// Copies each member's bytes out of the span at `scratch` into its destination.
void scatter(std::span<BatchRange const> ranges, BatchRun const& run, std::byte const* scratch)
{
  CUcontext const context = ranges[run.members.front()].context;
  if (context == nullptr) {
    for (auto const i : run.members) {
      auto const& r = ranges[i].range;
      std::memcpy(r.buf, scratch + (r.file_offset - run.file_offset), r.size);
    }
    return;
  }
  PushAndPopContext const pushed{context};
  CUstream const stream = stream_for_this_thread(context);
  auto& api             = cudaAPI::instance();
  try {
    for (auto const i : run.members) {
      auto const& r = ranges[i].range;
      KVIKIO_CUDA_DRIVER_TRY(api.MemcpyHtoDAsync(convert_void2deviceptr(r.buf),
                                                 scratch + (r.file_offset - run.file_offset),
                                                 r.size,
                                                 stream));
    }
  } catch (...) {
    // The copies already enqueued end before the futures fail and the scratch is reused.
    (void)api.StreamSynchronize(stream);
    throw;
  }
  KVIKIO_CUDA_DRIVER_TRY(api.StreamSynchronize(stream));
}

// Reads a host-memory run in place through `read_pieces`: each member into its destination,
// each gap into one throwaway buffer as large as the largest gap.
void read_in_place(std::span<BatchRange const> ranges,
                   BatchRun const& run,
                   BatchReaders const& readers)
{
  std::size_t largest_gap = 0;
  std::size_t at          = run.file_offset;
  for (auto const i : run.members) {
    largest_gap = std::max(largest_gap, ranges[i].range.file_offset - at);
    at          = ranges[i].range.file_offset + ranges[i].range.size;
  }
  std::optional<Scratch> throwaway;
  if (largest_gap > 0) { throwaway.emplace(nullptr, largest_gap); }
  std::vector<SpanPiece> pieces;
  pieces.reserve(2 * run.members.size());
  at = run.file_offset;
  for (auto const i : run.members) {
    auto const& r = ranges[i].range;
    if (r.file_offset > at) { pieces.push_back({throwaway->data(), r.file_offset - at}); }
    pieces.push_back({static_cast<std::byte*>(r.buf), r.size});
    at = r.file_offset + r.size;
  }
  readers.read_pieces(ranges[run.members.front()].source, pieces, run.file_offset);
}

}  // namespace

std::size_t merge_limit(std::span<BatchRange const> ranges, std::size_t task_size, ThreadPool& pool)
{
  std::size_t total = 0;
  for (auto const& r : ranges) {
    total += r.range.size;
  }
  std::size_t const threads = std::max(1U, pool.get_thread_count());
  std::size_t const share   = (total + threads - 1) / threads;
  return std::clamp(share, std::min(min_merge_limit, task_size), task_size);
}

CUcontext batch_destination(void* buf, std::size_t size, char const* what, std::size_t index)
{
  if (size == 0) { return nullptr; }
  KVIKIO_EXPECT(buf != nullptr,
                std::string{what} + ": request " + std::to_string(index) + " has a null buffer",
                std::invalid_argument);
  return is_host_memory(buf) ? nullptr : get_context_from_pointer(buf);
}

std::vector<BatchRun> plan_batch(std::span<BatchRange const> ranges,
                                 std::optional<std::size_t> coalesce_max_gap,
                                 std::size_t largest_span)
{
  // Groups of (source, context) in order of first appearance; a batch has few of them.
  std::vector<std::vector<std::size_t>> groups;
  std::vector<std::pair<std::size_t, CUcontext>> keys;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].range.size == 0) { continue; }
    std::pair const key{ranges[i].source, ranges[i].context};
    auto const at = std::find(keys.begin(), keys.end(), key);
    if (at == keys.end()) {
      keys.push_back(key);
      groups.emplace_back();
      groups.back().push_back(i);
    } else {
      groups[static_cast<std::size_t>(at - keys.begin())].push_back(i);
    }
  }

  std::vector<BatchRun> runs;
  for (auto& group : groups) {
    // By offset, ties in the caller's order.
    std::stable_sort(group.begin(), group.end(), [&](std::size_t a, std::size_t b) {
      return ranges[a].range.file_offset < ranges[b].range.file_offset;
    });
    for (std::size_t i = 0; i < group.size();) {
      auto const& head = ranges[group[i]].range;
      BatchRun run{head.file_offset, head.size, {group[i]}};
      for (++i; coalesce_max_gap.has_value() && i < group.size(); ++i) {
        auto const& next    = ranges[group[i]].range;
        auto const run_end  = run.file_offset + run.size;
        auto const next_end = next.file_offset + next.size;
        bool const disjoint = next.file_offset >= run_end;
        bool const near     = disjoint && next.file_offset - run_end <= *coalesce_max_gap;
        bool const fits     = next_end - run.file_offset <= largest_span;
        if (!(near && fits)) { break; }
        run.size = next_end - run.file_offset;
        run.members.push_back(group[i]);
      }
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

std::vector<std::future<std::size_t>> run_batch(std::span<BatchRange const> ranges,
                                                BatchReadOptions const& options,
                                                BatchReaders readers)
{
  KVIKIO_NVTX_FUNC_RANGE();
  std::size_t const task_size = options.task_size.value_or(defaults::task_size());
  KVIKIO_EXPECT(
    task_size > 0, "`task_size` must be positive (a batch read got 0)", std::invalid_argument);
  ThreadPool* const pool =
    options.thread_pool != nullptr ? options.thread_pool : &defaults::thread_pool();

  std::vector<std::future<std::size_t>> futures(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].range.size == 0) { futures[i] = make_ready_future<std::size_t>(0); }
  }
  auto const runs =
    plan_batch(ranges, options.coalesce_max_gap, merge_limit(ranges, task_size, *pool));

  // What every merged task shares: the ranges (copied: the caller's span may go once this
  // returns) and the handles' span reader (which holds their leases).
  struct Shared {
    std::vector<BatchRange> ranges;
    BatchReaders readers;
  };
  std::shared_ptr<Shared> shared;

  // Everything the merged tasks need is made before the first one starts: a failure to allocate
  // then throws with nothing started. Then the merged runs go to the pool, and then the ranges
  // read alone start: a pread that runs on the caller (a small local one) overlaps the pool's
  // work instead of delaying it.
  struct Merged {
    BatchRun const* run;
    std::shared_ptr<std::vector<ObservedPromise>> promises;
  };
  std::vector<Merged> merged;
  for (auto const& run : runs) {
    if (run.members.size() == 1) { continue; }
    if (shared == nullptr) {
      shared = std::make_shared<Shared>(
        Shared{std::vector<BatchRange>(ranges.begin(), ranges.end()), readers});
    }
    auto promises = std::make_shared<std::vector<ObservedPromise>>();
    promises->reserve(run.members.size());
    for (std::size_t const member : run.members) {
      promises->emplace_back(
        readers.observe && monitoring_enabled() ? readers.observe(ranges[member]) : nullptr);
      futures[member] = promises->back().get_future();
    }
    merged.push_back({&run, std::move(promises)});
  }
  for (auto const& m : merged) {
    auto const& promises = m.promises;
    try {
      pool->detach_task([shared, promises, run = *m.run] {
        try {
          auto const& first = shared->ranges[run.members.front()];
          if (first.context == nullptr && shared->readers.read_pieces) {
            read_in_place(shared->ranges, run, shared->readers);
          } else {
            Scratch const scratch{first.context, run.size};
            shared->readers.read_span(first.source, scratch.data(), run.size, run.file_offset);
            scatter(shared->ranges, run, scratch.data());
          }
          for (std::size_t m = 0; m < run.members.size(); ++m) {
            (*promises)[m].set_value(shared->ranges[run.members[m]].range.size);
          }
        } catch (...) {
          for (auto& p : *promises) {
            p.set_exception(std::current_exception());
          }
        }
      });
    } catch (...) {
      for (auto& p : *promises) {
        p.set_exception(std::current_exception());
      }
    }
  }
  for (auto const& run : runs) {
    if (run.members.size() != 1) { continue; }
    auto const i = run.members.front();
    try {
      futures[i] = readers.read_one(ranges[i], task_size, pool);
    } catch (...) {
      std::promise<std::size_t> failed;
      failed.set_exception(std::current_exception());
      futures[i] = failed.get_future();
    }
  }
  return futures;
}

}  // namespace kvikio::detail
