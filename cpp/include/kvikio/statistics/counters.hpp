/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file statistics/counters.hpp
 * @brief Process-wide totals of I/O costs that belong to no single operation (remote size
 * probes, HTTP connection set-up, HTTP retries), always counted.
 */

#include <cstdint>
#include <string>
#include <utility>

#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/observation.hpp>
#include <kvikio/shim/utils.hpp>

namespace kvikio::statistics {

/// @brief Which rows a report prints.
enum class ReportRows : std::uint8_t {
  USED,  ///< only the backends and counter groups the span used
  ALL    ///< every row, an unused one included
};

/**
 * @brief Costs that an Observation cannot carry, because they are shared between operations or
 * cannot be tied to one: the wait for a remote file's size, the opening of HTTP connections,
 * the retries of refused requests.
 *
 * They are counted from the start of the process whether or not anyone watches; counters()
 * reads them, and the cost of an interval is the difference of two readings (since()).
 */
struct Counters {
  /// Remote sizes asked for (HTTP HEAD, S3 HEAD, WebHDFS GETFILESTATUS): a round trip each.
  std::uint64_t remote_size_probes{};
  /// Time spent waiting for those answers.
  Duration remote_size_probing{};

  /// Connections libcurl opened rather than reused; against the requests made, whether
  /// connections are being reused at all.
  std::uint64_t http_connections{};
  /// Time those connections spent resolving the host name.
  Duration http_dns{};
  /// Time they spent establishing the TCP connection.
  Duration http_tcp{};
  /// Time they spent in the TLS handshake (zero without TLS).
  Duration http_tls{};

  /// Requests refused with a retryable error and tried again (a request retried twice counts
  /// twice); a retry that ends in success is otherwise invisible.
  std::uint64_t http_retries{};
  /// Time spent waiting before those retries.
  Duration http_retry_backoff{};

  /**
   * @brief What was counted between an earlier reading and this one.
   * @param previous an earlier reading.
   * @return each field's difference, zero where `previous` holds more (never wraps).
   */
  [[nodiscard]] Counters since(Counters const& previous) const noexcept;

  /// @brief Whether every field is zero.
  [[nodiscard]] bool empty() const noexcept;

  /**
   * @brief One-line JSON object of every field, durations in nanoseconds: `remote_size_probes`,
   * `remote_size_probing_ns`, `http_connections`, `http_dns_ns`, `http_tcp_ns`, `http_tls_ns`,
   * `http_retries`, `http_retry_backoff_ns`, in this order.
   */
  [[nodiscard]] std::string to_json() const;

  /**
   * @brief Rows for people, one per group:
   * @code
   *   http size probes     12 probes, 600 ms
   *   http handshake       128 connections, 40 ms dns, 900 ms tcp, 1.90 s tls
   *   http retries         7 retries, 1.20 s backoff
   * @endcode
   * @param rows under ReportRows::USED, a reading with nothing counted gives "".
   * @return the rows, each ending in a newline, or "".
   */
  [[nodiscard]] std::string report(ReportRows rows = ReportRows::USED) const;
};

/// @brief The process's totals as they stand now.
[[nodiscard]] Counters counters() noexcept;

}  // namespace kvikio::statistics

namespace kvikio::detail {

/**
 * @brief Hands the time a scope took to `record` when the scope is left, by return or by
 * exception:
 * @code
 * detail::ScopedTimer const timer{detail::count_remote_size_probe};
 * ask_for_the_size();  // counted either way
 * @endcode
 * @tparam Record callable with a Duration (a count_*() function, or a lambda for one that
 * takes more).
 */
template <typename Record>
class ScopedTimer {
 public:
  /// @brief Starts timing; `record` is called once, from the destructor.
  explicit ScopedTimer(Record record) noexcept : record_{std::move(record)}, started_{now()} {}
  ~ScopedTimer() noexcept { record_(now() - started_); }
  ScopedTimer(ScopedTimer const&)            = delete;
  ScopedTimer& operator=(ScopedTimer const&) = delete;

 private:
  Record record_;
  TimePoint started_;
};

/// @brief Counts one remote size query that took `probing`.
void count_remote_size_probe(Duration probing) noexcept;

/**
 * @brief Counts the connection set-up of a finished HTTP transfer.
 * @param connections connections it opened (zero when it reused one).
 * @param dns time resolving the host name.
 * @param tcp time connecting.
 * @param tls time in the TLS handshake (zero without TLS).
 */
void count_http_connection(std::uint64_t connections,
                           Duration dns,
                           Duration tcp,
                           Duration tls) noexcept;

/// @brief Counts one retry of a refused HTTP request, which waits `backoff` first.
void count_http_retry(Duration backoff) noexcept;

/**
 * @brief Counts the connection set-up libcurl reports for an easy handle (a `CURL*`) after a
 * transfer attempt: nothing for a reused connection. Defined in cpp/src/remote/curl.cpp, as
 * only a build with remote I/O has libcurl.
 */
void count_http_connection_of(void* curl_easy_handle) noexcept;

}  // namespace kvikio::detail
