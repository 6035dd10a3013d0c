/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * RemoteHandle over the easy transport: one ranged GET per task on the thread pool.
 */
#include <kvikio/remote_handle.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include <kvikio/detail/logger.hpp>
#include <kvikio/detail/nvtx.hpp>
#include <kvikio/detail/url.hpp>
#include <kvikio/error.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/parallel_operation.hpp>
#include <kvikio/statistics/counters.hpp>
#include <kvikio/utils.hpp>

#include "core/in_flight.hpp"
#include "core/observed_promise.hpp"
#include "core/settings_report.hpp"
#include "core/waiting_callers.hpp"
#include "parallel/batch_plan.hpp"
#include "parallel/stream_ordered.hpp"
#include "remote/multi_poll.hpp"
#include "remote/range_request.hpp"
#include "remote/request_fields.hpp"
#include "remote/sink.hpp"

namespace kvikio {
namespace {

// An object's size asked of its server (HEAD, a one-byte range, GETFILESTATUS): counted and
// timed in the process's statistics, also when it fails.
std::size_t probe_size(RemoteEndpoint& endpoint)
{
  detail::ScopedTimer const timer{detail::count_remote_size_probe};
  return endpoint.get_file_size();
}

// What observations name the object by: its URL without the query or user information (a
// presigned signature, a password).
std::string source_of(RemoteEndpoint const& endpoint)
{
  std::string source = detail::url_for_message(endpoint.str());
  return source.substr(0, source.find('?'));
}

std::string type_name(RemoteEndpointType t)
{
  switch (t) {
    case RemoteEndpointType::AUTO: return "AUTO";
    case RemoteEndpointType::S3: return "S3";
    case RemoteEndpointType::S3_PUBLIC: return "S3_PUBLIC";
    case RemoteEndpointType::S3_PRESIGNED_URL: return "S3_PRESIGNED_URL";
    case RemoteEndpointType::WEBHDFS: return "WEBHDFS";
    case RemoteEndpointType::HTTP: return "HTTP";
  }
  return "unknown";
}

// The endpoint names the error messages use ("S3 public", "WebHDFS", ...).
std::string upstream_type_name(RemoteEndpointType t)
{
  switch (t) {
    case RemoteEndpointType::S3_PUBLIC: return "S3 public";
    case RemoteEndpointType::S3_PRESIGNED_URL: return "S3 with presigned URL";
    case RemoteEndpointType::WEBHDFS: return "WebHDFS";
    default: return type_name(t);
  }
}

// The easy transport: one ranged GET into `sink` on the calling thread, attempts retried as
// RangeRequest decides (a retry rewrites only its own range). The backoff before a retry is
// slept in slices, so that a handle being closed (`owner`) does not wait it out.
void get_range(RemoteEndpoint& endpoint,
               detail::RemoteSink& sink,
               std::size_t file_offset,
               std::size_t size,
               std::size_t object_size,
               detail::InFlight const* owner)
{
  detail::RangeRequest request{endpoint, sink, file_offset, size, object_size, owner};
  while (true) {
    CurlHandle curl;
    request.prepare(curl);
    CURLcode const code    = curl.try_perform();
    auto const retry_after = request.outcome(curl, code);
    if (!retry_after) {
      sink.finish();
      return;
    }
    constexpr std::chrono::milliseconds slice{100};
    for (auto left = *retry_after; left.count() > 0 && (owner == nullptr || !owner->closing());
         left -= slice) {
      std::this_thread::sleep_for(std::min(left, slice));
    }
  }
}

// One range into `buf`, host memory (`device_context` null) or device memory of that context,
// through `backend`: on the calling thread (easy), or as one chunk on a reactor (multi-poll).
// `lease`: the handle's lease on `endpoint`, held by the caller throughout; the read ends early
// if the handle is closed.
std::size_t read_range(RemoteEndpoint& endpoint,
                       std::size_t object_size,
                       RemoteBackendType backend,
                       void* buf,
                       std::size_t size,
                       std::size_t file_offset,
                       CUcontext device_context,
                       std::shared_ptr<void> const& lease)
{
  KVIKIO_NVTX_FUNC_RANGE();
  if (backend == RemoteBackendType::LIBCURL_MULTI_POLL) {
    return detail::MultiPollTransport::instance()
      .pread(endpoint,
             object_size,
             {static_cast<std::byte*>(buf), size, file_offset, size, device_context},
             lease)
      .get();
  }
  detail::RemoteSink sink{buf, size, device_context};
  get_range(endpoint, sink, file_offset, size, object_size, detail::InFlight::owner_of(lease));
  return size;
}

// What a new handle decided, at `info` (KVIKIO_LOG_LEVEL): the object (its URL without query or
// credentials), its size and where it came from, the transport with its connections, and the
// request rule. The settings that chose each are named in docs/settings.md.
void log_opening(RemoteEndpoint const& endpoint,
                 std::string const& source,
                 std::size_t nbytes,
                 bool size_probed)
{
  if (!detail::Logger::instance().enabled(detail::LogLevel::info)) { return; }
  detail::log_settings_report_once();
  std::string transport;
  if (defaults::remote_io_backend() == RemoteIOBackend::MULTI_POLL) {
    unsigned const reactors = defaults::remote_io_num_reactors();
    transport               = std::string{"MULTI_POLL, "} + std::to_string(reactors) +
                (reactors == 1 ? " reactor" : " reactors") + " of at most " +
                std::to_string(defaults::remote_max_connections()) + " connections each";
  } else {
    unsigned const threads = defaults::thread_pool_nthreads();
    transport              = std::string{"EASY_THREADPOOL, the pool's "} + std::to_string(threads) +
                (threads == 1 ? " thread" : " threads") + " with a connection each";
  }
  std::string retried;
  for (int const code : defaults::http_status_codes()) {
    retried += (retried.empty() ? "" : ", ") + std::to_string(code);
  }
  KVIKIO_LOG_INFO("RemoteHandle(",
                  source,
                  "): ",
                  type_name(endpoint.remote_endpoint_type()),
                  ", ",
                  nbytes,
                  " bytes (",
                  size_probed ? "from a HEAD request" : "as given",
                  "); ",
                  transport,
                  "; timeout ",
                  defaults::http_timeout(),
                  " s, at most ",
                  defaults::http_max_attempts(),
                  " attempts (retrying ",
                  retried.empty() ? std::string{"no status"} : retried,
                  ")");
}

}  // namespace

RemoteHandle RemoteHandle::open(std::string const& url,
                                RemoteEndpointType type,
                                std::optional<std::vector<RemoteEndpointType>> allow_list,
                                std::optional<std::size_t> nbytes)
{
  std::vector<RemoteEndpointType> const allowed =
    allow_list ? std::move(*allow_list)
               : std::vector<RemoteEndpointType>{RemoteEndpointType::S3,
                                                 RemoteEndpointType::S3_PUBLIC,
                                                 RemoteEndpointType::S3_PRESIGNED_URL,
                                                 RemoteEndpointType::WEBHDFS,
                                                 RemoteEndpointType::HTTP};
  auto const is_allowed = [&](RemoteEndpointType t) {
    return std::find(allowed.begin(), allowed.end(), t) != allowed.end();
  };
  auto const make = [&](RemoteEndpointType t) -> std::unique_ptr<RemoteEndpoint> {
    bool const s3_scheme = detail::has_scheme(url, "s3");
    switch (t) {
      case RemoteEndpointType::HTTP: return std::make_unique<HttpEndpoint>(url);
      case RemoteEndpointType::S3_PRESIGNED_URL:
        return std::make_unique<S3EndpointWithPresignedUrl>(url);
      case RemoteEndpointType::WEBHDFS: return std::make_unique<WebHdfsEndpoint>(url);
      case RemoteEndpointType::S3:
        return s3_scheme ? std::make_unique<S3Endpoint>(S3Endpoint::parse_s3_url(url))
                         : std::make_unique<S3Endpoint>(url);
      case RemoteEndpointType::S3_PUBLIC: {
        if (!s3_scheme) { return std::make_unique<S3PublicEndpoint>(url); }
        auto [bucket, object] = S3Endpoint::parse_s3_url(url);
        return std::make_unique<S3PublicEndpoint>(
          S3Endpoint::url_from_bucket_and_object(std::move(bucket), std::move(object)));
      }
      default:
        throw std::invalid_argument("RemoteHandle::open: endpoint type " + type_name(t) +
                                    " cannot be opened");
    }
  };

  std::unique_ptr<RemoteEndpoint> endpoint;
  if (type == RemoteEndpointType::AUTO) {
    for (auto const candidate : allowed) {
      if (!detail::is_url_valid_for(candidate, url)) { continue; }
      if (candidate != RemoteEndpointType::S3) {
        endpoint = make(candidate);
        break;
      }
      // Signed S3 must work (credentials found, the size request answered); otherwise the object
      // may be public.
      try {
        endpoint        = make(candidate);
        auto const size = probe_size(*endpoint);
        if (!nbytes) { nbytes = size; }
      } catch (detail::UnsafeRequestField const&) {
        throw;  // a malformed credential is the caller's error, not a sign of a public object
      } catch (...) {
        if (!is_allowed(RemoteEndpointType::S3_PUBLIC)) { throw; }
        endpoint = make(RemoteEndpointType::S3_PUBLIC);
      }
      break;
    }
    if (endpoint == nullptr) {
      std::string names;
      for (auto const t : allowed) {
        names += (names.empty() ? "" : ", ") + type_name(t);
      }
      // libcurl's error for text that is not a URL ("Bad scheme"), else the one below.
      (void)detail::UrlParser::parse(url, CURLU_NON_SUPPORT_SCHEME);
      KVIKIO_FAIL("Unsupported endpoint URL. \"" + detail::url_for_message(url) +
                    "\" fits none of the allowed types (" + names + ")",
                  std::runtime_error);
    }
  } else {
    KVIKIO_EXPECT(
      is_allowed(type),
      upstream_type_name(type) + " is not in the allowlist. (" + detail::url_for_message(url) + ")",
      std::runtime_error);
    // S3-compatible servers (MinIO, s3rver) are not on amazonaws.com: explicit S3 takes their
    // http(s) URLs too (not only as s3:// with AWS_ENDPOINT_URL), but not a URL of another kind
    // (a presigned URL, a WebHDFS one), which is refused.
    bool const s3_compatible =
      (type == RemoteEndpointType::S3 || type == RemoteEndpointType::S3_PUBLIC) &&
      HttpEndpoint::is_url_valid(url) && !S3EndpointWithPresignedUrl::is_url_valid(url) &&
      !WebHdfsEndpoint::is_url_valid(url);
    bool const valid = detail::is_url_valid_for(type, url) || s3_compatible;
    KVIKIO_EXPECT(valid,
                  "Invalid URL for " + upstream_type_name(type) + " endpoint: \"" +
                    detail::url_for_message(url) + "\"",
                  std::runtime_error);
    endpoint = make(type);
  }
  return nbytes ? RemoteHandle{std::move(endpoint), *nbytes} : RemoteHandle{std::move(endpoint)};
}

RemoteHandle::RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint, std::size_t nbytes)
  : endpoint_{std::move(endpoint)},
    nbytes_{nbytes},
    in_flight_{std::make_unique<detail::InFlight>()}
{
  KVIKIO_EXPECT(endpoint_ != nullptr, "RemoteHandle: null endpoint", std::invalid_argument);
  source_ = std::make_shared<std::string const>(source_of(*endpoint_));
  log_opening(*endpoint_, *source_, nbytes_, false);
}

