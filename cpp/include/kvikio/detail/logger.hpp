/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file detail/logger.hpp
 * @brief KvikIO's log: one line per message to stderr or `KVIKIO_LOG_FILE`, filtered by
 * `KVIKIO_LOG_LEVEL` (trace, debug, info, warn, error, off; default warn).
 *
 * Use the macros, which format nothing when the level is filtered out:
 * `KVIKIO_LOG_WARN("retrying ", url, " after HTTP ", status);`
 */

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace kvikio::detail {

enum class LogLevel : std::uint8_t { trace, debug, info, warn, error, off };

/// @brief Name of a level as used in `KVIKIO_LOG_LEVEL` and in log lines.
std::string_view log_level_name(LogLevel level) noexcept;

/**
 * @brief Parses a level name (any case; `warning` is accepted for `warn`).
 * @throws std::invalid_argument naming the variable, the value and the accepted names.
 */
LogLevel parse_log_level(std::string_view name, std::string_view value);

/**
 * @brief The process-wide log sink. Thread-safe; never throws.
 */
class Logger {
 public:
  /// @brief The logger configured from the environment at first use.
  static Logger& instance() noexcept;

  [[nodiscard]] bool enabled(LogLevel level) const noexcept;
  [[nodiscard]] LogLevel level() const noexcept;
  void set_level(LogLevel level) noexcept;

  /// @brief Writes one line: `[KvikIO] <UTC time> <level> [tid] <message>`.
  void write(LogLevel level, std::string_view message) noexcept;

  /**
   * @brief A notice printed on stdout (a retry notice), if `level` is enabled: the text (the
   * second argument) alone on stdout while the log goes to stderr (the default), so that
   * programs that read stdout for it keep working; a log line of the text and then `detail`
   * once the log goes to a file (`KVIKIO_LOG_FILE`, set_file()).
   */
  void notice(LogLevel level, std::string_view upstream_text, std::string_view detail) noexcept;

  /**
   * @brief Sends later lines to `path` (appending), or to stderr if `path` is empty.
   * @return false (and keeps the current sink) if `path` cannot be opened.
   */
  bool set_file(std::string const& path) noexcept;

 private:
  Logger() noexcept;
  struct Impl;
  Impl* impl_;  // never freed: logging stays usable during static destruction
};

/**
 * @brief A log message from the arguments of a KVIKIO_LOG_* macro.
 *
 * Two styles: a first argument holding `{}` placeholders is a format string, each `{}` replaced
 * by the next argument (fmt's style); otherwise the arguments are concatenated with
 * `operator<<`. Arguments left over are appended.
 */
template <typename First, typename... Rest>
std::string concat(First const& first, Rest const&... rest)
{
  std::ostringstream out;
  if constexpr (sizeof...(Rest) > 0 && std::is_convertible_v<First const&, std::string_view>) {
    std::string_view format{first};
    if (format.find("{}") != std::string_view::npos) {
      auto next = [&](auto const& arg) {
        auto const at = format.find("{}");
        if (at == std::string_view::npos) {
          out << arg;
          return;
        }
        out << format.substr(0, at) << arg;
        format.remove_prefix(at + 2);
      };
      (next(rest), ...);
      out << format;
      return out.str();
    }
  }
  out << first;
  ((out << rest), ...);
  return out.str();
}

}  // namespace kvikio::detail

#define KVIKIO_DETAIL_LOG(level, ...)                                   \
  do {                                                                  \
    auto& kvikio_logger_ = kvikio::detail::Logger::instance();          \
    if (kvikio_logger_.enabled(level)) {                                \
      kvikio_logger_.write(level, kvikio::detail::concat(__VA_ARGS__)); \
    }                                                                   \
  } while (0)

#define KVIKIO_LOG_TRACE(...) KVIKIO_DETAIL_LOG(kvikio::detail::LogLevel::trace, __VA_ARGS__)
#define KVIKIO_LOG_DEBUG(...) KVIKIO_DETAIL_LOG(kvikio::detail::LogLevel::debug, __VA_ARGS__)
#define KVIKIO_LOG_INFO(...) KVIKIO_DETAIL_LOG(kvikio::detail::LogLevel::info, __VA_ARGS__)
#define KVIKIO_LOG_WARN(...) KVIKIO_DETAIL_LOG(kvikio::detail::LogLevel::warn, __VA_ARGS__)
#define KVIKIO_LOG_ERROR(...) KVIKIO_DETAIL_LOG(kvikio::detail::LogLevel::error, __VA_ARGS__)
/// @brief The most severe level; logged at the error level.
#define KVIKIO_LOG_CRITICAL(...) KVIKIO_DETAIL_LOG(kvikio::detail::LogLevel::error, __VA_ARGS__)
