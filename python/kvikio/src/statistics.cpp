/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * kvikio._lib.statistics: the C++ statistics as kvikio/statistics.py needs them. A Summary
 * crosses whole (its clock anchor and steady-clock span included), so that since(), report(),
 * to_json() and serialize() work on exactly the reading taken; as_dict() gives the values the
 * Python dataclass shows. std::invalid_argument (a baseline since() cannot subtract, bytes that
 * are no summary) is a ValueError by pybind11's own translation.
 */
#include "statistics.hpp"
#include "without_gil.hpp"

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <kvikio/observation.hpp>
#include <kvikio/statistics/counters.hpp>
#include <kvikio/statistics/summary.hpp>

namespace py = pybind11;
using kvikio_python::without_gil;

namespace {

using kvikio::statistics::ReportRows;
using kvikio::statistics::Summary;
using kvikio::statistics::SummaryMonitor;

py::str backend_name(std::size_t index)
{
  std::string_view const name = kvikio::to_string(static_cast<kvikio::IoBackend>(index));
  return py::str(name.data(), name.size());
}

/// `time` on the wall clock through the summary's anchor, in ns since the Unix epoch.
std::int64_t unix_ns(Summary const& s, kvikio::TimePoint time)
{
  auto const since_epoch = s.anchor.to_wall_clock(time).time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count();
}

/// The fields of kvikio.Summary, in its dataclass's order (which is its __init__'s and repr's).
py::dict as_dict(Summary const& s)
{
  py::dict backends;
  for (std::size_t i = 0; i < kvikio::num_io_backends; ++i) {
    auto const& b = s.by_backend[i];
    py::dict totals;
    totals["num_ops"]           = b.num_ops;
    totals["bytes_transferred"] = b.bytes_transferred;
    totals["total_duration_ns"] = b.total_duration.count();
    totals["num_errors"]        = b.num_errors;
    backends[backend_name(i)]   = totals;
  }
  // The keys are those of the JSON's "counters" object.
  auto const& c = s.counters;
  py::dict counters;
  counters["remote_size_probes"]     = c.remote_size_probes;
  counters["remote_size_probing_ns"] = c.remote_size_probing.count();
  counters["http_connections"]       = c.http_connections;
  counters["http_dns_ns"]            = c.http_dns.count();
  counters["http_tcp_ns"]            = c.http_tcp.count();
  counters["http_tls_ns"]            = c.http_tls.count();
  counters["http_retries"]           = c.http_retries;
  counters["http_retry_backoff_ns"]  = c.http_retry_backoff.count();

  py::dict d;
  d["start_unix_ns"]      = unix_ns(s, s.start);
  d["end_unix_ns"]        = unix_ns(s, s.end);
  d["num_ops"]            = s.num_ops;
  d["num_reads"]          = s.num_reads;
  d["num_writes"]         = s.num_writes;
  d["bytes_requested"]    = s.bytes_requested;
  d["bytes_transferred"]  = s.bytes_transferred;
  d["bytes_read"]         = s.bytes_read;
  d["bytes_written"]      = s.bytes_written;
  d["num_errors"]         = s.num_errors;
  d["busy_ns"]            = s.busy.count();
  d["total_duration_ns"]  = s.total_duration.count();
  d["by_backend"]         = backends;
  d["counters"]           = counters;
  d["wall_ns"]            = s.wall().count();
  d["busy_bytes_per_sec"] = s.busy_bytes_per_sec();
  d["busy_fraction"]      = s.busy_fraction();
  d["mean_duration_ns"]   = s.mean_duration().count();
  return d;
}

py::bytes summary_to_bytes(Summary const& s)
{
  std::vector<std::byte> const raw = s.serialize();
  return py::bytes(reinterpret_cast<char const*>(raw.data()), raw.size());
}

Summary summary_from_bytes(py::bytes const& data)
{
  std::string_view const view = data;
  auto const* first           = reinterpret_cast<std::byte const*>(view.data());
  return Summary::deserialize(std::vector<std::byte>(first, first + view.size()));
}

}  // namespace

void bind_statistics(py::module_& m)
{
  auto s = m.def_submodule("statistics", "kvikio::statistics: Summary and SummaryMonitor");

  py::list names;
  for (std::size_t i = 0; i < kvikio::num_io_backends; ++i) {
    names.append(backend_name(i));
  }
  s.attr("_BACKEND_NAMES") = py::tuple(names);

  py::class_<Summary>(s, "Summary", "A kvikio::statistics::Summary, as SummaryMonitor read it")
    .def("as_dict", &as_dict, "The fields of kvikio.Summary, in its order, read in one pass")
    .def("since", &Summary::since, py::arg("previous"))
    .def("to_json", &Summary::to_json)
    .def(
      "report",
      [](Summary const& self, bool all_rows) {
        return self.report(all_rows ? ReportRows::ALL : ReportRows::USED);
      },
      py::arg("all_rows") = false)
    .def("serialize", &summary_to_bytes)
    .def_static("deserialize", &summary_from_bytes, py::arg("data"));

  // get(), reset() and since() wait at most for one callback to leave the monitor's lock, and
  // callbacks never take the GIL, so these keep it. Registering and stopping wait for every
  // monitor's callbacks in flight (the registry's lock), so they release it. The destructor, run
  // when the Python object goes, stops too: with the GIL held, which no callback needs.
  py::class_<SummaryMonitor, std::unique_ptr<SummaryMonitor>>(
    s, "SummaryMonitor", "A kvikio::statistics::SummaryMonitor, counting from its creation")
    .def(py::init([] {
      std::unique_ptr<SummaryMonitor> monitor;
      without_gil([&] { monitor = std::make_unique<SummaryMonitor>(); });
      return monitor;
    }))
    .def("get", &SummaryMonitor::get)
    .def("reset", &SummaryMonitor::reset)
    .def("since", &SummaryMonitor::since, py::arg("previous"))
    .def("stop", [](SummaryMonitor& self) { without_gil([&] { self.stop(); }); });
}
