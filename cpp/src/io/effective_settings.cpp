/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/effective_settings.hpp>

#include <string>
#include <vector>

#include <kvikio/defaults.hpp>

#include "io/local_plan.hpp"

namespace kvikio {
namespace {

std::string flag(bool value) { return value ? "true" : "false"; }

std::string status_codes()
{
  std::string text;
  for (int const code : defaults::http_status_codes()) {
    if (!text.empty()) { text += ','; }
    text += std::to_string(code);
  }
  return text;
}

// A setting whose effective value is its configured one.
EffectiveSetting same(char const* name, char const* variable, std::string value)
{
  return {name, variable, value, value, {}};
}

}  // namespace

std::vector<EffectiveSetting> effective_settings()
{
  std::vector<EffectiveSetting> out;
  {
    CompatMode const mode = defaults::compat_mode();
    EffectiveSetting s = same("compat_mode", "KVIKIO_COMPAT_MODE", detail::compat_mode_name(mode));
    if (mode == CompatMode::AUTO) {
      std::string const why_not = detail::gds_unavailable_reason();
      s.effective               = why_not.empty() ? "OFF" : "ON";
      s.why = why_not.empty() ? "GPUDirect Storage is available: device memory through cuFile"
                              : "POSIX, device memory staged in pinned buffers: " + why_not;
    }
    out.push_back(std::move(s));
  }
  out.push_back(same(
    "thread_pool_nthreads", "KVIKIO_NTHREADS", std::to_string(defaults::thread_pool_nthreads())));
  out.push_back(same("task_size", "KVIKIO_TASK_SIZE", std::to_string(defaults::task_size())));
  out.push_back(
    same("gds_threshold", "KVIKIO_GDS_THRESHOLD", std::to_string(defaults::gds_threshold())));
  {
    std::size_t const configured = defaults::bounce_buffer_size();
    std::size_t const used       = detail::staging_buffer_size();
    EffectiveSetting s =
      same("bounce_buffer_size", "KVIKIO_BOUNCE_BUFFER_SIZE", std::to_string(configured));
    if (used != configured) {
      s.effective = std::to_string(used);
      s.why       = "the smallest staging size the library uses";
    }
    out.push_back(std::move(s));
  }
  out.push_back(same("num_bounce_buffers",
                     "KVIKIO_NUM_BOUNCE_BUFFERS",
                     std::to_string(defaults::num_bounce_buffers())));
  out.push_back(same("http_max_attempts",
                     "KVIKIO_HTTP_MAX_ATTEMPTS",
                     std::to_string(defaults::http_max_attempts())));
  out.push_back(
    same("http_timeout", "KVIKIO_HTTP_TIMEOUT", std::to_string(defaults::http_timeout())));
  out.push_back(same("http_status_codes", "KVIKIO_HTTP_STATUS_CODES", status_codes()));
  out.push_back(same(
    "auto_direct_io_read", "KVIKIO_AUTO_DIRECT_IO_READ", flag(defaults::auto_direct_io_read())));
  out.push_back(same("auto_direct_io_read_overread",
                     "KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD",
                     flag(defaults::auto_direct_io_read_overread())));
  out.push_back(same(
    "auto_direct_io_write", "KVIKIO_AUTO_DIRECT_IO_WRITE", flag(defaults::auto_direct_io_write())));
  out.push_back(same("thread_pool_per_block_device",
                     "KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE",
                     flag(defaults::thread_pool_per_block_device())));
  {
    EffectiveSetting s = same("local_io_backend",
                              "KVIKIO_LOCAL_IO_BACKEND",
                              detail::local_io_backend_name(defaults::local_io_backend()));
    auto const choice  = detail::local_backend_choice();
    if (choice.backend != s.configured) {
      s.effective = choice.backend;
      s.why       = choice.why;
    }
    out.push_back(std::move(s));
  }
  out.push_back(same("remote_io_backend",
                     "KVIKIO_REMOTE_IO_BACKEND",
                     detail::remote_io_backend_name(defaults::remote_io_backend())));
  out.push_back(same("remote_max_connections",
                     "KVIKIO_REMOTE_MAX_CONNECTIONS",
                     std::to_string(defaults::remote_max_connections())));
  out.push_back(same("remote_io_num_reactors",
                     "KVIKIO_REMOTE_IO_NUM_REACTORS",
                     std::to_string(defaults::remote_io_num_reactors())));
  out.push_back(same("remote_io_reactor_dispatch",
                     "KVIKIO_REMOTE_IO_REACTOR_DISPATCH",
                     detail::reactor_dispatch_name(defaults::remote_io_reactor_dispatch())));
  out.push_back(same("remote_io_max_concurrent_requests",
                     "KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS",
                     std::to_string(defaults::remote_io_max_concurrent_requests())));
  out.push_back(same("event_pool_max_per_context",
                     "KVIKIO_EVENT_POOL_MAX_PER_CONTEXT",
                     std::to_string(defaults::event_pool_max_per_context())));
  out.push_back(same("ipc_export_cache_size",
                     "KVIKIO_IPC_EXPORT_CACHE_SIZE",
                     std::to_string(defaults::ipc_export_cache_size())));
  out.push_back(same("ipc_open_cache_size",
                     "KVIKIO_IPC_OPEN_CACHE_SIZE",
                     std::to_string(defaults::ipc_open_cache_size())));
  return out;
}

std::string effective_settings_report()
{
  std::string text;
  for (auto const& s : effective_settings()) {
    text += s.name + " = " + s.effective;
    if (s.effective != s.configured || !s.why.empty()) {
      text += "  (configured: " + s.configured + "; " + s.why + ")";
    }
    text += "\n";
  }
  return text;
}

}  // namespace kvikio
