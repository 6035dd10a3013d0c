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
#include <kvikio/error.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/parallel_operation.hpp>
#include <kvikio/utils.hpp>

#include "sink.hpp"

namespace kvikio {
namespace {

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

// One ranged GET into `sink`, retried on the configured HTTP statuses and on timeouts with
// exponential backoff; each retry rewrites only its own range.
void get_range(RemoteEndpoint& endpoint,
               detail::RemoteSink& sink,
               std::size_t file_offset,
               std::size_t size)
{
  std::size_t const attempts = defaults::http_max_attempts();
  auto const retry_codes     = defaults::http_status_codes();
  auto delay                 = std::chrono::milliseconds(500);
  for (std::size_t attempt = 1;; ++attempt) {
    CurlHandle curl;
    endpoint.setopt(curl);
    endpoint.setup_range_request(curl, file_offset, size);
    curl.setopt(CURLOPT_WRITEFUNCTION, &detail::RemoteSink::write_callback);
    curl.setopt(CURLOPT_WRITEDATA, static_cast<void*>(&sink));
    curl.setopt(CURLOPT_HEADERFUNCTION, &detail::RemoteSink::header_callback);
    curl.setopt(CURLOPT_HEADERDATA, static_cast<void*>(&sink));
    std::string const expected_range =
      "bytes " + std::to_string(file_offset) + "-" + std::to_string(file_offset + size - 1) + "/";
    sink.attach(curl.get(), expected_range);
    CURLcode const r       = curl.perform();
    long const status      = curl.status();
    std::string const what = endpoint.str() + " (" + std::to_string(size) + " bytes at offset " +
                             std::to_string(file_offset) + ")";
    if (sink.wrong_range()) {
      throw std::runtime_error("KvikIO: " + what + ": the server answered Content-Range \"" +
                               sink.content_range() + "\" instead of \"" + expected_range +
                               "...\"");
    }
    if (sink.overflowed()) {
      throw std::overflow_error("KvikIO: " + what +
                                ": the server sent more bytes than the range asked for; it may "
                                "not support range requests");
    }
    bool const retry_status =
      std::find(retry_codes.begin(), retry_codes.end(), status) != retry_codes.end();
    bool const retry = retry_status || r == CURLE_OPERATION_TIMEDOUT;
    if (r == CURLE_OK && !retry_status) {
      if (status / 100 != 2) {
        throw std::runtime_error("KvikIO: " + what + ": HTTP " + std::to_string(status) +
                                 (sink.error_body().empty() ? "" : ": " + sink.error_body()));
      }
      if (sink.received() != size) {
        throw std::runtime_error("KvikIO: " + what + ": the server sent " +
                                 std::to_string(sink.received()) + " bytes");
      }
      sink.finish();
      return;
    }
    std::string const reason =
      r != CURLE_OK ? curl.error_message(r) : "HTTP " + std::to_string(status);
    if (!retry || attempt >= attempts) {
      throw std::runtime_error("KvikIO: " + what + " failed after " + std::to_string(attempt) +
                               " attempt(s): " + reason);
    }
    KVIKIO_LOG_WARN("retrying ",
                    what,
                    " after ",
                    reason,
                    " (attempt ",
                    attempt,
                    " of ",
                    attempts,
                    ", waiting ",
                    delay.count(),
                    " ms)");
    std::this_thread::sleep_for(delay);
    delay *= 2;
    sink.restart();
  }
}

}  // namespace

RemoteHandle RemoteHandle::open(std::string url,
                                RemoteEndpointType type,
                                std::optional<std::vector<RemoteEndpointType>> allow_list,
                                std::optional<std::size_t> nbytes)
{
  if (type == RemoteEndpointType::AUTO) { type = infer_remote_endpoint_type(url); }
  if (allow_list) {
    KVIKIO_EXPECT(std::find(allow_list->begin(), allow_list->end(), type) != allow_list->end(),
                  "RemoteHandle::open: endpoint type " + type_name(type) + " of \"" + url +
                    "\" is not in the allow list",
                  std::invalid_argument);
  }
  std::unique_ptr<RemoteEndpoint> endpoint;
  switch (type) {
    case RemoteEndpointType::HTTP: endpoint = std::make_unique<HttpEndpoint>(std::move(url)); break;
    case RemoteEndpointType::S3_PRESIGNED_URL:
      endpoint = std::make_unique<S3EndpointWithPresignedUrl>(std::move(url));
      break;
    case RemoteEndpointType::WEBHDFS:
      endpoint = std::make_unique<WebHdfsEndpoint>(std::move(url));
      break;
    case RemoteEndpointType::S3:
      endpoint = url.rfind("s3://", 0) == 0
                   ? std::make_unique<S3Endpoint>(S3Endpoint::parse_s3_url(url))
                   : std::make_unique<S3Endpoint>(std::move(url));
      break;
    case RemoteEndpointType::S3_PUBLIC:
      endpoint = std::make_unique<S3PublicEndpoint>(std::move(url));
      break;
    default:
      throw std::invalid_argument("RemoteHandle::open: endpoint type " + type_name(type) +
                                  " cannot be opened");
  }
  return nbytes ? RemoteHandle{std::move(endpoint), *nbytes} : RemoteHandle{std::move(endpoint)};
}

RemoteHandle::RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint, std::size_t nbytes)
  : endpoint_{std::move(endpoint)}, nbytes_{nbytes}
{
  KVIKIO_EXPECT(endpoint_ != nullptr, "RemoteHandle: null endpoint", std::invalid_argument);
}