RemoteHandle::RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint)
  : endpoint_{std::move(endpoint)}, nbytes_{0}, in_flight_{std::make_unique<detail::InFlight>()}
{
  KVIKIO_EXPECT(endpoint_ != nullptr, "RemoteHandle: null endpoint", std::invalid_argument);
  source_      = std::make_shared<std::string const>(source_of(*endpoint_));
  nbytes_      = probe_size(*endpoint_);
  served_size_ = nbytes_;
  log_opening(*endpoint_, *source_, nbytes_, true);
}

RemoteHandle::RemoteHandle(RemoteHandle&& o) noexcept
  : endpoint_{std::move(o.endpoint_)},
    nbytes_{o.nbytes_},
    served_size_{o.served_size_},
    backend_{o.backend_.load()},
    in_flight_{std::move(o.in_flight_)},
    source_{std::move(o.source_)}
{
}

RemoteHandle& RemoteHandle::operator=(RemoteHandle&& o) noexcept
{
  if (this != &o) {
    if (in_flight_ != nullptr) { in_flight_->close_and_wait(); }
    endpoint_    = std::move(o.endpoint_);
    nbytes_      = o.nbytes_;
    served_size_ = o.served_size_;
    backend_     = o.backend_.load();
    in_flight_   = std::move(o.in_flight_);
    source_      = std::move(o.source_);
  }
  return *this;
}

