/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Stream-ordered operations of a stream whose staging ring is not pinned yet (its first calls):
 * the caller only enqueues two counter steps, and the workers move the bytes.
 */
#pragma once

#include <sys/types.h>

#include <exception>
#include <functional>
#include <memory>

#include "parallel/stream_ordered.hpp"
#include "parallel/stream_side.hpp"
#include "parallel/stream_staging.hpp"

namespace kvikio::detail {

/**
 * @brief Plans `range` as an operation of `ring` (under its mutex(), not pinned) that needs no
 * pinned memory of the caller's: the stream sets the ring's stream_reached() to the operation's
 * number where the operation begins on it and waits for the operation's end; from the moment
 * the stream is there, the workers move the bytes in pieces through pageable memory of their own,
 * with copies on streams of their own that they wait for. A stream's first calls thus cost the
 * caller no pinning, and are ordered on the stream as every call is.
 */
[[nodiscard]] std::shared_ptr<StreamOperation> plan_unstaged(
  StreamOrderedRange const& range,
  std::shared_ptr<StagingRing> ring,
  StreamOrderedHostIo host_io,
  std::function<void(ssize_t, std::exception_ptr)> on_done);

}  // namespace kvikio::detail
