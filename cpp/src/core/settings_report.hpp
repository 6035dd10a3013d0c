/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file core/settings_report.hpp
 * @brief The effective-settings report at `info`, once per process: the first handle opened (a
 * FileHandle or a RemoteHandle) logs what every setting comes to. The report itself is made
 * above this layer (io/effective_settings.cpp registers it when the library loads), so that
 * every handle, local or remote, can ask for it from here.
 */

#include <string>

namespace kvikio::detail {

/// @brief Sets the function that makes the report: a line per setting.
void set_settings_report(std::string (*report)()) noexcept;

/// @brief Logs the report at `info`, a log line per setting, the first time it is called in the
/// process with `info` enabled and a report set; nothing after that.
void log_settings_report_once();

}  // namespace kvikio::detail
