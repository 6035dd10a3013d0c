/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda.h>

#include <kvikio/batch_read.hpp>
#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/error.hpp>

namespace kvikio::detail {

/// @brief One range of a batch as the driver sees it: `source` says which handle it reads
/// (an index the handles' side gives meaning to), `context` where its bytes go (null: host).
struct BatchRange {
  std::size_t source;
  CUcontext context;
  ReadRange range;
};

/// @brief One transfer of a plan: [file_offset, file_offset + size) of one source into one kind
/// of destination, serving `members` (indices into the batch, ascending by file offset). A run of
/// one member is that range alone; a run of several is a merged span.
struct BatchRun {
  std::size_t file_offset;
  std::size_t size;
  std::vector<std::size_t> members;
};

/**
 * @brief The transfers of a batch: ranges grouped by (source, context) in the order each group
 * first appears, each group walked by file offset; a range joins the run before it when
 * `coalesce_max_gap` is set, it starts at or after the run's end, the gap is at most
 * `coalesce_max_gap`, and the run would still be at most `largest_span` bytes (run_batch passes
 * merge_limit()). Overlapping and duplicate ranges are never merged. Ranges of size 0 are in no
 * run.
 */
[[nodiscard]] std::vector<BatchRun> plan_batch(std::span<BatchRange const> ranges,
                                               std::optional<std::size_t> coalesce_max_gap,
                                               std::size_t largest_span);

/// @brief One piece of a merged span read in place: `size` bytes into `dst` (a member's host
/// destination, or for a gap the same throwaway buffer each time).
struct SpanPiece {
  std::byte* dst;
  std::size_t size;
};

/// @brief The smallest merge_limit(): below it a transfer's own cost (a request, a syscall)
/// outweighs what spreading the bytes over more threads gains.
inline constexpr std::size_t min_merge_limit = 256 << 10;

/**
 * @brief The largest merged span of a batch: its bytes spread over `pool`'s threads (so that a
 * batch that merges still keeps every thread busy: merging a row group's ranges into one span
 * would leave one thread to read it all), at least min_merge_limit, at most `task_size`.
 */
[[nodiscard]] std::size_t merge_limit(std::span<BatchRange const> ranges,
                                      std::size_t task_size,
                                      ThreadPool& pool);

/// @brief How the handles' side reads: one range by itself (its pread(), which splits it into
/// `task_size` pieces on `pool`), and a merged span into host memory on the calling thread (a
/// task of the batch's pool). A side that can scatter a span as it reads it (local files:
/// preadv) gives `read_pieces` too, which host-memory runs then use instead of a scratch
/// buffer and a copy.
struct BatchReaders {
  std::function<std::future<std::size_t>(BatchRange const& r, std::size_t task_size, ThreadPool*)>
    read_one;
  std::function<void(std::size_t source, void* host, std::size_t size, std::size_t file_offset)>
    read_span;
  std::function<void(
    std::size_t source, std::span<SpanPiece const> pieces, std::size_t file_offset)>
    read_pieces{};
  /// A range's observation as the member of a merged span (observation.hpp; a range read alone
  /// is its pread's), or null when no monitor is registered.
  std::function<std::shared_ptr<LogicalObservationRecorder>(BatchRange const& r)> observe{};
};

/**
 * @brief Runs a batch: plans it (merged spans at most merge_limit()) and starts every transfer,
 * and returns one future per range in `ranges`' order. A merged span is read into a scratch buffer
 * (pinned for a device destination) and each member's bytes copied out of it; gap bytes go nowhere.
 * The ranges must be valid already (the caller checks them): once this is called, a failure reaches
 * only the futures of the ranges it concerns.
 * @throws std::invalid_argument if `options.task_size` is 0 (before anything starts).
 */
[[nodiscard]] std::vector<std::future<std::size_t>> run_batch(std::span<BatchRange const> ranges,
                                                              BatchReadOptions const& options,
                                                              BatchReaders readers);

/// @brief Where the bytes of `buf` go: null for host memory, else its CUDA context.
/// @throws std::invalid_argument naming `what` and the range's `index` for a null buffer of a
/// range that is not empty.
[[nodiscard]] CUcontext batch_destination(void* buf,
                                          std::size_t size,
                                          char const* what,
                                          std::size_t index);

/// @brief `ranges` of `handle` as the requests {handle, buf, size, file_offset} of a batch.
template <typename Request, typename Handle>
[[nodiscard]] std::vector<Request> requests_of(Handle* handle, std::span<ReadRange const> ranges)
{
  std::vector<Request> requests;
  requests.reserve(ranges.size());
  for (auto const& r : ranges) {
    requests.push_back({handle, r.buf, r.size, r.file_offset});
  }
  return requests;
}

/**
 * @brief For each request, the index of its handle among the batch's distinct handles, in order
 * of first appearance; `first_seen(handle, which)` is called once for each, in that order,
 * `which` naming the request that brought it ("<what> request <i>", for its errors): it takes the
 * handle's lease and state.
 * @throws std::invalid_argument naming `what` and the request's index for a null handle.
 */
template <typename Request, typename FirstSeen>
[[nodiscard]] std::vector<std::size_t> source_indices(std::span<Request const> requests,
                                                      char const* what,
                                                      FirstSeen&& first_seen)
{
  std::unordered_map<decltype(Request::handle), std::size_t> index_of;
  std::vector<std::size_t> out;
  out.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto* const handle = requests[i].handle;
    KVIKIO_EXPECT(handle != nullptr,
                  std::string{what} + ": request " + std::to_string(i) + " has a null handle",
                  std::invalid_argument);
    auto const [at, added] = index_of.try_emplace(handle, index_of.size());
    if (added) {
      std::string const which = std::string{what} + " request " + std::to_string(i);
      first_seen(*handle, which.c_str());
    }
    out.push_back(at->second);
  }
  return out;
}

}  // namespace kvikio::detail
