/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * What the library says it decided: kvikio::effective_settings() (each setting configured and
 * as acted on, with the reason where they differ) and the line each FileHandle logs when it
 * opens a file.
 */
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/effective_settings.hpp>
#include <kvikio/file_handle.hpp>

#include "io/io_uring/io_uring_io.hpp"
#include "io/local_plan.hpp"

#include "common/temp_dir.hpp"

namespace {

kvikio::EffectiveSetting setting(std::string const& name)
{
  for (auto& s : kvikio::effective_settings()) {
    if (s.name == name) { return s; }
  }
  ADD_FAILURE() << "no setting " << name;
  return {};
}

std::string read_text(std::string const& path)
{
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

}  // namespace

// One entry per setting, each by the variable that sets it: every KVIKIO_* variable the library
// reads for its settings (not the second names of two of them, nor the logger's and the remote
// transports' own variables).
TEST(EffectiveSettings, EverySettingOnceByItsVariable)
{
  std::set<std::string> names;
  std::set<std::string> variables;
  for (auto const& s : kvikio::effective_settings()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name << " twice";
    EXPECT_TRUE(variables.insert(s.variable).second) << s.variable << " twice";
    EXPECT_FALSE(s.configured.empty()) << s.name;
    EXPECT_FALSE(s.effective.empty()) << s.name;
    EXPECT_TRUE(s.effective == s.configured || !s.why.empty())
      << s.name << ": " << s.configured << " -> " << s.effective << " without a reason";
  }
  std::set<std::string> const not_settings{"KVIKIO_NUM_THREADS",
                                           "KVIKIO_REMOTE_BACKEND",
                                           "KVIKIO_LOG_LEVEL",
                                           "KVIKIO_LOG_FILE",
                                           "KVIKIO_REMOTE_VERBOSE",
                                           "KVIKIO_WEBHDFS_USERNAME"};
  std::set<std::string> expected;
  for (auto const name : kvikio::detail::Settings::known_variables()) {
    if (not_settings.count(std::string{name}) == 0) { expected.emplace(name); }
  }
  EXPECT_EQ(variables, expected);
}

// Compat mode AUTO comes to ON or OFF as the library decides it, with the reason; ON is ON.
TEST(EffectiveSettings, CompatModeAutoIsResolvedWithItsReason)
{
  kvikio::defaults::set_compat_mode(kvikio::CompatMode::AUTO);
  auto const automatic = setting("compat_mode");
  EXPECT_EQ(automatic.configured, "AUTO");
  EXPECT_EQ(automatic.effective, kvikio::defaults::is_compat_mode_preferred() ? "ON" : "OFF");
  EXPECT_FALSE(automatic.why.empty());
  kvikio::defaults::set_compat_mode(kvikio::CompatMode::ON);
  auto const on = setting("compat_mode");
  EXPECT_EQ(on.configured, "ON");
  EXPECT_EQ(on.effective, "ON");
  EXPECT_EQ(on.why, "");
}

// local_io_backend `auto` comes to the backend a large read takes with the global pool (the only
// pool of this process), as the transfers choose it (io_uring_selected()), and says why.
TEST(EffectiveSettings, LocalBackendAutoNamesTheBackendOfALargeRead)
{
  using kvikio::LocalIOBackend;
  kvikio::defaults::set_local_io_backend(LocalIOBackend::AUTO);
  unsigned const cores = std::max(1U, std::thread::hardware_concurrency());
  for (unsigned const threads : {1U, cores, 2 * cores}) {
    kvikio::defaults::set_thread_pool_nthreads(threads);
    auto const s = setting("local_io_backend");
    bool const io_uring =
      kvikio::detail::io_uring_selected(true, kvikio::detail::io_uring_piece_size() + 1, threads);
    EXPECT_EQ(s.configured, "auto");
    EXPECT_EQ(s.effective, io_uring ? "io_uring" : "posix") << threads << " threads";
    EXPECT_NE(
      s.why.find(std::to_string(threads) + (threads == 1 ? " pool thread " : " pool threads ")),
      std::string::npos)
      << s.why;
  }
  kvikio::defaults::set_thread_pool_nthreads(2 * cores);
  EXPECT_EQ(setting("local_io_backend").effective, "posix") << "more threads than half the cores";
  kvikio::defaults::set_local_io_backend(LocalIOBackend::POSIX);
  auto const posix = setting("local_io_backend");
  EXPECT_EQ(posix.effective, "posix");
  EXPECT_EQ(posix.why, "");
}

// A staging size below the least the library uses is reported as the size in use.
TEST(EffectiveSettings, StagingBelowTheLeastIsReportedAsUsed)
{
  kvikio::defaults::set_bounce_buffer_size(100);
  auto const s = setting("bounce_buffer_size");
  EXPECT_EQ(s.configured, "100");
  EXPECT_EQ(s.effective, std::to_string(kvikio::detail::staging_buffer_size()));
  EXPECT_NE(s.effective, "100");
  EXPECT_FALSE(s.why.empty());
}

// The report: a line per setting, the configured value beside the effective one where they
// differ.
TEST(EffectiveSettings, ReportHasALinePerSetting)
{
  kvikio::defaults::set_compat_mode(kvikio::CompatMode::AUTO);
  auto const report = kvikio::effective_settings_report();
  auto const lines  = static_cast<std::size_t>(std::count(report.begin(), report.end(), '\n'));
  EXPECT_EQ(lines, kvikio::effective_settings().size()) << report;
  EXPECT_NE(report.find("compat_mode = O"), std::string::npos) << report;
  EXPECT_NE(report.find("(configured: AUTO; "), std::string::npos) << report;
  EXPECT_NE(report.find("task_size = " + std::to_string(kvikio::defaults::task_size()) + "\n"),
            std::string::npos)
    << report;
}

// Each FileHandle logs one short line at info level saying how its bytes move (compat mode, the
// backend, O_DIRECT, the pool), and at debug level the same with why.
TEST(EffectiveSettings, EachHandleLogsHowItsBytesMove)
{
  kvikio::test::TempDir const dir;
  std::string const data = dir.file("data");
  std::string const log  = dir.file("log");
  std::ofstream{data} << "some bytes";
  auto& logger = kvikio::detail::Logger::instance();
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  auto const lines_at = [&](kvikio::detail::LogLevel level) {
    EXPECT_TRUE(logger.set_file(log));
    logger.set_level(level);
    {
      kvikio::FileHandle const file{data, "r", kvikio::FileHandle::m644, kvikio::CompatMode::ON};
    }
    logger.set_level(kvikio::detail::LogLevel::warn);
    EXPECT_TRUE(logger.set_file(""));
    std::string const text = read_text(log);
    std::remove(log.c_str());
    return text;
  };
  std::string const start = "FileHandle(\"" + data + "\", \"r\")";
  auto const line         = [](std::string const& text, std::size_t at) {
    return text.substr(at, text.find('\n', at) - at);
  };

  std::string const info = lines_at(kvikio::detail::LogLevel::info);
  auto const at          = info.find(start + ": ");
  ASSERT_NE(at, std::string::npos) << info;
  EXPECT_EQ(info.find(start, at + 1), std::string::npos) << "one line per handle:\n" << info;
  EXPECT_EQ(line(info, at),
            start +
              ": device memory staged in pinned buffers; host memory and device memory "
              "through posix; O_DIRECT open; pool of 1 thread (the process's)");

  std::string const debug = lines_at(kvikio::detail::LogLevel::debug);
  auto const why          = debug.find(start + " and why: ");
  ASSERT_NE(why, std::string::npos) << debug;
  for (char const* part : {"device memory staged in pinned buffers (compat mode ON)",
                           "through posix (KVIKIO_LOCAL_IO_BACKEND=posix)",
                           "O_DIRECT open (reads: ",
                           "; pool of "}) {
    EXPECT_NE(line(debug, why).find(part), std::string::npos)
      << part << " missing from: " << line(debug, why);
  }
}

// With KVIKIO_LOG_LEVEL=info the first handle of the process logs what every setting comes to,
// a line each, and no handle after it does.
TEST(EffectiveSettings, TheFirstHandleLogsEverySettingOnce)
{
  kvikio::test::TempDir const dir;
  std::string const data = dir.file("data");
  std::string const log  = dir.file("log");
  std::ofstream{data} << "some bytes";
  auto& logger = kvikio::detail::Logger::instance();
  ASSERT_TRUE(logger.set_file(log));
  logger.set_level(kvikio::detail::LogLevel::info);
  for (int i = 0; i < 3; ++i) {
    kvikio::FileHandle const file{data, "r"};
  }
  logger.set_level(kvikio::detail::LogLevel::warn);
  ASSERT_TRUE(logger.set_file(""));
  std::string const text = read_text(log);
  for (auto const& s : kvikio::effective_settings()) {
    std::string const line = "effective setting: " + s.name + " = " + s.effective;
    auto const at          = text.find(line);
    EXPECT_NE(at, std::string::npos) << line << " missing from:\n" << text;
    EXPECT_EQ(text.find(line, at + 1), std::string::npos) << "logged twice:\n" << text;
  }
  // Before the first handle's own line.
  EXPECT_LT(text.find("effective setting: "), text.find("FileHandle(\"")) << text;
}
