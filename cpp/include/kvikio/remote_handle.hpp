/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file remote_handle.hpp
 * @brief Remote objects (HTTP, S3, presigned URLs, WebHDFS) read into host or device memory:
 * their endpoints, RemoteHandle, and batch reads of many ranges (remote_batch_read()).
 */

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <kvikio/batch_read.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/curl.hpp>
#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/error.hpp>
#include <kvikio/stream.hpp>
#include <kvikio/threadpool_wrapper.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

class RemoteEndpoint;
class RemoteHandle;

/// @brief One range of a remote batch read: `size` bytes at `file_offset` of `handle`'s object
/// into `buf` (host or device memory).
struct RemoteReadRequest {
  RemoteHandle* handle{nullptr};  ///< not owned; must outlive the request's future
  void* buf{nullptr};             ///< not owned; must outlive the request's future
  std::size_t size{0};            ///< bytes to read
  std::size_t file_offset{0};     ///< where the range starts in the object
};

/**
 * @brief Reads every request, of one or several handles, into host or device memory (several
 * CUDA contexts allowed); returns one future per request, in `requests`' order, each holding
 * the request's size or its error. Nearby requests of the same handle and the same destination
 * kind merge into one ranged GET as `options` allows (batch_read.hpp); a merged GET is one task
 * of `options.thread_pool`, and a request read by itself is its handle's pread(). Nothing
 * starts before every request is checked.
 * @throws std::invalid_argument naming the request's index for a null handle, a null buffer or
 * a range past the end of its object, or for a `task_size` of 0; std::runtime_error for a
 * moved-from handle.
 */
std::vector<std::future<std::size_t>> remote_batch_read(std::span<RemoteReadRequest const> requests,
                                                        BatchReadOptions const& options = {});

namespace detail {
class InFlight;
/// @brief The size a HEAD request to `endpoint` reports; records the answer's ETag on the
/// endpoint (RemoteEndpoint::entity_tag()). @throws std::runtime_error
std::size_t head_content_length(RemoteEndpoint& endpoint);
/// @brief Whether `url` is an http(s) URL of AWS S3 naming an object. Never throws.
bool is_aws_s3_http_url(std::string const& url) noexcept;
}  // namespace detail

/**
 * @brief The kind of a RemoteEndpoint, and what RemoteHandle::open() is asked to make of a URL.
 *
 * - `AUTO`: RemoteHandle::open() tries the allowed types in order (see there).
 * - `S3`: S3Endpoint (signed requests; an `s3://bucket/object` URL or an http(s) URL).
 * - `S3_PUBLIC`: S3PublicEndpoint (unsigned requests).
 * - `S3_PRESIGNED_URL`: S3EndpointWithPresignedUrl.
 * - `WEBHDFS`: WebHdfsEndpoint.
 * - `HTTP`: HttpEndpoint.
 */
enum class RemoteEndpointType : uint8_t { AUTO, S3, S3_PUBLIC, S3_PRESIGNED_URL, WEBHDFS, HTTP };

namespace detail {
/// @brief `type`'s `is_url_valid(url)` (false for AUTO). Never throws.
bool is_url_valid_for(RemoteEndpointType type, std::string const& url) noexcept;
}  // namespace detail

/**
 * @brief Where an object lives: how to configure a request for it and how to learn its size.
 */
class RemoteEndpoint {
 protected:
  /// @brief The kind of endpoint, as given to the constructor.
  RemoteEndpointType _remote_endpoint_type{RemoteEndpointType::AUTO};
  /// @brief For subclasses: records the kind of endpoint they are.
  explicit RemoteEndpoint(RemoteEndpointType type) noexcept : _remote_endpoint_type{type} {}

 public:
  virtual ~RemoteEndpoint() = default;
  /// @brief Sets the URL and whatever else every request needs (authentication...).
  virtual void setopt(CurlHandle& curl) = 0;
  /// @brief A description for messages (the URL, without secrets).
  [[nodiscard]] virtual std::string str() const = 0;
  /// @brief The object's size in bytes (one request). @throws std::runtime_error
  virtual std::size_t get_file_size() = 0;
  /// @brief Asks for `size` bytes at `file_offset` (size > 0).
  virtual void setup_range_request(CurlHandle& curl, std::size_t file_offset, std::size_t size);
  /// @brief The kind of endpoint, as given to the constructor.
  [[nodiscard]] RemoteEndpointType remote_endpoint_type() const noexcept
  {
    return _remote_endpoint_type;
  }
  /// @brief The entity tag (ETag) the server sent with the size at get_file_size(), or "" (not
  /// asked yet, or none sent). A RemoteHandle opened without a size refuses every answer that
  /// carries another tag: the object was replaced since the open.
  [[nodiscard]] std::string const& entity_tag() const noexcept { return entity_tag_; }

