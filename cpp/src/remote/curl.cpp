/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/curl.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/env.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/statistics/counters.hpp>

#include "remote/message_redaction.hpp"
#include "remote/request_fields.hpp"
#include "remote/retry_rule.hpp"

namespace kvikio {

LibCurl::LibCurl()
{
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    throw std::runtime_error("KvikIO: curl_global_init failed");
  }
}

namespace {
std::atomic<LibCurl*> built_instance{nullptr};  // once built, for the fork handlers
LibCurl* locked_for_fork{nullptr};              // the one whose lock the forking thread took
}  // namespace

// Around fork() the lock is held, so the child finds the list whole. The child leaves the idle
// handles alone: their connections are the parent's sockets, and a request or a cleanup (a TLS
// close) on them would speak into the parent's conversations.
int const LibCurl::fork_handlers_registered = ::pthread_atfork(
  [] {
    locked_for_fork = built_instance.load();
    if (locked_for_fork != nullptr) { locked_for_fork->mutex_.lock(); }
  },
  [] {
    if (locked_for_fork != nullptr) { locked_for_fork->mutex_.unlock(); }
  },
  [] {
    if (locked_for_fork == nullptr) { return; }
    for (auto& handle : locked_for_fork->free_) {
      (void)handle.release();
    }
    locked_for_fork->free_.clear();
    locked_for_fork->mutex_.unlock();
  });

LibCurl& LibCurl::instance()
{
  static detail::BuiltOnce<LibCurl> pool;  // never destroyed: handles are used until exit
  return pool.get([] { return built_instance = new LibCurl(); });
}

LibCurl::UniqueHandlePtr LibCurl::get_free_handle()
{
  std::lock_guard const lock{mutex_};
  if (free_.empty()) { return UniqueHandlePtr{nullptr, curl_easy_cleanup}; }
  UniqueHandlePtr handle = std::move(free_.back());
  free_.pop_back();
  return handle;
}

LibCurl::UniqueHandlePtr LibCurl::get_handle()
{
  if (auto handle = get_free_handle()) { return handle; }
  UniqueHandlePtr handle{curl_easy_init(), curl_easy_cleanup};
  if (!handle) { throw std::runtime_error("KvikIO: curl_easy_init failed"); }
  return handle;
}

void LibCurl::retain_handle(UniqueHandlePtr handle)
{
  if (!handle) { return; }
  curl_easy_reset(handle.get());  // options back to defaults; connections and caches stay
  std::lock_guard const lock{mutex_};
  free_.push_back(std::move(handle));  // on bad_alloc the handle is cleaned up instead
}

std::size_t LibCurl::release_idle_handles()
{
  std::vector<UniqueHandlePtr> idle;
  {
    std::lock_guard const lock{mutex_};
    idle.swap(free_);
  }
  return idle.size();  // freed here, outside the lock: closing a TLS connection speaks to its peer
}

namespace {

// libcurl's verbose trace on stderr, as its own would print it, but redacted: the headers sent
// hold the Authorization signature and the session token, a request line a presigned query.
int verbose_trace(CURL*, curl_infotype type, char* data, std::size_t size, void*) noexcept
{
  char const* prefix = type == CURLINFO_TEXT         ? "* "
                       : type == CURLINFO_HEADER_IN  ? "< "
                       : type == CURLINFO_HEADER_OUT ? "> "
                                                     : nullptr;
  if (prefix == nullptr) { return 0; }  // bodies and TLS records are not traced
  try {
    std::string_view text{data, size};
    while (!text.empty()) {
      auto const end = text.find('\n');
      std::string line{prefix};
      line.append(detail::redact(text.substr(0, end))).append("\n");
      std::fputs(line.c_str(), stderr);
      text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    }
  } catch (...) {
  }
  return 0;
}

}  // namespace

CurlHandle::CurlHandle() : CurlHandle(LibCurl::instance().get_handle(), {}, {}) {}

CurlHandle::CurlHandle(LibCurl::UniqueHandlePtr handle,
                       std::string source_file,
                       std::string source_line)
  : handle_{std::move(handle)},
    source_{source_file.empty() ? std::string{} : std::move(source_file) + ":" + source_line}
{
  if (!handle_) { throw std::invalid_argument("CurlHandle: the easy handle is null"); }
  setopt(CURLOPT_ERRORBUFFER, error_);
  setopt(CURLOPT_NOSIGNAL, 1L);
  setopt(CURLOPT_FOLLOWLOCATION, 1L);
  // A redirect loop ends as "Number of redirects hit maximum amount", not after thousands of
  // requests (libcurl's default has no limit).
  setopt(CURLOPT_MAXREDIRS, 10L);
  setopt(CURLOPT_TIMEOUT, defaults::http_timeout());
  // CA bundle discovery, in libcurl's usual order of environment variables.
  if (auto bundle = detail::getenv_trimmed("CURL_CA_BUNDLE")) {
    setopt(CURLOPT_CAINFO, bundle->c_str());
  } else if (auto file = detail::getenv_trimmed("SSL_CERT_FILE")) {
    setopt(CURLOPT_CAINFO, file->c_str());
  } else if (auto dir = detail::getenv_trimmed("SSL_CERT_DIR")) {
    setopt(CURLOPT_CAPATH, dir->c_str());
  }
  if (detail::getenv_trimmed("KVIKIO_REMOTE_VERBOSE")) {
    setopt(CURLOPT_DEBUGFUNCTION, &verbose_trace);
    setopt(CURLOPT_VERBOSE, 1L);
  }
}

