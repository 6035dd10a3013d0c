/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "remote/sink.hpp"

#include "remote/http_headers.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string_view>

#include <curl/curl.h>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "cuda/stream_cache.hpp"

namespace kvikio::detail {

// The ring is taken at the first write, not here: a transfer then connects without waiting for
// pinned memory (a fresh bounce buffer is pinned by the driver: milliseconds, serialised by
// it), so the connections of threads that start together open together, and a transfer
// waiting for its first byte holds no pinned memory.
RemoteSink::RemoteSink(void* dst, std::size_t capacity, CUcontext device_context)
  : dst_{static_cast<std::byte*>(dst)},
    capacity_{capacity},
    ctx_{device_context},
    num_slots_{device_context != nullptr ? defaults::num_bounce_buffers() : 0}
{
}

RemoteSink::~RemoteSink() noexcept
{
  if (!ring_) { return; }
  // The ring waits for its copies before its memory goes back to the pool.
  try {
    PushAndPopContext const context{ctx_};
    ring_.reset();
  } catch (...) {
    ring_.reset();
  }
}

bool RemoteSink::range_as_expected() const noexcept
{
  // "bytes <first>-<last>/" as asked, then the object's size: the one expected, if one is
  // (else any), or "*" (a server that does not know it).
  auto const range_end = expected_range_.rfind('/') + 1;
  if (content_range_.size() <= range_end ||
      content_range_.compare(0, range_end, expected_range_, 0, range_end) != 0) {
    return false;
  }
  std::string_view const total{content_range_.data() + range_end,
                               content_range_.size() - range_end};
  return range_end == expected_range_.size() || total == "*" ||
         total == std::string_view{expected_range_}.substr(range_end);
}

std::size_t RemoteSink::header_callback(char* data,
                                        std::size_t size,
                                        std::size_t nmemb,
                                        void* self) noexcept
{
  std::size_t const n = size * nmemb;
  auto const value    = detail::header_value({data, n}, "content-range");
  if (value.has_value()) {
    try {
      static_cast<RemoteSink*>(self)->content_range_ = std::string{*value};
    } catch (...) {  // out of memory: the range check then fails the transfer
    }
  }
  return n;
}

std::size_t RemoteSink::write_callback(char* data,
                                       std::size_t size,
                                       std::size_t nmemb,
                                       void* self) noexcept
{
  auto* sink          = static_cast<RemoteSink*>(self);
  std::size_t const n = size * nmemb;
  if (sink->status_class_ == 0 && sink->curl_ != nullptr) {
    long status = 0;
    curl_easy_getinfo(static_cast<CURL*>(sink->curl_), CURLINFO_RESPONSE_CODE, &status);
    sink->status_class_ = static_cast<int>(status / 100);
    // A partial answer must be the range asked for: other bytes would be silently wrong data.
    if (status == 206 && !sink->range_as_expected()) {
      sink->wrong_range_ = true;
      return 0;  // abort before writing anything
    }
    // The same size is no proof of the same object: bytes of another version would mix silently.
    if (sink->status_class_ == 2 && !sink->expected_tag_.empty()) {
      std::string tag = response_entity_tag(sink->curl_);
      if (!tag.empty() && !same_entity_tag(tag, sink->expected_tag_)) {
        sink->other_version_ = std::move(tag);
        return 0;  // abort before writing anything
      }
    }
  }
  if (sink->status_class_ != 2) {  // an error page: keep its start for the message
    try {
      sink->error_body_.append(
        data,
        std::min(n, std::size_t{2048} - std::min(std::size_t{2048}, sink->error_body_.size())));
    } catch (...) {
    }
    return n;
  }
  if (n > sink->capacity_ - sink->received_) {
    sink->overflowed_ = true;
    return 0;  // aborts the transfer: nothing is written past the destination
  }
  if (sink->ctx_ == nullptr) {
    std::memcpy(sink->dst_ + sink->received_, data, n);
    sink->received_ += n;
    return n;
  }
  try {
    if (!sink->ring_) {
      PushAndPopContext const context{sink->ctx_};
      sink->make_ring();
    }
    // Most writes land inside the current slot: a memcpy, no driver call. The others move to a
    // next slot or copy one, on whichever thread drives the transfer: they need the context.
    std::size_t const room = sink->slot_ == nullptr ? 0 : sink->ring_->slot_size() - sink->in_slot_;
    std::optional<PushAndPopContext> context;
    if (n >= room) { context.emplace(sink->ctx_); }
    if (sink->waker_ && !sink->next_slots_free(n)) {
      sink->wake_after_copies();
      sink->paused_ = true;
      return CURL_WRITEFUNC_PAUSE;  // nothing consumed: libcurl delivers these bytes again
    }
    // Fill slots; a full slot goes to the device while the next one fills.
    std::size_t done = 0;
    while (done < n) {
      if (sink->slot_ == nullptr) { sink->slot_ = static_cast<std::byte*>(sink->ring_->next()); }
      std::size_t const take = std::min(n - done, sink->ring_->slot_size() - sink->in_slot_);
      std::memcpy(sink->slot_ + sink->in_slot_, data + done, take);
      sink->in_slot_ += take;
      done += take;
      if (sink->in_slot_ == sink->ring_->slot_size()) { sink->flush(); }
    }
  } catch (...) {
    sink->error_ = std::current_exception();
    return 0;  // aborts the transfer; RangeRequest reports the error
  }
  sink->received_ += n;
  return n;
}

// A ring of KVIKIO_NUM_BOUNCE_BUFFERS slots of one bounce buffer, or for a range that fills
// fewer of them, only those (one slot of the range's size if it fits in one), in a smaller buffer
// of the pool's parts: the multi-poll reactor keeps dozens of small transfers in flight, and each
// holding a whole bounce buffer held hundreds of MiB of pinned memory for a few MiB of data.
void RemoteSink::make_ring()
{
  auto& pool             = CudaPinnedBounceBufferPool::instance();
  std::size_t const page = get_page_size();
  std::size_t const slot = BounceBufferRing<>::slot_size_for(pool.buffer_size(), num_slots_, 0);
  std::size_t const slots_filled = std::max<std::size_t>((capacity_ + slot - 1) / slot, 1);
  if (slots_filled < num_slots_) {
    std::size_t const slot_bytes = slots_filled == 1 ? (capacity_ + page - 1) / page * page : slot;
    ring_.emplace(slots_filled, 1, slot_bytes, &pool.part_pool_for(slots_filled * slot_bytes));
    // A smaller size set meanwhile would make the range wrap onto its own slots.
    if (ring_->num_slots() * ring_->slot_size() >= capacity_) { return; }
  }
  ring_.emplace(num_slots_);
}

// Whether the slots that `n` more bytes would move into are free (no copy pending). More slots
// than the ring has means the write wraps onto its own copies: it waits for them even in
// non-blocking mode, which only happens with slots smaller than libcurl's writes (16 KiB).
bool RemoteSink::next_slots_free(std::size_t n)
{
  std::size_t const room = slot_ == nullptr ? 0 : ring_->slot_size() - in_slot_;
  if (n <= room) { return true; }
  std::size_t const more = (n - room + ring_->slot_size() - 1) / ring_->slot_size();
  for (std::size_t ahead = 1; ahead <= std::min(more, ring_->num_slots()); ++ahead) {
    if (!ring_->is_free(ahead)) { return false; }
  }
  return true;
}

void RemoteSink::flush()
{
  if (in_slot_ == 0) { return; }
  if (stream_ == nullptr) { stream_ = stream_for_this_thread(ctx_); }
  ring_->submit_h2d(convert_void2deviceptr(dst_ + flushed_), in_slot_, stream_);
  flushed_ += in_slot_;
  in_slot_ = 0;
  slot_    = nullptr;
}

bool CopyWaker::claim_host_function(CUstream stream)
{
  std::lock_guard const lock{mutex_};
  if (std::find(pending_.begin(), pending_.end(), stream) != pending_.end()) { return false; }
  pending_.push_back(stream);
  return true;
}

void CopyWaker::host_function_ran(CUstream stream) noexcept
{
  std::lock_guard const lock{mutex_};
  std::erase(pending_, stream);
}

// A host function behind the copies enqueued so far wakes the reactor when they are done, so
// that it need not keep polling the GPU; if one is pending on the stream already, the reactor
// re-arms once that one woke it (or its watch of the copies ended). The host function owns a
// reference to the waker: the reactor may be gone by then.
void RemoteSink::wake_after_copies()
{
  if (!waker_->claim_host_function(stream_)) { return; }
  struct Pending {
    std::shared_ptr<CopyWaker> waker;
    CUstream stream;
  };
  auto* pending    = new Pending{waker_, stream_};
  CUresult const r = cudaAPI::instance().LaunchHostFunc(
    stream_,
    [](void* user) {
      auto* p = static_cast<Pending*>(user);
      p->waker->host_function_ran(p->stream);
      p->waker->wake();
      delete p;
    },
    pending);
  if (r != CUDA_SUCCESS) {
    waker_->host_function_ran(stream_);
    delete pending;
    KVIKIO_CUDA_DRIVER_TRY(r);
  }
}

void RemoteSink::rearm()
{
  if (!waker_ || stream_ == nullptr) { return; }
  PushAndPopContext const context{ctx_};
  wake_after_copies();
}

bool RemoteSink::ready_to_resume()
{
  if (paused_) {
    PushAndPopContext const context{ctx_};
    paused_ = !ring_->is_free(1);
  }
  return !paused_;
}

void RemoteSink::submit_rest()
{
  if (!ring_) { return; }
  PushAndPopContext const context{ctx_};
  flush();
}

bool RemoteSink::copies_done()
{
  if (!ring_) { return true; }
  PushAndPopContext const context{ctx_};
  return ring_->is_idle();
}

void RemoteSink::restart()
{
  if (ring_) {
    PushAndPopContext const context{ctx_};
    ring_->finish();
    slot_    = nullptr;
    in_slot_ = 0;
    flushed_ = 0;
  }
  received_     = 0;
  overflowed_   = false;
  status_class_ = 0;
  error_body_.clear();
  content_range_.clear();
  wrong_range_ = false;
  error_       = nullptr;
  paused_      = false;
}

void RemoteSink::finish()
{
  if (!ring_) { return; }
  PushAndPopContext const context{ctx_};
  flush();
  ring_->finish();
}

}  // namespace kvikio::detail