 protected:
  /// @brief For get_file_size(): the ETag of the size answer (see entity_tag()).
  void set_entity_tag(std::string tag) noexcept { entity_tag_ = std::move(tag); }

 private:
  friend std::size_t detail::head_content_length(RemoteEndpoint& endpoint);
  std::string entity_tag_;
};

/// @brief A plain HTTP or HTTPS URL that supports range requests.
class HttpEndpoint : public RemoteEndpoint {
 public:
  /// @throws std::invalid_argument if `url` is not a valid http(s) URL.
  explicit HttpEndpoint(std::string url);
  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// @brief Whether `url` is a valid http:// or https:// URL. Never throws.
  static bool is_url_valid(std::string const& url) noexcept;

 private:
  std::string url_;
};

/**
 * @brief An S3 object, requests signed with AWS SigV4 (by libcurl).
 *
 * Region and credentials not given fall back to `AWS_DEFAULT_REGION`, `AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` (the token is optional).
 */
class S3Endpoint : public RemoteEndpoint {
 public:
  /**
   * @param url the object's http(s) URL.
   * @param aws_region the region to sign for; if std::nullopt, `AWS_DEFAULT_REGION` (required).
   * @param aws_access_key the access key id; if std::nullopt, `AWS_ACCESS_KEY_ID` (required).
   * @param aws_secret_access_key the secret access key; if std::nullopt, `AWS_SECRET_ACCESS_KEY`
   * (required).
   * @param aws_session_token a session token, sent as `x-amz-security-token`; if std::nullopt,
   * `AWS_SESSION_TOKEN`, and none is sent when that is unset or empty.
   * @throws std::invalid_argument for a bad URL or a missing region or credential (naming the
   * environment variable to set).
   */
  explicit S3Endpoint(std::string url,
                      std::optional<std::string> aws_region            = std::nullopt,
                      std::optional<std::string> aws_access_key        = std::nullopt,
                      std::optional<std::string> aws_secret_access_key = std::nullopt,
                      std::optional<std::string> aws_session_token     = std::nullopt);
  /// @brief `endpoint_url` falls back to `AWS_ENDPOINT_URL`; see url_from_bucket_and_object().
  S3Endpoint(std::pair<std::string, std::string> bucket_and_object_names,
             std::optional<std::string> aws_region            = std::nullopt,
             std::optional<std::string> aws_access_key        = std::nullopt,
             std::optional<std::string> aws_secret_access_key = std::nullopt,
             std::optional<std::string> aws_endpoint_url      = std::nullopt,
             std::optional<std::string> aws_session_token     = std::nullopt);

  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;

  /**
   * @brief `<endpoint_url>/<bucket>/<object>` with an endpoint URL (argument or
   * `AWS_ENDPOINT_URL`), else `https://<bucket>.s3.<region>.amazonaws.com/<object>`.
   * @throws std::invalid_argument if a region is needed and neither given nor in the environment.
   */
  static std::string url_from_bucket_and_object(
    std::string bucket_name,
    std::string object_name,
    std::optional<std::string> aws_region       = std::nullopt,
    std::optional<std::string> aws_endpoint_url = std::nullopt);
  /// @brief ("bucket", "object") of "s3://bucket/object". @throws std::invalid_argument
  static std::pair<std::string, std::string> parse_s3_url(std::string const& s3_url);
  /**
   * @brief Whether `url` is an s3://bucket/object URL, or an AWS S3 http(s) URL (virtual-host or
   * path style, regional or global, `.amazonaws.com`) that is not presigned. Never throws.
   *
   * RemoteHandle::open() with an explicit S3 type also takes any http(s) URL with a path (an
   * S3-compatible server such as MinIO); AUTO uses this test.
   */
  static bool is_url_valid(std::string const& url) noexcept;

 private:
  std::string url_;
  std::string region_;
  std::string access_key_;
  std::string secret_;
  std::optional<std::string> session_token_;
};

/// @brief A public S3 object: plain unsigned GETs.
class S3PublicEndpoint : public RemoteEndpoint {
 public:
  /// @throws std::invalid_argument if `url` is not a valid http(s) URL.
  explicit S3PublicEndpoint(std::string url);
  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// @brief As S3Endpoint::is_url_valid(). Never throws.
  static bool is_url_valid(std::string const& url) noexcept;

