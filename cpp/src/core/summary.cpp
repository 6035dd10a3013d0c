/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/statistics/summary.hpp>

#include <chrono>
#include <cstring>
#include <iomanip>
#include <locale>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include <kvikio/detail/string_utils.hpp>
#include <kvikio/error.hpp>

namespace kvikio::statistics {

// serialize() copies the object's bytes: no padding may carry garbage into them, and the size
// is part of the format.
static_assert(std::is_trivially_copyable_v<Summary>);
static_assert(std::has_unique_object_representations_v<Summary>);
static_assert(sizeof(Summary::BackendTotals) == 32);
static_assert(sizeof(Summary) == 336);

namespace {

constexpr std::array<char, 4> serial_magic{'K', 'V', 'S', 'M'};
// Raised whenever Summary's layout changes.
constexpr std::uint32_t serial_version         = 2;
constexpr std::uint32_t serial_byte_order_mark = 0x01020304;
constexpr std::size_t serial_header_size       = 16;
constexpr std::size_t serial_size              = serial_header_size + sizeof(Summary);

std::uint64_t difference(std::uint64_t later, std::uint64_t earlier) noexcept
{
  return later > earlier ? later - earlier : 0;
}

Duration difference(Duration later, Duration earlier) noexcept
{
  return later > earlier ? later - earlier : Duration::zero();
}

double seconds(Duration duration) noexcept
{
  return std::chrono::duration<double>{duration}.count();
}

void put_u32_le(std::byte* out, std::uint32_t value) noexcept
{
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xFFU);
  }
}

std::uint32_t get_u32_le(std::byte const* in) noexcept
{
  std::uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    value |= std::to_integer<std::uint32_t>(in[i]) << (8 * i);
  }
  return value;
}

std::int64_t unix_ns(ClockAnchor const& anchor, TimePoint time)
{
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           anchor.to_wall_clock(time).time_since_epoch())
    .count();
}

// "  <label padded to 21>", the start of every report row.
std::ostream& row(std::ostream& out, std::string_view label)
{
  return out << "  " << std::left << std::setw(21) << label << std::right;
}

bool did_remote_io(Summary const& summary) noexcept
{
  auto const ops = [&](IoBackend backend) {
    return summary.by_backend[static_cast<std::size_t>(backend)].num_ops;
  };
  return ops(IoBackend::REMOTE_HTTP) != 0 || ops(IoBackend::REMOTE_HDFS) != 0;
}

}  // namespace

Duration Summary::wall() const noexcept
{
  return end > start ? std::chrono::duration_cast<Duration>(end - start) : Duration::zero();
}

double Summary::busy_bytes_per_sec() const noexcept
{
  return busy > Duration::zero() ? static_cast<double>(bytes_transferred) / seconds(busy) : 0.0;
}

double Summary::busy_fraction() const noexcept
{
  auto const span = wall();
  if (span == Duration::zero()) { return 0.0; }
  return static_cast<double>(busy.count()) / static_cast<double>(span.count());
}

Duration Summary::mean_duration() const noexcept
{
  if (num_ops == 0 || total_duration <= Duration::zero()) { return Duration::zero(); }
  // In unsigned arithmetic: a count past the signed range must not turn the division negative.
  return Duration{
    static_cast<Duration::rep>(static_cast<std::uint64_t>(total_duration.count()) / num_ops)};
}