RemoteHandle::~RemoteHandle() noexcept
{
  // Before the members go: the endpoint must outlive every read that uses it.
  if (in_flight_ != nullptr) { in_flight_->close_and_wait(); }
}

std::shared_ptr<void> RemoteHandle::enter(char const* what) const
{
  detail::expect_not_in_monitor();
  auto lease = in_flight_ == nullptr ? nullptr : in_flight_->enter();
  KVIKIO_EXPECT(lease != nullptr, std::string{what} + ": the RemoteHandle was moved from");
  return lease;
}

void RemoteHandle::check_in_range(char const* what, std::size_t size, std::size_t offset) const
{
  KVIKIO_EXPECT(offset <= nbytes_ && size <= nbytes_ - offset,
                "cannot read " + std::to_string(offset) + "+" + std::to_string(size) +
                  " bytes into a " + std::to_string(nbytes_) + " bytes file (" +
                  detail::url_for_message(endpoint_->str()) + "): " + what + " runs past the end",
                std::invalid_argument);
}

RemoteBackendType RemoteHandle::backend() const
{
  return remote_backend().value_or(defaults::remote_backend());
}

std::size_t RemoteHandle::read(void* buf, std::size_t size, std::size_t file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  auto const lease = enter("RemoteHandle::read");
  check_in_range("RemoteHandle::read", size, file_offset);
  if (size == 0) { return 0; }
  KVIKIO_EXPECT(buf != nullptr, "RemoteHandle::read: null buffer", std::invalid_argument);
  CUcontext const device_context = is_host_memory(buf) ? nullptr : get_context_from_pointer(buf);
  auto const recorder            = observe(device_context != nullptr, file_offset, size);
  std::size_t const n =
    read_range(*endpoint_, served_size_, backend(), buf, size, file_offset, device_context, lease);
  if (recorder) { recorder->finish(n); }
  return n;
}

