/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/effective_settings.hpp>

#include <string>
#include <vector>

#include <kvikio/defaults.hpp>

#include "core/settings_report.hpp"
#include "io/local_plan.hpp"

namespace kvikio {
namespace {

// A setting's value as its variable spells it.
std::string text_of(std::size_t value) { return std::to_string(value); }
std::string text_of(unsigned int value) { return std::to_string(value); }
std::string text_of(long value) { return std::to_string(value); }
std::string text_of(bool value) { return value ? "true" : "false"; }
std::string text_of(CompatMode mode) { return detail::compat_mode_name(mode); }
std::string text_of(LocalIOBackend backend) { return detail::local_io_backend_name(backend); }
std::string text_of(RemoteIOBackend backend) { return detail::remote_io_backend_name(backend); }
std::string text_of(RemoteReactorDispatch dispatch)
{
  return detail::reactor_dispatch_name(dispatch);
}
std::string text_of(std::vector<int> const& codes)
{
  std::string text;
  for (int const code : codes) {
    if (!text.empty()) { text += ','; }
    text += std::to_string(code);
  }
  return text;
}

// The first of a row's variables: its name in reports.
std::string first_of(std::initializer_list<char const*> variables) { return *variables.begin(); }

// Where the library uses something else than what is configured, what and why.
void explain(EffectiveSetting& s)
{
  if (s.name == "compat_mode" && defaults::compat_mode() == CompatMode::AUTO) {
    std::string const why_not = detail::gds_unavailable_reason();
    s.effective               = why_not.empty() ? "OFF" : "ON";
    s.why = why_not.empty() ? "GPUDirect Storage is available: device memory through cuFile"
                            : "POSIX, device memory staged in pinned buffers: " + why_not;
  } else if (s.name == "bounce_buffer_size" &&
             detail::staging_buffer_size() != defaults::bounce_buffer_size()) {
    s.effective = std::to_string(detail::staging_buffer_size());
    s.why       = "the smallest staging size the library uses";
  } else if (s.name == "local_io_backend") {
    auto const choice = detail::local_backend_choice();
    if (choice.backend != s.configured) {
      s.effective = choice.backend;
      s.why       = choice.why;
    }
  }
}

}  // namespace

std::vector<EffectiveSetting> effective_settings()
{
  std::vector<EffectiveSetting> out;
#define KVIKIO_EFFECTIVE(name, type, default_value, variables, parse, what)                \
  {                                                                                        \
    std::string const value = text_of(defaults::name());                                   \
    out.push_back({#name, first_of({KVIKIO_UNPARENTHESIZE variables}), value, value, {}}); \
  }
#define KVIKIO_UNPARENTHESIZE(...) __VA_ARGS__
  KVIKIO_SETTINGS(KVIKIO_EFFECTIVE)
#undef KVIKIO_EFFECTIVE
#undef KVIKIO_UNPARENTHESIZE
  for (auto& s : out) {
    explain(s);
  }
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

namespace {
// The first handle of the process logs the report at info (core/settings_report.hpp).
[[maybe_unused]] bool const report_registered =
  (detail::set_settings_report(&effective_settings_report), true);
}  // namespace

}  // namespace kvikio
