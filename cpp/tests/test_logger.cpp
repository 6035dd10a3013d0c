/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The log: level filtering, file sink, line format, and that filtered messages are not formatted.
 */
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/detail/logger.hpp>
#include <kvikio/file_handle.hpp>

#include "common/env_guard.hpp"

using kvikio::detail::Logger;
using kvikio::detail::LogLevel;

namespace {

std::string read_file(std::string const& path)
{
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string temp_path(char const* tag)
{
  return ::testing::TempDir() + "kvikio-log-" + tag + "-" + std::to_string(::getpid()) + ".txt";
}

// Counts how often it is formatted: a filtered message must cost nothing.
struct Counted {
  int* count;
};
std::ostream& operator<<(std::ostream& out, Counted const& c)
{
  ++*c.count;
  return out << "counted";
}

TEST(Logger, ParseLevel)
{
  using kvikio::detail::parse_log_level;
  EXPECT_EQ(parse_log_level("V", "TRACE"), LogLevel::trace);
  EXPECT_EQ(parse_log_level("V", "warning"), LogLevel::warn);
  EXPECT_EQ(parse_log_level("V", "off"), LogLevel::off);
  EXPECT_THROW(parse_log_level("V", "verbose"), std::invalid_argument);
}

TEST(Logger, FiltersByLevelAndWritesToFile)
{
  auto const path = temp_path("filter");
  std::remove(path.c_str());
  auto& log = Logger::instance();
  ASSERT_TRUE(log.set_file(path));
  log.set_level(LogLevel::warn);

  int formatted = 0;
  KVIKIO_LOG_DEBUG("hidden ", Counted{&formatted});
  KVIKIO_LOG_WARN("shown ", 42, " ", Counted{&formatted});
  KVIKIO_LOG_ERROR("also shown");
  log.set_level(LogLevel::off);
  KVIKIO_LOG_ERROR("silenced");
  ASSERT_TRUE(log.set_file(""));

  EXPECT_EQ(formatted, 1);
  auto const text = read_file(path);
  EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
  EXPECT_EQ(text.find("silenced"), std::string::npos) << text;
  EXPECT_NE(text.find("] shown 42 counted\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" warn ["), std::string::npos) << text;
  EXPECT_NE(text.find(" error ["), std::string::npos) << text;
  EXPECT_EQ(text.rfind("[KvikIO] ", 0), 0U) << text;
  std::remove(path.c_str());
}

TEST(Logger, UnopenableFileKeepsCurrentSink)
{
  EXPECT_FALSE(Logger::instance().set_file("/nonexistent-dir/log.txt"));
}

TEST(Logger, ConfiguredFromEnvironment)
{
  // Each ctest case is a fresh process, so the logger is first built here.
  auto const path = temp_path("env");
  std::remove(path.c_str());
  kvikio::test::EnvGuard const env{{"KVIKIO_LOG_LEVEL", "info"}, {"KVIKIO_LOG_FILE", path}};
  auto& log = Logger::instance();
  ASSERT_EQ(log.level(), LogLevel::info)
    << "the logger was built before this test set its environment: run it in its own process, "
       "as ctest does";
  KVIKIO_LOG_INFO("from the environment");
  EXPECT_NE(read_file(path).find("from the environment"), std::string::npos);
  log.set_file("");
  std::remove(path.c_str());
}

// A FIFO no process reads is a file that cannot be opened, not a hang: the first log line
// goes to stderr with the reason. The alarm ends a hung test as a failure.
TEST(Logger, FifoWithoutAReaderFallsBackToStderr)
{
  auto const path = temp_path("fifo");
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  kvikio::test::EnvGuard const env{{"KVIKIO_LOG_LEVEL", "info"}, {"KVIKIO_LOG_FILE", path}};
  ::alarm(30);
  ::testing::internal::CaptureStderr();
  KVIKIO_LOG_INFO("after the fallback");
  std::string const text = ::testing::internal::GetCapturedStderr();
  ::alarm(0);
  EXPECT_NE(text.find("KVIKIO_LOG_FILE=" + path + ": cannot be opened"), std::string::npos) << text;
  EXPECT_NE(text.find("after the fallback"), std::string::npos) << text;
  std::remove(path.c_str());
}

// A level the logger cannot read is warned about once, naming the value and the accepted ones,
// and the default kept; a FileHandle then opens and reads as usual.
TEST(Logger, UnknownLevelIsWarnedAboutAndTheDefaultKept)
{
  kvikio::test::EnvGuard const env{{"KVIKIO_LOG_LEVEL", "verbose"},
                                   {"KVIKIO_LOG_FILE", std::nullopt}};
  ::testing::internal::CaptureStderr();
  auto& log              = Logger::instance();
  std::string const text = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.level(), LogLevel::warn);
  EXPECT_NE(text.find(" warn ["), std::string::npos) << text;
  EXPECT_NE(text.find("KVIKIO_LOG_LEVEL=verbose: expected one of trace, debug, info, warn, error, "
                      "off; logging at warn"),
            std::string::npos)
    << text;
  auto const path = temp_path("level");
  {
    std::ofstream{path} << "0123456789";
  }
  kvikio::FileHandle file{path, "r"};
  char buf[10]{};
  EXPECT_EQ(file.pread(buf, 10, 0).get(), 10U);
  EXPECT_EQ(std::string(buf, 10), "0123456789");
  std::remove(path.c_str());
}

TEST(Logger, ConcurrentLinesStayWhole)
{
  auto const path = temp_path("concurrent");
  std::remove(path.c_str());
  auto& log = Logger::instance();
  ASSERT_TRUE(log.set_file(path));
  log.set_level(LogLevel::info);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        KVIKIO_LOG_INFO("thread ", t, " line ", i, " end");
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  log.set_file("");
  std::istringstream lines{read_file(path)};
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_EQ(line.rfind("[KvikIO] ", 0), 0U) << line;
    EXPECT_EQ(line.substr(line.size() - 4), " end") << line;
  }
  EXPECT_EQ(count, 800);
  std::remove(path.c_str());
}

}  // namespace