 private:
  std::string url_;
};

/**
 * @brief A presigned S3 URL: the signature is in the query, so requests need no credentials.
 * The size comes from a `Range: bytes=0-0` GET (a presigned URL is usually signed for GET only).
 */
class S3EndpointWithPresignedUrl : public RemoteEndpoint {
 public:
  /// @throws std::invalid_argument if `presigned_url` is not a valid presigned http(s) URL.
  explicit S3EndpointWithPresignedUrl(std::string presigned_url);
  void setopt(CurlHandle& curl) override;
  [[nodiscard]] std::string str() const override;
  std::size_t get_file_size() override;
  /// @brief An http(s) URL whose query holds `X-Amz-Signature`. Never throws.
  static bool is_url_valid(std::string const& url) noexcept;

 private:
  std::string url_;
};

/**
 * @brief The endpoint type a URL looks like, in RemoteHandle::open()'s AUTO order: s3:// and
 * AWS S3 http(s) URLs -> S3, presigned S3 URLs -> S3_PRESIGNED_URL, `/webhdfs/v1/` paths ->
 * WEBHDFS, other http(s) URLs -> HTTP. Never S3_PUBLIC (telling it from S3 takes a request).
 * @throws std::runtime_error for a URL of no supported type ("Unsupported endpoint URL.").
 */
RemoteEndpointType infer_remote_endpoint_type(std::string const& url);

/**
 * @brief A remote object. Move-only; its read methods are safe to call from many threads.
 */
class RemoteHandle {
 public:
  /**
   * @brief Opens `url` as `type`, which must be in `allow_list`.
   *
   * The allow list defaults to S3, S3_PUBLIC, S3_PRESIGNED_URL, WEBHDFS, HTTP. With AUTO the
   * allowed types are tried in the list's order and the first whose `is_url_valid()` accepts the
   * URL is taken; an S3 endpoint is then checked with a size request, and if that (or finding
   * credentials) fails while S3_PUBLIC is allowed, the object is opened as S3_PUBLIC instead. An
   * explicit S3 or S3_PUBLIC also takes any http(s) URL with a path (an S3-compatible server).
   * The size is asked once, unless `nbytes` gives it.
   * @throws std::runtime_error "Unsupported endpoint URL." if no allowed type fits (AUTO), "<type>
   * is not in the allowlist.", "Invalid URL for <type> endpoint", or if the size request fails;
   * std::invalid_argument for missing credentials or a bad s3:// URL.
   */
  static RemoteHandle open(std::string const& url,
                           RemoteEndpointType type = RemoteEndpointType::AUTO,
                           std::optional<std::vector<RemoteEndpointType>> allow_list = std::nullopt,
                           std::optional<std::size_t> nbytes = std::nullopt);