std::shared_ptr<detail::LogicalObservationRecorder> RemoteHandle::observe(bool device,
                                                                          std::size_t file_offset,
                                                                          std::size_t size) const
{
  if (!detail::monitoring_enabled()) { return nullptr; }
  return detail::observe_call(remote_endpoint_type() == RemoteEndpointType::WEBHDFS
                                ? IoBackend::REMOTE_HDFS
                                : IoBackend::REMOTE_HTTP,
                              TransferDirection::READ,
                              device ? MemoryKind::DEVICE : MemoryKind::HOST,
                              file_offset,
                              size,
                              source_,
                              "GET");
}

std::future<std::size_t> RemoteHandle::pread(void* buf,
                                             std::size_t size,
                                             std::size_t file_offset,
                                             std::size_t task_size,
                                             ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE();
  auto lease = enter("RemoteHandle::pread");  // held by every chunk until the last one ends
  check_in_range("RemoteHandle::pread", size, file_offset);
  KVIKIO_EXPECT(
    buf != nullptr || size == 0, "RemoteHandle::pread: null buffer", std::invalid_argument);
  KVIKIO_EXPECT(task_size > 0,
                "`task_size` must be positive (RemoteHandle::pread got 0)",
                std::invalid_argument);
  auto* const bytes = static_cast<std::byte*>(buf);
  // Where the bytes go, asked once for the whole call (its tasks share the allocation).
  CUcontext const device_context =
    size == 0 || is_host_memory(buf) ? nullptr : get_context_from_pointer(buf);
  if (backend() == RemoteBackendType::LIBCURL_MULTI_POLL && size > 0) {
    return detail::MultiPollTransport::instance().pread(
      *endpoint_,
      served_size_,
      {bytes, size, file_offset, task_size, device_context},
      std::move(lease),
      observe(device_context != nullptr, file_offset, size));
  }
  // A read of one task where the caller waits for each of its reads: on the caller, which
  // would only wait for a pool thread to do it (core/waiting_callers.hpp).
  bool const one_task = size > 0 && size <= task_size && thread_pool != nullptr;
  if (one_task && detail::caller_waits_for_each_read()) {
    return detail::done_here(
      [&] {
        return read_range(
          *endpoint_, served_size_, backend(), buf, size, file_offset, device_context, lease);
      },
      observe(device_context != nullptr, file_offset, size));
  }
  return parallel_io(
    [lease,
     endpoint    = endpoint_.get(),
     served_size = served_size_,
     backend     = backend(),
     bytes,
     device_context,
     mark = one_task ? detail::handing_off() : detail::HandOffMark{}](
      std::size_t buf_offset, std::size_t n, std::size_t offset) mutable {
      detail::EndOfHandOff const end{mark};
      return read_range(
        *endpoint, served_size, backend, bytes + buf_offset, n, offset, device_context, lease);
    },
    size,
    file_offset,
    task_size,
    thread_pool,
    0,
    size > 0 && thread_pool != nullptr ? observe(device_context != nullptr, file_offset, size)
                                       : nullptr);
}

