/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/curl.hpp>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/env.hpp>

namespace kvikio {
namespace {

// Easy handles keep their connections: reusing them avoids a TCP (and TLS) handshake per chunk.
class EasyHandlePool {
 public:
  static EasyHandlePool& instance()
  {
    static auto* const pool = new EasyHandlePool();  // never destroyed: used until exit
    return *pool;
  }
  CURL* get()
  {
    {
      std::lock_guard const lock{mutex_};
      if (!free_.empty()) {
        CURL* h = free_.back();
        free_.pop_back();
        return h;
      }
    }
    CURL* h = curl_easy_init();
    if (h == nullptr) { throw std::runtime_error("KvikIO: curl_easy_init failed"); }
    return h;
  }
  void put(CURL* h) noexcept
  {
    curl_easy_reset(h);  // options back to defaults; connections and caches stay
    std::lock_guard const lock{mutex_};
    try {
      free_.push_back(h);
    } catch (...) {
      curl_easy_cleanup(h);
    }
  }

 private:
  EasyHandlePool()
  {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw std::runtime_error("KvikIO: curl_global_init failed");
    }
  }
  std::mutex mutex_;
  std::vector<CURL*> free_;
};

}  // namespace

CurlHandle::CurlHandle() : handle_{EasyHandlePool::instance().get()}
{
  setopt(CURLOPT_ERRORBUFFER, error_);
  setopt(CURLOPT_NOSIGNAL, 1L);
  setopt(CURLOPT_FOLLOWLOCATION, 1L);
  setopt(CURLOPT_TIMEOUT, defaults::http_timeout());
  // CA bundle discovery, in libcurl's usual order of environment variables.
  if (auto bundle = detail::getenv_trimmed("CURL_CA_BUNDLE")) {
    setopt(CURLOPT_CAINFO, bundle->c_str());
  } else if (auto file = detail::getenv_trimmed("SSL_CERT_FILE")) {
    setopt(CURLOPT_CAINFO, file->c_str());
  } else if (auto dir = detail::getenv_trimmed("SSL_CERT_DIR")) {
    setopt(CURLOPT_CAPATH, dir->c_str());
  }
  if (detail::getenv_trimmed("KVIKIO_REMOTE_VERBOSE")) { setopt(CURLOPT_VERBOSE, 1L); }
}

CurlHandle::~CurlHandle() noexcept
{
  EasyHandlePool::instance().put(handle_);  // resets the options first: the list is unused now
  curl_slist_free_all(headers_);
}

void CurlHandle::append_header(std::string const& header)
{
  curl_slist* const list = curl_slist_append(headers_, header.c_str());
  if (list == nullptr) { throw std::runtime_error("KvikIO: curl_slist_append failed"); }
  headers_ = list;
  setopt(CURLOPT_HTTPHEADER, headers_);
}

CURLcode CurlHandle::perform() noexcept
{
  error_[0] = '\0';
  return curl_easy_perform(handle_);
}

long CurlHandle::status() const noexcept
{
  long code = 0;
  curl_easy_getinfo(handle_, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

std::string CurlHandle::error_message(CURLcode code) const
{
  return std::string{curl_easy_strerror(code)} +
         (error_[0] != '\0' ? std::string{": "} + error_ : std::string{});
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
