/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/statistics/counters.hpp>

#include <atomic>
#include <iomanip>
#include <locale>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <kvikio/detail/string_utils.hpp>

namespace kvikio {
namespace {

// The totals, in an anonymous namespace so that two copies of the library in one process count
// apart. Each is a sum read on its own, so relaxed order is enough.
struct Totals {
  std::atomic<std::uint64_t> remote_size_probes{0};
  std::atomic<std::int64_t> remote_size_probing_ns{0};
  std::atomic<std::uint64_t> http_connections{0};
  std::atomic<std::int64_t> http_dns_ns{0};
  std::atomic<std::int64_t> http_tcp_ns{0};
  std::atomic<std::int64_t> http_tls_ns{0};
  std::atomic<std::uint64_t> http_retries{0};
  std::atomic<std::int64_t> http_retry_backoff_ns{0};
};

Totals& totals() noexcept
{
  static auto* const instance = new Totals();  // never destroyed: I/O may run during exit
  return *instance;
}

template <typename T>
void add(std::atomic<T>& total, T amount) noexcept
{
  total.fetch_add(amount, std::memory_order_relaxed);
}

template <typename T>
T load(std::atomic<T> const& total) noexcept
{
  return total.load(std::memory_order_relaxed);
}

// `later - earlier`, zero where the earlier reading is larger (a reading of another span).
std::uint64_t difference(std::uint64_t later, std::uint64_t earlier) noexcept
{
  return later > earlier ? later - earlier : 0;
}

Duration difference(Duration later, Duration earlier) noexcept
{
  return later > earlier ? later - earlier : Duration::zero();
}

// "  <label padded to 21>", the start of every report row.
std::ostream& row(std::ostream& out, std::string_view label)
{
  return out << "  " << std::left << std::setw(21) << label << std::right;
}

}  // namespace

namespace statistics {

static_assert(std::is_trivially_copyable_v<Counters>);
static_assert(sizeof(Counters) == 8 * sizeof(std::uint64_t), "Counters is eight 8-byte words");

Counters Counters::since(Counters const& previous) const noexcept
{
  Counters out;
  out.remote_size_probes  = difference(remote_size_probes, previous.remote_size_probes);
  out.remote_size_probing = difference(remote_size_probing, previous.remote_size_probing);
  out.http_connections    = difference(http_connections, previous.http_connections);
  out.http_dns            = difference(http_dns, previous.http_dns);
  out.http_tcp            = difference(http_tcp, previous.http_tcp);
  out.http_tls            = difference(http_tls, previous.http_tls);
  out.http_retries        = difference(http_retries, previous.http_retries);
  out.http_retry_backoff  = difference(http_retry_backoff, previous.http_retry_backoff);
  return out;
}

bool Counters::empty() const noexcept
{
  return remote_size_probes == 0 && remote_size_probing == Duration::zero() &&
         http_connections == 0 && http_dns == Duration::zero() && http_tcp == Duration::zero() &&
         http_tls == Duration::zero() && http_retries == 0 &&
         http_retry_backoff == Duration::zero();
}

std::string Counters::to_json() const
{
  std::ostringstream out;
  out.imbue(std::locale::classic());  // a number in JSON has no grouping and a '.' point
  out << "{\"remote_size_probes\": " << remote_size_probes
      << ", \"remote_size_probing_ns\": " << remote_size_probing.count()
      << ", \"http_connections\": " << http_connections << ", \"http_dns_ns\": " << http_dns.count()
      << ", \"http_tcp_ns\": " << http_tcp.count() << ", \"http_tls_ns\": " << http_tls.count()
      << ", \"http_retries\": " << http_retries
      << ", \"http_retry_backoff_ns\": " << http_retry_backoff.count() << "}";
  return out.str();
}

std::string Counters::report(ReportRows rows) const
{
  if (rows != ReportRows::ALL && empty()) { return {}; }
  using detail::format_duration;
  std::ostringstream out;
  row(out, "http size probes") << remote_size_probes << " probes, "
                               << format_duration(remote_size_probing) << "\n";
  row(out, "http handshake") << http_connections << " connections, " << format_duration(http_dns)
                             << " dns, " << format_duration(http_tcp) << " tcp, "
                             << format_duration(http_tls) << " tls\n";
  row(out, "http retries") << http_retries << " retries, " << format_duration(http_retry_backoff)
                           << " backoff\n";
  return out.str();
}

Counters counters() noexcept
{
  auto const& t = totals();
  Counters out;
  out.remote_size_probes  = load(t.remote_size_probes);
  out.remote_size_probing = Duration{load(t.remote_size_probing_ns)};
  out.http_connections    = load(t.http_connections);
  out.http_dns            = Duration{load(t.http_dns_ns)};
  out.http_tcp            = Duration{load(t.http_tcp_ns)};
  out.http_tls            = Duration{load(t.http_tls_ns)};
  out.http_retries        = load(t.http_retries);
  out.http_retry_backoff  = Duration{load(t.http_retry_backoff_ns)};
  return out;
}

}  // namespace statistics

namespace detail {

void count_remote_size_probe(Duration probing) noexcept
{
  auto& t = totals();
  add(t.remote_size_probes, std::uint64_t{1});
  add(t.remote_size_probing_ns, std::int64_t{probing.count()});
}

void count_http_connection(std::uint64_t connections,
                           Duration dns,
                           Duration tcp,
                           Duration tls) noexcept
{
  auto& t = totals();
  add(t.http_connections, connections);
  add(t.http_dns_ns, std::int64_t{dns.count()});
  add(t.http_tcp_ns, std::int64_t{tcp.count()});
  add(t.http_tls_ns, std::int64_t{tls.count()});
}

void count_http_retry(Duration backoff) noexcept
{
  auto& t = totals();
  add(t.http_retries, std::uint64_t{1});
  add(t.http_retry_backoff_ns, std::int64_t{backoff.count()});
}

}  // namespace detail
}  // namespace kvikio