StreamFuture RemoteHandle::read_async(void* devPtr,
                                      std::size_t size,
                                      std::size_t file_offset,
                                      CUstream stream)
{
  KVIKIO_NVTX_FUNC_RANGE();
  auto lease = enter("RemoteHandle::read_async");
  check_in_range("RemoteHandle::read_async", size, file_offset);
  StreamFuture future{devPtr, size, static_cast<off_t>(file_offset), 0, stream};
  auto [base, size_p, file_offset_p, devPtr_offset_p, bytes_p, s] = future.get_args();
  if (size == 0) {
    *bytes_p = 0;
    return future;
  }
  KVIKIO_EXPECT(devPtr != nullptr && !is_host_memory(devPtr),
                "RemoteHandle::read_async: the destination must be device memory",
                std::invalid_argument);
  future.context_ = get_context_from_pointer(devPtr);
  PushAndPopContext const context{future.context_};
  detail::run_stream_ordered(
    {.stream      = stream,
     .to_device   = true,
     .device      = convert_void2deviceptr(devPtr),
     .size        = size,
     .file_offset = file_offset,
     .piece_size  = defaults::task_size(),
     .threads     = defaults::thread_pool().get_thread_count()},
    // The pieces land in the stream's pinned staging: host memory, known without asking the
    // driver about each piece.
    [lease, endpoint = endpoint_.get(), served_size = served_size_, backend = backend()](
      void* host, std::size_t n, std::size_t offset) {
      return read_range(*endpoint, served_size, backend, host, n, offset, nullptr, lease);
    },
    detail::finishing_observation(
      observe(true, file_offset, size),
      detail::report_stream_ordered(bytes_p, future.error_, "RemoteHandle::read_async")));
  return future;
}

std::vector<std::future<std::size_t>> RemoteHandle::batch_read(std::span<ReadRange const> ranges,
                                                               BatchReadOptions const& options)
{
  return remote_batch_read(detail::requests_of<RemoteReadRequest>(this, ranges), options);
}

std::vector<std::future<std::size_t>> remote_batch_read(std::span<RemoteReadRequest const> requests,
                                                        BatchReadOptions const& options)
{
  KVIKIO_NVTX_FUNC_RANGE();
  constexpr char const* what = "remote_batch_read";
  // Each handle once: its lease (taken before anything starts, held by every merged read of the
  // batch), its endpoint and transport as they are now.
  struct Source {
    RemoteHandle* handle;
    std::shared_ptr<void> lease;
    RemoteEndpoint* endpoint;
    std::size_t served_size;
    RemoteBackendType backend;
  };
  std::vector<Source> sources;
  auto const source_of =
    detail::source_indices(requests, what, [&](RemoteHandle& h, char const* which) {
      auto lease = h.enter(which);
      sources.push_back({&h, std::move(lease), h.endpoint_.get(), h.served_size_, h.backend()});
    });
  std::vector<detail::BatchRange> ranges;
  ranges.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto const& q           = requests[i];
    std::string const which = std::string{what} + " request " + std::to_string(i);
    q.handle->check_in_range(which.c_str(), q.size, q.file_offset);
    ranges.push_back({source_of[i],
                      detail::batch_destination(q.buf, q.size, what, i),
                      {q.buf, q.size, q.file_offset}});
  }
  return detail::run_batch(
    ranges,
    options,
    {.read_one =
       [sources](detail::BatchRange const& r, std::size_t task_size, ThreadPool* pool) {
         auto& h = *sources[r.source].handle;
         return h.pread(r.range.buf, r.range.size, r.range.file_offset, task_size, pool);
       },
     .read_span =
       [sources](std::size_t source, void* host, std::size_t size, std::size_t file_offset) {
         auto const& s = sources[source];
         (void)read_range(
           *s.endpoint, s.served_size, s.backend, host, size, file_offset, nullptr, s.lease);
       },
     .observe =
       [sources](detail::BatchRange const& r) {
         return sources[r.source].handle->observe(
           r.context != nullptr, r.range.file_offset, r.range.size);
       }});
}

}  // namespace kvikio
