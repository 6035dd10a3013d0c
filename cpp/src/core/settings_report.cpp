/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "core/settings_report.hpp"

#include <atomic>
#include <string_view>

#include <kvikio/detail/logger.hpp>

namespace kvikio::detail {
namespace {

std::atomic<std::string (*)()> report_maker{nullptr};
std::atomic<bool> reported{false};

}  // namespace

void set_settings_report(std::string (*report)()) noexcept { report_maker.store(report); }

void log_settings_report_once()
{
  if (!Logger::instance().enabled(LogLevel::info)) { return; }
  auto* const make = report_maker.load();
  if (make == nullptr || reported.exchange(true)) { return; }
  std::string const report = make();
  std::string_view rest{report};
  while (!rest.empty()) {
    auto const end = rest.find('\n');
    KVIKIO_LOG_INFO("effective setting: ", rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
  }
}

}  // namespace kvikio::detail