Summary Summary::since(Summary const& previous) const
{
  KVIKIO_EXPECT(previous.start == start && previous.end <= end,
                "`previous` must be an earlier reading of the same span, from `get()` rather "
                "than from `since()`",
                std::invalid_argument);
  Summary out;
  out.start             = previous.end;
  out.end               = end;
  out.anchor            = anchor;
  out.num_ops           = difference(num_ops, previous.num_ops);
  out.num_reads         = difference(num_reads, previous.num_reads);
  out.num_writes        = difference(num_writes, previous.num_writes);
  out.bytes_requested   = difference(bytes_requested, previous.bytes_requested);
  out.bytes_transferred = difference(bytes_transferred, previous.bytes_transferred);
  out.bytes_read        = difference(bytes_read, previous.bytes_read);
  out.bytes_written     = difference(bytes_written, previous.bytes_written);
  out.num_errors        = difference(num_errors, previous.num_errors);
  for (std::size_t i = 0; i < by_backend.size(); ++i) {
    auto const& now        = by_backend[i];
    auto const& before     = previous.by_backend[i];
    auto& part             = out.by_backend[i];
    part.num_ops           = difference(now.num_ops, before.num_ops);
    part.bytes_transferred = difference(now.bytes_transferred, before.bytes_transferred);
    part.total_duration    = difference(now.total_duration, before.total_duration);
    part.num_errors        = difference(now.num_errors, before.num_errors);
  }
  out.counters       = counters.since(previous.counters);
  out.total_duration = difference(total_duration, previous.total_duration);
  out.busy           = difference(busy, previous.busy);
  return out;
}

std::string Summary::to_json() const
{
  std::ostringstream out;
  out.imbue(std::locale::classic());  // a number in JSON has no grouping and a '.' point
  out << "{\"start_unix_ns\": " << unix_ns(anchor, start)
      << ", \"end_unix_ns\": " << unix_ns(anchor, end) << ", \"wall_ns\": " << wall().count()
      << ", \"num_ops\": " << num_ops << ", \"num_reads\": " << num_reads
      << ", \"num_writes\": " << num_writes << ", \"bytes_requested\": " << bytes_requested
      << ", \"bytes_transferred\": " << bytes_transferred << ", \"bytes_read\": " << bytes_read
      << ", \"bytes_written\": " << bytes_written << ", \"num_errors\": " << num_errors
      << ", \"busy_ns\": " << busy.count() << ", \"total_duration_ns\": " << total_duration.count()
      << ", \"busy_bytes_per_sec\": " << busy_bytes_per_sec()
      << ", \"busy_fraction\": " << busy_fraction()
      << ", \"mean_duration_ns\": " << mean_duration().count()
      << ", \"counters\": " << counters.to_json() << ", \"by_backend\": {";
  for (std::size_t i = 0; i < by_backend.size(); ++i) {
    auto const& part = by_backend[i];
    out << (i == 0 ? "" : ", ") << '"' << to_string(static_cast<IoBackend>(i))
        << "\": {\"num_ops\": " << part.num_ops
        << ", \"bytes_transferred\": " << part.bytes_transferred
        << ", \"total_duration_ns\": " << part.total_duration.count()
        << ", \"num_errors\": " << part.num_errors << "}";
  }
  out << "}}";
  return out.str();
}

std::vector<std::byte> Summary::serialize() const
{
  std::vector<std::byte> out(serial_size);
  std::memcpy(out.data(), serial_magic.data(), serial_magic.size());
  put_u32_le(out.data() + 4, serial_version);
  put_u32_le(out.data() + 8, static_cast<std::uint32_t>(sizeof(Summary)));
  // In native order: a reader of the other byte order sees it reversed.
  std::memcpy(out.data() + 12, &serial_byte_order_mark, sizeof(serial_byte_order_mark));
  std::memcpy(out.data() + serial_header_size, this, sizeof(Summary));
  return out;
}