RemoteHandle::RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint)
  : endpoint_{std::move(endpoint)}, nbytes_{0}
{
  KVIKIO_EXPECT(endpoint_ != nullptr, "RemoteHandle: null endpoint", std::invalid_argument);
  nbytes_ = endpoint_->get_file_size();
}

std::size_t RemoteHandle::read(void* buf, std::size_t size, std::size_t file_offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  KVIKIO_EXPECT(file_offset <= nbytes_ && size <= nbytes_ - file_offset,
                "RemoteHandle::read: " + std::to_string(size) + " bytes at offset " +
                  std::to_string(file_offset) + " run past the end of " + endpoint_->str() + " (" +
                  std::to_string(nbytes_) + " bytes)",
                std::invalid_argument);
  if (size == 0) { return 0; }
  KVIKIO_EXPECT(buf != nullptr, "RemoteHandle::read: null buffer", std::invalid_argument);
  if (is_host_memory(buf)) {
    detail::RemoteSink sink{buf, size, false};
    get_range(*endpoint_, sink, file_offset, size);
    return size;
  }
  PushAndPopContext const context{buf};
  detail::RemoteSink sink{buf, size, true};
  get_range(*endpoint_, sink, file_offset, size);
  return size;
}

std::future<std::size_t> RemoteHandle::pread(void* buf,
                                             std::size_t size,
                                             std::size_t file_offset,
                                             std::size_t task_size,
                                             ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE();
  KVIKIO_EXPECT(file_offset <= nbytes_ && size <= nbytes_ - file_offset,
                "RemoteHandle::pread: " + std::to_string(size) + " bytes at offset " +
                  std::to_string(file_offset) + " run past the end of " + endpoint_->str() + " (" +
                  std::to_string(nbytes_) + " bytes)",
                std::invalid_argument);
  KVIKIO_EXPECT(
    buf != nullptr || size == 0, "RemoteHandle::pread: null buffer", std::invalid_argument);
  auto* const bytes = static_cast<std::byte*>(buf);
  return parallel_io(
    [this, bytes](std::size_t buf_offset, std::size_t n, std::size_t offset) {
      return read(bytes + buf_offset, n, offset);
    },
    size,
    file_offset,
    task_size,
    thread_pool);
}

}  // namespace kvikio
