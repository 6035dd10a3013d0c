/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/detail/logger.hpp>

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>

#include <kvikio/detail/env.hpp>

namespace kvikio::detail {
namespace {

constexpr std::array<std::string_view, 6> level_names{
  "trace", "debug", "info", "warn", "error", "off"};

std::string timestamp()
{
  using namespace std::chrono;
  auto const now            = system_clock::now();
  auto const millis         = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t const seconds = system_clock::to_time_t(now);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  std::array<char, 40> text{};
  auto const n = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text.data() + n, text.size() - n, ".%03dZ", static_cast<int>(millis));
  return text.data();
}

}  // namespace

std::string_view log_level_name(LogLevel level) noexcept
{
  return level_names.at(static_cast<std::size_t>(level));
}

LogLevel parse_log_level(std::string_view name, std::string_view value)
{
  if (iequals(value, "warning")) { return LogLevel::warn; }
  for (std::size_t i = 0; i < level_names.size(); ++i) {
    if (iequals(value, level_names[i])) { return static_cast<LogLevel>(i); }
  }
  throw std::invalid_argument(std::string{name} + "=" + std::string{value} +
                              ": expected one of trace, debug, info, warn, error, off");
}

struct Logger::Impl {
  std::atomic<LogLevel> level{LogLevel::warn};
  std::mutex mutex;
  std::FILE* sink{stderr};
};

namespace {

// Opened without waiting: a FIFO without a reader fails at once (ENXIO) instead of blocking the
// first call that logs. Writes then block as they do to any file, so no line is dropped.
std::FILE* open_for_appending(std::string const& path) noexcept
{
  int const fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) { return nullptr; }
  int const flags = ::fcntl(fd, F_GETFL);
  std::FILE* file =
    flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ? nullptr : ::fdopen(fd, "a");
  if (file == nullptr) { ::close(fd); }
  return file;
}

}  // namespace

Logger::Logger() noexcept : impl_{new Impl{}}
{
  std::string problem;
  try {
    if (auto value = getenv_trimmed("KVIKIO_LOG_LEVEL")) {
      impl_->level = parse_log_level("KVIKIO_LOG_LEVEL", *value);
    }
  } catch (std::exception const& e) {
    problem = std::string{e.what()} + "; logging at warn";
  }
  try {
    if (auto path = getenv_trimmed("KVIKIO_LOG_FILE")) {
      if (!set_file(*path)) {
        int const error = errno;  // ENXIO: a FIFO without a reader
        problem += (problem.empty() ? "" : "; ") + ("KVIKIO_LOG_FILE=" + *path) +
                   ": cannot be opened for appending (" + std::strerror(error) +
                   "); logging to stderr";
      }
    }
  } catch (...) {
  }
  // A warning, once: how much is logged never stops I/O.
  if (!problem.empty()) { write(LogLevel::warn, problem); }
}

Logger& Logger::instance() noexcept
{
  static Logger logger;
  return logger;
}

bool Logger::enabled(LogLevel level) const noexcept
{
  return level != LogLevel::off && level >= impl_->level.load(std::memory_order_relaxed);
}

LogLevel Logger::level() const noexcept { return impl_->level.load(); }

void Logger::set_level(LogLevel level) noexcept { impl_->level = level; }

bool Logger::set_file(std::string const& path) noexcept
{
  std::FILE* file = path.empty() ? stderr : open_for_appending(path);
  if (file == nullptr) { return false; }
  std::lock_guard const lock{impl_->mutex};
  if (impl_->sink != stderr) { std::fclose(impl_->sink); }
  impl_->sink = file;
  return true;
}

void Logger::write(LogLevel level, std::string_view message) noexcept
{
  try {
    auto const line = "[KvikIO] " + timestamp() + " " + std::string{log_level_name(level)} + " [" +
                      std::to_string(::syscall(SYS_gettid)) + "] " + std::string{message} + "\n";
    std::lock_guard const lock{impl_->mutex};
    std::fwrite(line.data(), 1, line.size(), impl_->sink);
    std::fflush(impl_->sink);
  } catch (...) {
    // Logging must never be the reason an operation fails.
  }
}

void Logger::notice(LogLevel level,
                    std::string_view upstream_text,
                    std::string_view detail) noexcept
{
  if (!enabled(level)) { return; }
  {
    std::lock_guard const lock{impl_->mutex};
    if (impl_->sink == stderr) {
      try {
        std::string const line = std::string{upstream_text} + "\n";
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fflush(stdout);
      } catch (...) {
      }
      return;
    }
  }
  try {
    write(level, std::string{upstream_text} + " [" + std::string{detail} + "]");
  } catch (...) {
  }
}

}  // namespace kvikio::detail