Summary Summary::deserialize(std::vector<std::byte> const& bytes)
{
  KVIKIO_EXPECT(bytes.size() == serial_size,
                "not a serialized kvikio::statistics::Summary: wrong length",
                std::invalid_argument);
  KVIKIO_EXPECT(std::memcmp(bytes.data(), serial_magic.data(), serial_magic.size()) == 0,
                "not a serialized kvikio::statistics::Summary: wrong magic",
                std::invalid_argument);
  auto const version = get_u32_le(bytes.data() + 4);
  auto const size    = get_u32_le(bytes.data() + 8);
  KVIKIO_EXPECT(version == serial_version && size == sizeof(Summary),
                "serialized kvikio::statistics::Summary from a different build of KvikIO, "
                "version " +
                  std::to_string(version) + " of " + std::to_string(size) +
                  " bytes against version " + std::to_string(serial_version) + " of " +
                  std::to_string(sizeof(Summary)),
                std::invalid_argument);
  std::uint32_t mark{};
  std::memcpy(&mark, bytes.data() + 12, sizeof(mark));
  KVIKIO_EXPECT(mark == serial_byte_order_mark,
                "serialized kvikio::statistics::Summary written on a machine of a different "
                "byte order, which this format does not translate",
                std::invalid_argument);
  Summary out;
  std::memcpy(&out, bytes.data() + serial_header_size, sizeof(Summary));
  // The bytes are as any caller handed them: what no monitor can have counted is refused, so
  // that no derived value divides or subtracts its way past a type's range.
  bool consistent = out.end >= out.start && out.total_duration >= Duration::zero() &&
                    out.busy >= Duration::zero() && out.num_reads + out.num_writes == out.num_ops &&
                    out.num_reads <= out.num_ops && out.num_errors <= out.num_ops &&
                    out.bytes_read + out.bytes_written == out.bytes_transferred &&
                    out.bytes_read <= out.bytes_transferred;
  for (auto const& backend : out.by_backend) {
    consistent = consistent && backend.total_duration >= Duration::zero() &&
                 backend.num_ops <= out.num_ops && backend.num_errors <= backend.num_ops;
  }
  for (Duration const d : {out.counters.remote_size_probing,
                           out.counters.http_dns,
                           out.counters.http_tcp,
                           out.counters.http_tls,
                           out.counters.http_retry_backoff}) {
    consistent = consistent && d >= Duration::zero();
  }
  KVIKIO_EXPECT(consistent,
                "not a serialized kvikio::statistics::Summary: inconsistent values",
                std::invalid_argument);
  return out;
}

std::string Summary::report(ReportRows rows) const
{
  using detail::format_duration;
  using detail::format_nbytes;
  using detail::format_rate;
  std::ostringstream percent;  // the global locale, as the rest of the report
  percent << std::fixed << std::setprecision(2) << busy_fraction() * 100.0;

  std::ostringstream out;
  out << "KvikIO I/O summary\n";
  row(out, "wall time") << format_duration(wall()) << "\n";
  row(out, "busy time") << format_duration(busy) << " (" << percent.str()
                        << " % of the wall time)\n";
  row(out, "busy bandwidth") << format_rate(busy_bytes_per_sec()) << "\n";
  row(out, "operations") << num_ops << " (" << num_reads << " read, " << num_writes << " write)\n";
  row(out, "mean duration") << format_duration(mean_duration()) << "\n";
  row(out, "bytes") << format_nbytes(bytes_transferred) << " of " << format_nbytes(bytes_requested)
                    << " requested (" << format_nbytes(bytes_read) << " read, "
                    << format_nbytes(bytes_written) << " written)\n";
  row(out, "errors") << num_errors << "\n";
  for (std::size_t i = 0; i < by_backend.size(); ++i) {
    auto const& part = by_backend[i];
    if (part.num_ops == 0 && rows != ReportRows::ALL) { continue; }
    row(out, "backend " + std::string{to_string(static_cast<IoBackend>(i))});
    if (part.num_ops == 0) {
      out << "unused\n";
      continue;
    }
    out << format_nbytes(part.bytes_transferred) << " in " << part.num_ops << " ops, "
        << format_duration(part.total_duration);
    if (part.total_duration > Duration::zero()) {
      out << ", "
          << format_rate(static_cast<double>(part.bytes_transferred) /
                         seconds(part.total_duration));
    }
    if (part.num_errors > 0) { out << ", " << part.num_errors << " failed"; }
    out << "\n";
  }
  // A span that did remote I/O shows the HTTP rows even at zero: a zero is news there.
  out << counters.report(did_remote_io(*this) ? ReportRows::ALL : rows);
  return out.str();
}

}  // namespace kvikio::statistics