CurlHandle::~CurlHandle() noexcept
{
  try {
    // Resets the options first, so the header list is unused once it is freed.
    LibCurl::instance().retain_handle(std::move(handle_));
  } catch (...) {  // cannot pool it (out of memory): handle_'s deleter frees it
  }
  curl_slist_free_all(headers_);
}

void CurlHandle::append_header(std::string const& header)
{
  detail::check_header_value("a request header", header);
  curl_slist* const list = curl_slist_append(headers_, header.c_str());
  if (list == nullptr) { throw std::runtime_error("KvikIO: curl_slist_append failed"); }
  headers_ = list;
  setopt(CURLOPT_HTTPHEADER, headers_);
}

CURLcode CurlHandle::try_perform() noexcept
{
  error_[0] = '\0';
  return curl_easy_perform(handle_.get());
}

void CurlHandle::perform() { perform({}); }

void CurlHandle::perform(std::function<void()> const& on_retry)
{
  bool first                = true;
  std::string const request = source_.empty() ? "a transfer" : "the transfer of " + source_;
  CURLcode const code       = detail::perform_retrying(*this, request, [&] {
    if (!first && on_retry) { on_retry(); }
    first = false;
  });
  if (code != CURLE_OK) {
    throw std::runtime_error(
      "curl_easy_perform() error (" + error_message(code) + ")" +
      (source_.empty() ? std::string{} : " [KvikIO: handle of " + source_ + "]"));
  }
}

void detail::count_http_connection_of(void* curl_easy_handle) noexcept
{
  auto* const easy = static_cast<CURL*>(curl_easy_handle);
  long connects    = 0;
  if (curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects) != CURLE_OK || connects <= 0) {
    return;  // the transfer reused a connection: no handshake to count
  }
  auto const reading = [&](CURLINFO info) -> curl_off_t {  // microseconds
    curl_off_t value = 0;
    return curl_easy_getinfo(easy, info, &value) == CURLE_OK && value > 0 ? value : 0;
  };
  curl_off_t const dns = reading(CURLINFO_NAMELOOKUP_TIME_T);
  curl_off_t const tcp = reading(CURLINFO_CONNECT_TIME_T);
  curl_off_t const tls = reading(CURLINFO_APPCONNECT_TIME_T);
  using std::chrono::microseconds;
  count_http_connection(static_cast<std::uint64_t>(connects),
                        microseconds{dns},
                        microseconds{tcp > dns ? tcp - dns : 0},
                        microseconds{tls > tcp ? tls - tcp : 0});
}

std::string CurlHandle::error_message() const { return std::string{error_}; }

void CurlHandle::clear_error_message() noexcept { error_[0] = '\0'; }

long CurlHandle::status() const noexcept
{
  long code = 0;
  curl_easy_getinfo(handle_.get(), CURLINFO_RESPONSE_CODE, &code);
  return code;
}

std::string CurlHandle::error_message(CURLcode code) const
{
  std::string message = std::string{curl_easy_strerror(code)} +
                        (error_[0] != '\0' ? std::string{": "} + error_ : std::string{});
  if (int const error = descriptor_shortage(code); error != 0) {
    // libcurl names the connect, not the socket() that failed for want of a descriptor.
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    message += " (no socket: " + std::string{std::strerror(error)} +
               (error == EMFILE ? "; this process may open " + std::to_string(limit.rlim_cur) +
                                    " files (RLIMIT_NOFILE, ulimit -n)"
                                : std::string{"; the system's limit of open files"}) +
               ")";
  }
  return message;
}

int CurlHandle::descriptor_shortage(CURLcode code) const noexcept
{
  if (code != CURLE_COULDNT_CONNECT) { return 0; }
  long error = 0;
  curl_easy_getinfo(handle_.get(), CURLINFO_OS_ERRNO, &error);
  if (error == EMFILE || error == ENFILE) { return static_cast<int>(error); }
  int const probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (probe >= 0) {
    ::close(probe);
    return 0;
  }
  return errno == EMFILE || errno == ENFILE ? errno : 0;
}

void CurlHandle::check_setopt(CURLcode code, CURLoption option) const
{
  if (code != CURLE_OK) {
    throw std::runtime_error(std::string{"curl_easy_setopt() error ("} + curl_easy_strerror(code) +
                             ") [KvikIO: option " + std::to_string(static_cast<int>(option)) + "]");
  }
}

void CurlHandle::check_getinfo(CURLcode code)
{
  if (code != CURLE_OK) {
    throw std::runtime_error(std::string{"curl_easy_getinfo() error ("} + curl_easy_strerror(code) +
                             ")");
  }
}

}  // namespace kvikio