  /**
   * @brief Takes ownership of `endpoint`, whose object is `nbytes` bytes long (not checked).
   * @throws std::invalid_argument if `endpoint` is null.
   */
  RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint, std::size_t nbytes);
  /**
   * @brief Takes ownership of `endpoint` and asks it for the object's size (one request).
   * @throws std::invalid_argument if `endpoint` is null.
   * @throws std::runtime_error if the size request fails.
   */
  explicit RemoteHandle(std::unique_ptr<RemoteEndpoint> endpoint);
  /**
   * @fn RemoteHandle::RemoteHandle(RemoteHandle&&)
   * @brief Takes over the endpoint of another handle, which is left without one: only destroy
   * it or assign to it.
   */
  /**
   * @fn RemoteHandle::operator=(RemoteHandle&&)
   * @brief Takes over the endpoint of another handle, which is left without one; the endpoint
   * this handle held is destroyed.
   */
  /// @brief Takes over `o`'s endpoint; reads running on `o` keep theirs.
  RemoteHandle(RemoteHandle&& o) noexcept;
  /// @brief Waits for this handle's reads still running (as the destructor), then takes `o`'s.
  RemoteHandle& operator=(RemoteHandle&& o) noexcept;
  /**
   * @brief Waits for every read still using the endpoint (on other threads, behind futures
   * not yet ready, stream-ordered ones the stream has not run yet), then frees it.
   */
  ~RemoteHandle() noexcept;
  RemoteHandle(RemoteHandle const&)            = delete;
  RemoteHandle& operator=(RemoteHandle const&) = delete;

  /// @brief The object's size in bytes.
  [[nodiscard]] std::size_t nbytes() const noexcept { return nbytes_; }
  /// @brief The endpoint, owned by this handle.
  [[nodiscard]] RemoteEndpoint const& endpoint() const noexcept { return *endpoint_; }
  /// @brief The endpoint's type.
  [[nodiscard]] RemoteEndpointType remote_endpoint_type() const noexcept
  {
    return endpoint_->remote_endpoint_type();
  }

  /**
   * @brief Chooses the transport of this handle's reads: `backend`, or (std::nullopt, the
   * default) the `KVIKIO_REMOTE_BACKEND` setting as it is at each read. Not to be called while
   * reads of this handle are running.
   */
  void set_remote_backend(std::optional<RemoteBackendType> backend) noexcept
  {
    backend_ = backend ? static_cast<int>(*backend) : -1;
  }
  /// @brief The transport chosen by set_remote_backend(), if any.
  [[nodiscard]] std::optional<RemoteBackendType> remote_backend() const noexcept
  {
    int const backend = backend_;
    if (backend < 0) { return std::nullopt; }
    return static_cast<RemoteBackendType>(backend);
  }

  /**
   * @brief Reads `size` bytes at `file_offset` into `buf` (host or device memory) with one
   * request: on the calling thread (easy transport) or on a reactor (multi-poll).
   * @throws std::invalid_argument if the range is past the end; std::overflow_error if the
   * server sends more than asked (it may not support ranges); std::runtime_error otherwise.
   */
  std::size_t read(void* buf, std::size_t size, std::size_t file_offset = 0);

  /**
   * @brief read() in parallel tasks of `task_size`: on `thread_pool` (easy transport), or on
   * the multi-poll reactors, which use no thread of `thread_pool`.
   */
  std::future<std::size_t> pread(void* buf,
                                 std::size_t size,
                                 std::size_t file_offset = 0,
                                 std::size_t task_size   = defaults::task_size(),
                                 ThreadPool* thread_pool = &defaults::thread_pool());

  /**
   * @brief Reads `size` bytes at `file_offset` into device memory `devPtr` in the order of
   * `stream`, without blocking the caller: the bytes land after the stream's earlier work and
   * before its later work. The requests run on the default thread pool (each one as read()
   * makes it, with this handle's transport), staged through the stream's ring of pinned slots,
   * as FileHandle::read_async. The handle must outlive the operation (until the future is done
   * or the stream has passed it).
   * @return a future whose check_bytes_done() synchronises the stream and returns `size`, or
   * throws the first request's error.
   * @throws std::invalid_argument if the range is past the end or `devPtr` is not device memory;
   * kvikio::CUfileException if enqueuing on the stream fails.
   */
  StreamFuture read_async(void* devPtr, std::size_t size, std::size_t file_offset, CUstream stream);

  /**
   * @brief remote_batch_read() of `ranges` of this object: one future per range, in order.
   */
  std::vector<std::future<std::size_t>> batch_read(std::span<ReadRange const> ranges,
                                                   BatchReadOptions const& options = {});

 private:
  friend std::vector<std::future<std::size_t>> remote_batch_read(
    std::span<RemoteReadRequest const> requests, BatchReadOptions const& options);
  [[nodiscard]] RemoteBackendType backend() const;
  /// @throws std::invalid_argument naming `what` if the range runs past the end.
  void check_in_range(char const* what, std::size_t size, std::size_t offset) const;
  // A lease on the endpoint for one read (detail/in_flight.hpp). @throws std::runtime_error
  // for a moved-from handle.
  [[nodiscard]] std::shared_ptr<void> enter(char const* what) const;
  // One read's observation (observation.hpp), or null when no monitor is registered.
  [[nodiscard]] std::shared_ptr<detail::LogicalObservationRecorder> observe(bool device,
                                                                            std::size_t file_offset,
                                                                            std::size_t size) const;
  std::unique_ptr<RemoteEndpoint> endpoint_;
  std::size_t nbytes_;
  // nbytes_ as the server gave it at the open, or 0 where the caller gave the size: every range
  // answer must name this object size (detail::RangeRequest).
  std::size_t served_size_{0};
  // set_remote_backend()'s choice, -1 for none; atomic: reads on other threads read it.
  std::atomic<int> backend_{-1};
  // The leases of running reads on the endpoint; null only in a moved-from handle.
  std::unique_ptr<detail::InFlight> in_flight_;
  // The URL observations name (observation.hpp): shared, so that it outlives an observation.
  std::shared_ptr<std::string const> source_;
};

}  // namespace kvikio
