/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Environment parsing: one parameterised case per setting (default, override, invalid value),
 * plus the alias rules. Everything goes through detail::Settings::from_environment(), the one
 * place that reads KVIKIO_* variables.
 */
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/env.hpp>
#include <kvikio/file_handle.hpp>

#include "common/env_guard.hpp"

using kvikio::detail::Settings;
using kvikio::test::EnvGuard;

namespace {

template <typename T>
std::string show(T const& value)
{
  std::ostringstream out;
  if constexpr (std::is_same_v<T, bool>) {
    out << (value ? "true" : "false");
  } else if constexpr (std::is_same_v<T, kvikio::CompatMode>) {
    out << (value == kvikio::CompatMode::ON    ? "ON"
            : value == kvikio::CompatMode::OFF ? "OFF"
                                               : "AUTO");
  } else if constexpr (std::is_same_v<T, kvikio::LocalIOBackend>) {
    out << kvikio::detail::local_io_backend_name(value);
  } else if constexpr (std::is_same_v<T, kvikio::RemoteBackendType>) {
    out << (value == kvikio::RemoteBackendType::LIBCURL_EASY ? "LIBCURL_EASY"
                                                             : "LIBCURL_MULTI_POLL");
  } else if constexpr (std::is_same_v<T, kvikio::RemoteReactorDispatch>) {
    out << (value == kvikio::RemoteReactorDispatch::PER_CHUNK ? "PER_CHUNK" : "PER_PREAD");
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      out << (i == 0 ? "" : ",") << value[i];
    }
  } else {
    out << value;
  }
  return out.str();
}

struct Row {
  std::string variable;
  std::function<std::string(Settings const&)> field;  // the setting, shown as text
  std::string expected_default;
  std::string valid_text;      // an environment value ...
  std::string expected_valid;  // ... and the setting it must produce
  std::string invalid_text;
};

#define FIELD(member) [](Settings const& s) { return show(s.member); }

// Expected values are written out here, independently of Settings' initialisers.
std::vector<Row> const rows{
  {"KVIKIO_COMPAT_MODE", FIELD(compat_mode), "AUTO", "off", "OFF", "maybe"},
  {"KVIKIO_NTHREADS", FIELD(thread_pool_nthreads), "1", "8", "8", "0"},
  {"KVIKIO_NUM_THREADS", FIELD(thread_pool_nthreads), "1", " 6 ", "6", "-1"},
  {"KVIKIO_TASK_SIZE", FIELD(task_size), "4194304", "1048576", "1048576", "abc"},
  {"KVIKIO_GDS_THRESHOLD", FIELD(gds_threshold), "16384", "0", "0", "-5"},
  {"KVIKIO_BOUNCE_BUFFER_SIZE", FIELD(bounce_buffer_size), "16777216", "8388608", "8388608", "0"},
  {"KVIKIO_NUM_BOUNCE_BUFFERS", FIELD(num_bounce_buffers), "4", "8", "8", "0"},
  {"KVIKIO_HTTP_MAX_ATTEMPTS", FIELD(http_max_attempts), "3", "5", "5", "0"},
  {"KVIKIO_HTTP_TIMEOUT", FIELD(http_timeout), "60", "5", "5", "1.5"},
  {"KVIKIO_HTTP_STATUS_CODES",
   FIELD(http_status_codes),
   "429,500,502,503,504",
   "503, 429",
   "503,429",
   "503,abc"},
  {"KVIKIO_AUTO_DIRECT_IO_READ", FIELD(auto_direct_io_read), "false", "YES", "true", "maybe"},
  {"KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD",
   FIELD(auto_direct_io_read_overread),
   "false",
   "1",
   "true",
   "2"},
  {"KVIKIO_AUTO_DIRECT_IO_WRITE", FIELD(auto_direct_io_write), "true", "off", "false", "nah"},
  {"KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE",
   FIELD(thread_pool_per_block_device),
   "false",
   "true",
   "true",
   "t"},
  {"KVIKIO_LOCAL_IO_BACKEND", FIELD(local_io_backend), "auto", "Posix", "posix", "aio"},
  {"KVIKIO_REMOTE_BACKEND",
   FIELD(remote_io_backend),
   "LIBCURL_EASY",
   "libcurl_multi_poll",
   "LIBCURL_MULTI_POLL",
   "curl"},
  {"KVIKIO_REMOTE_IO_BACKEND",
   FIELD(remote_io_backend),
   "LIBCURL_EASY",
   "MULTI_POLL",
   "LIBCURL_MULTI_POLL",
   "poll"},
  {"KVIKIO_REMOTE_MAX_CONNECTIONS", FIELD(remote_max_connections), "8", "32", "32", "0"},
  {"KVIKIO_REMOTE_IO_NUM_REACTORS", FIELD(remote_io_num_reactors), "1", "4", "4", "0"},
  {"KVIKIO_REMOTE_IO_REACTOR_DISPATCH",
   FIELD(remote_io_reactor_dispatch),
   "PER_CHUNK",
   "per_pread",
   "PER_PREAD",
   "sideways"},
  {"KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS",
   FIELD(remote_io_max_concurrent_requests),
   "0",
   "64",
   "64",
   "-1"},
  {"KVIKIO_EVENT_POOL_MAX_PER_CONTEXT", FIELD(event_pool_max_per_context), "0", "16", "16", "x"},
  {"KVIKIO_IPC_EXPORT_CACHE_SIZE", FIELD(ipc_export_cache_size), "1024", "0", "0", "-1"},
  {"KVIKIO_IPC_OPEN_CACHE_SIZE", FIELD(ipc_open_cache_size), "128", "7", "7", "big"},
};

// Every variable of the table, unset, so that the developer's shell cannot leak in.
std::vector<std::string> all_variables()
{
  std::vector<std::string> names{"KVIKIO_LOG_LEVEL"};
  for (auto const& row : rows) {
    names.push_back(row.variable);
  }
  return names;
}

class SettingFromEnvironment : public ::testing::TestWithParam<Row> {
 protected:
  void SetUp() override
  {
    for (auto const& name : all_variables()) {
      ::unsetenv(name.c_str());
    }
  }
};

TEST_P(SettingFromEnvironment, DefaultWhenUnset)
{
  auto const& row = GetParam();
  EXPECT_EQ(row.field(Settings::from_environment()), row.expected_default);
}

TEST_P(SettingFromEnvironment, DefaultWhenEmpty)
{
  auto const& row = GetParam();
  EnvGuard const env{{row.variable, "  "}};
  EXPECT_EQ(row.field(Settings::from_environment()), row.expected_default);
}

TEST_P(SettingFromEnvironment, OverriddenByEnvironment)
{
  auto const& row = GetParam();
  EnvGuard const env{{row.variable, row.valid_text}};
  EXPECT_EQ(row.field(Settings::from_environment()), row.expected_valid);
}

TEST_P(SettingFromEnvironment, InvalidValueNamesVariableAndValue)
{
  auto const& row = GetParam();
  EnvGuard const env{{row.variable, row.invalid_text}};
  try {
    (void)Settings::from_environment();
    FAIL() << row.variable << "=" << row.invalid_text << " was accepted";
  } catch (std::invalid_argument const& e) {
    EXPECT_NE(std::string{e.what()}.find(row.variable + "=" + row.invalid_text), std::string::npos)
      << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(AllSettings,
                         SettingFromEnvironment,
                         ::testing::ValuesIn(rows),
                         [](auto const& info) { return info.param.variable; });

TEST(SettingAliases, ThreadCountAliasesMustAgree)
{
  {
    EnvGuard const env{{"KVIKIO_NTHREADS", "2"}, {"KVIKIO_NUM_THREADS", "2"}};
    EXPECT_EQ(Settings::from_environment().thread_pool_nthreads, 2U);
  }
  EnvGuard const env{{"KVIKIO_NTHREADS", "2"}, {"KVIKIO_NUM_THREADS", "3"}};
  try {
    (void)Settings::from_environment();
    FAIL() << "conflicting thread counts were accepted";
  } catch (std::invalid_argument const& e) {
    // Upstream's wording, as its getenv_or() says it (docs/migration.md).
    std::string const what = e.what();
    EXPECT_EQ(what.rfind("Environment variable KVIKIO_NUM_THREADS (3) has already been set by "
                         "its alias KVIKIO_NTHREADS (2) with a different value.",
                         0),
              0U)
      << what;
  }
}

TEST(SettingAliases, RemoteBackendSpellingsMustAgree)
{
  {
    EnvGuard const env{{"KVIKIO_REMOTE_BACKEND", "LIBCURL_MULTI_POLL"},
                       {"KVIKIO_REMOTE_IO_BACKEND", "MULTI_POLL"}};
    EXPECT_EQ(Settings::from_environment().remote_io_backend,
              kvikio::RemoteBackendType::LIBCURL_MULTI_POLL);
  }
  EnvGuard const env{{"KVIKIO_REMOTE_BACKEND", "LIBCURL_EASY"},
                     {"KVIKIO_REMOTE_IO_BACKEND", "MULTI_POLL"}};
  EXPECT_THROW((void)Settings::from_environment(), std::invalid_argument);
}

// The log level decides only what is logged: a typo is the logger's warning (test_logger), never
// an error of the settings that would stop I/O.
TEST(SettingAliases, LogLevelTypoIsNoSettingsError)
{
  EnvGuard const env{{"KVIKIO_LOG_LEVEL", "verbose"}};
  EXPECT_NO_THROW((void)Settings::from_environment());
}

TEST(ParseUnsigned, RejectsEverythingButPlainDecimal)
{
  using kvikio::detail::parse_unsigned;
  EXPECT_EQ(parse_unsigned("V", "0", 0, 10), 0U);
  EXPECT_EQ(parse_unsigned("V", "18446744073709551615", 0, UINT64_MAX), UINT64_MAX);
  for (auto bad : {"", "+1", "-1", "0x10", "1e3", "12abc", "1 2", "18446744073709551616", "11"}) {
    EXPECT_THROW(parse_unsigned("V", bad, 0, 10), std::invalid_argument) << bad;
  }
}

// A number the setting does not take is "out of range", with the range; text that is no number
// keeps upstream's "unknown config value".
TEST(ParseUnsigned, OutOfRangeIsSaidAsSuch)
{
  using kvikio::detail::parse_unsigned;
  auto message = [](char const* value) {
    try {
      (void)parse_unsigned("KVIKIO_V", value, 2, 10);
    } catch (std::invalid_argument const& e) {
      return std::string{e.what()};
    }
    return std::string{"no error"};
  };
  EXPECT_EQ(message("11"), "KVIKIO_V=11 is out of range: expected an integer in [2, 10]");
  EXPECT_EQ(message("1"), "KVIKIO_V=1 is out of range: expected an integer in [2, 10]");
  EXPECT_EQ(message("1x").rfind("unknown config value KVIKIO_V=1x", 0), 0U) << message("1x");
}

// Messages name where in the library a check failed, never the build machine's folders.
TEST(Messages, LocationsNameTheLibrarysSourceNotTheBuildFolder)
{
  std::string text;
  try {
    kvikio::FileHandle const file{"/nonexistent-kvikio-dir/file", "r"};
  } catch (std::exception const& e) {
    text = e.what();
  }
  ASSERT_FALSE(text.empty());
  EXPECT_NE(text.find(" at: kvikio/src/"), std::string::npos) << text;
  EXPECT_EQ(text.find(KVIKIO_SOURCE_DIR), std::string::npos) << text;
}

TEST(ParseHttpStatusCodes, ListsAndBadElements)
{
  using kvikio::detail::parse_http_status_codes;
  EXPECT_EQ(parse_http_status_codes("V", "500"), std::vector<int>{500});
  EXPECT_EQ(parse_http_status_codes("V", " 429 ,503"), (std::vector<int>{429, 503}));
  for (auto bad : {"", ",", "500,", "99", "600", "50x", "500;503"}) {
    EXPECT_THROW(parse_http_status_codes("V", bad), std::invalid_argument) << bad;
  }
}

TEST(ParseBool, AcceptedSpellings)
{
  using kvikio::detail::parse_bool;
  for (auto yes : {"true", "TRUE", "On", "yes", "1"}) {
    EXPECT_TRUE(parse_bool("V", yes)) << yes;
  }
  for (auto no : {"false", "Off", "NO", "0"}) {
    EXPECT_FALSE(parse_bool("V", no)) << no;
  }
  EXPECT_THROW(parse_bool("V", "y"), std::invalid_argument);
}

TEST(ParseCompatMode, AcceptedSpellings)
{
  using kvikio::CompatMode;
  using kvikio::detail::parse_compat_mode_str;
  EXPECT_EQ(parse_compat_mode_str("ON"), CompatMode::ON);
  EXPECT_EQ(parse_compat_mode_str("yes"), CompatMode::ON);
  EXPECT_EQ(parse_compat_mode_str("False"), CompatMode::OFF);
  EXPECT_EQ(parse_compat_mode_str("0"), CompatMode::OFF);
  EXPECT_EQ(parse_compat_mode_str("Auto"), CompatMode::AUTO);
  EXPECT_THROW(parse_compat_mode_str("a"), std::invalid_argument);
}

TEST(GetenvOr, UpstreamCompatibleHelpers)
{
  EnvGuard const env{{"KVIKIO_TEST_A", "17"}, {"KVIKIO_TEST_B", "17"}, {"KVIKIO_TEST_C", "x"}};
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_TEST_A", 3), 17);
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_TEST_UNSET", 3), 3);
  EXPECT_THROW(kvikio::getenv_or("KVIKIO_TEST_C", 3), std::invalid_argument);
  auto [name, value, was_set] = kvikio::getenv_or({"KVIKIO_TEST_UNSET", "KVIKIO_TEST_B"}, 5UL);
  EXPECT_EQ(name, "KVIKIO_TEST_B");
  EXPECT_EQ(value, 17UL);
  EXPECT_TRUE(was_set);
  auto [none, fallback, none_set] = kvikio::getenv_or({"KVIKIO_TEST_UNSET"}, true);
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(fallback);
  EXPECT_FALSE(none_set);
}

// docs/settings.md is the users' table of settings. It is held to `rows` above, which the cases
// above hold to the code: so the page says what the code does.
std::string read_file(std::filesystem::path const& path)
{
  std::ifstream in{path};
  EXPECT_TRUE(in) << "cannot open " << path;
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

// The KVIKIO_* names in `text`; only those between double quotes if `quoted` (in source code:
// the KVIKIO_* macros are not variables). A scan by hand: GCC 12 warns inside <regex> under the
// sanitizers, and warnings are errors.
std::set<std::string> variables_named_in(std::string const& text, bool quoted = false)
{
  auto const is_name_char = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  std::set<std::string> names;
  for (auto at = text.find("KVIKIO_"); at != std::string::npos; at = text.find("KVIKIO_", at + 1)) {
    auto end = at + 7;
    while (end < text.size() && is_name_char(text[end])) {
      ++end;
    }
    if (end == at + 7 || (at > 0 && is_name_char(text[at - 1]))) { continue; }
    bool const in_quotes = at > 0 && text[at - 1] == '"' && end < text.size() && text[end] == '"';
    if (!quoted || in_quotes) { names.insert(text.substr(at, end - at)); }
  }
  return names;
}

struct DocumentedSetting {
  std::string line;                 // the table row, for messages
  std::set<std::string> variables;  // its environment variables
  std::string default_text;         // its default, as the page shows it
  std::string accepted;             // its accepted values, as the page shows them
};

// The rows of the page's main table: `| setting | variables | default | accepted values |`.
std::vector<DocumentedSetting> settings_table()
{
  std::istringstream page{read_file(std::filesystem::path{KVIKIO_SOURCE_DIR} / "docs/settings.md")};
  std::vector<DocumentedSetting> table;
  bool in_table = false;
  for (std::string line; std::getline(page, line);) {
    if (line.rfind("| setting (`defaults::`)", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("|---", 0) == 0) { continue; }
    if (line.rfind("| ", 0) != 0) { break; }
    std::vector<std::string> cells;
    std::istringstream row{line.substr(2)};
    for (std::string cell; std::getline(row, cell, '|') && cells.size() < 4;) {
      cells.push_back(cell);
    }
    EXPECT_EQ(cells.size(), 4U) << line;
    if (cells.size() < 4) { continue; }
    // The default: its first word without backticks ("4194304 (4 MiB)" is 4194304).
    std::string value = cells[2];
    value.erase(std::remove(value.begin(), value.end(), '`'), value.end());
    std::istringstream words{value};
    std::string first;
    words >> first;
    table.push_back({line, variables_named_in(cells[1]), first, cells[3]});
  }
  return table;
}

TEST(SettingsPage, EveryRowMatchesTheCode)
{
  auto const table = settings_table();
  ASSERT_FALSE(table.empty()) << "no settings table found in docs/settings.md";
  std::set<std::string> documented;
  for (auto const& setting : table) {
    EXPECT_FALSE(setting.variables.empty()) << "a row names no variable: " << setting.line;
    for (auto const& name : setting.variables) {
      documented.insert(name);
      auto const row =
        std::find_if(rows.begin(), rows.end(), [&](Row const& r) { return r.variable == name; });
      if (row == rows.end()) {
        ADD_FAILURE() << name << " is on the settings page but is not a setting: " << setting.line;
        continue;
      }
      EXPECT_EQ(setting.default_text, row->expected_default)
        << "the page's default of " << name << " is not the code's: " << setting.line;
    }
  }
  for (auto const& row : rows) {
    EXPECT_TRUE(documented.count(row.variable) == 1)
      << row.variable << " is missing from the table of docs/settings.md";
  }
}

// Every integer setting's accepted values begin with its bounds in the code, `min..max` (the
// greatest value written 2^64-1 or 2^63-1), which its variable and its setter both keep.
TEST(SettingsPage, IntegerBoundsAreTheCodes)
{
  namespace b = kvikio::detail::bounds;
  std::map<std::string, kvikio::detail::Bounds> const code{
    {"KVIKIO_NTHREADS", b::thread_pool_nthreads},
    {"KVIKIO_TASK_SIZE", b::task_size},
    {"KVIKIO_GDS_THRESHOLD", b::gds_threshold},
    {"KVIKIO_BOUNCE_BUFFER_SIZE", b::bounce_buffer_size},
    {"KVIKIO_NUM_BOUNCE_BUFFERS", b::num_bounce_buffers},
    {"KVIKIO_HTTP_MAX_ATTEMPTS", b::http_max_attempts},
    {"KVIKIO_HTTP_TIMEOUT", b::http_timeout},
    {"KVIKIO_REMOTE_MAX_CONNECTIONS", b::remote_max_connections},
    {"KVIKIO_REMOTE_IO_NUM_REACTORS", b::remote_io_num_reactors},
    {"KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS", b::remote_io_max_concurrent_requests},
    {"KVIKIO_EVENT_POOL_MAX_PER_CONTEXT", b::event_pool_max_per_context},
    {"KVIKIO_IPC_EXPORT_CACHE_SIZE", b::ipc_export_cache_size},
    {"KVIKIO_IPC_OPEN_CACHE_SIZE", b::ipc_open_cache_size},
  };
  auto const shown = [](std::uint64_t v) {
    if (v == ~std::uint64_t{0}) { return std::string{"2^64-1"}; }
    if (v == ~std::uint64_t{0} >> 1) { return std::string{"2^63-1"}; }
    return std::to_string(v);
  };
  std::size_t checked = 0;
  for (auto const& setting : settings_table()) {
    for (auto const& name : setting.variables) {
      auto const it = code.find(name);
      if (it == code.end()) { continue; }
      ++checked;
      std::string expected{" "};
      expected.append(shown(it->second.min)).append("..").append(shown(it->second.max));
      EXPECT_EQ(setting.accepted.rfind(expected, 0), 0U)
        << name << ": the page's accepted values do not begin with the code's bounds \"" << expected
        << "\": " << setting.line;
    }
  }
  EXPECT_EQ(checked, code.size()) << "an integer setting is missing from the page";
}

// Every KVIKIO_* variable the library reads is on the page, and the page names no other.
TEST(SettingsPage, NamesEveryVariableTheLibraryReads)
{
  std::filesystem::path const root{KVIKIO_SOURCE_DIR};
  std::set<std::string> read_by_code;
  for (auto const* dir : {"cpp/src", "cpp/include", "python/kvikio/kvikio"}) {
    for (auto const& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      auto const ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp" && ext != ".py") { continue; }
      read_by_code.merge(variables_named_in(read_file(entry.path()), /*quoted=*/true));
    }
  }
  ASSERT_TRUE(read_by_code.count("KVIKIO_TASK_SIZE") == 1) << "the source scan found nothing";
  auto const on_page = variables_named_in(read_file(root / "docs/settings.md"));
  for (auto const& name : read_by_code) {
    EXPECT_TRUE(on_page.count(name) == 1)
      << name << " is read by the library but not on docs/settings.md";
  }
  for (auto const& name : on_page) {
    EXPECT_TRUE(read_by_code.count(name) == 1)
      << name << " is on docs/settings.md but no code reads it";
  }
  // And the library knows each one: none is reported as unknown when set.
  std::vector<std::string> set_here;
  for (auto const& name : read_by_code) {
    if (std::getenv(name.c_str()) == nullptr && ::setenv(name.c_str(), "x", 0) == 0) {
      set_here.push_back(name);
    }
  }
  auto const unknown = Settings::unknown_environment();
  for (auto const& name : set_here) {
    ::unsetenv(name.c_str());
  }
  for (auto const& [name, nearest] : unknown) {
    EXPECT_EQ(read_by_code.count(name), 0U) << name << " is read by the library but unknown to it";
  }
}

// A KVIKIO_* variable the library does not read is reported, with the known name nearest to it
// when one is within 3 edits (a misspelled setting is otherwise silently ignored).
TEST(SettingsPage, UnknownVariablesAreNamedWithTheNearestKnownName)
{
  EnvGuard const env{{"KVIKIO_TASKSIZE", "5"},
                     {"KVIKIO_ENTIRELY_UNRELATED_THING", "1"},
                     {"KVIKIO_TASK_SIZE", "4096"}};
  auto const unknown = Settings::unknown_environment();
  std::map<std::string, std::string> const found(unknown.begin(), unknown.end());
  ASSERT_EQ(found.count("KVIKIO_TASKSIZE"), 1U);
  EXPECT_EQ(found.at("KVIKIO_TASKSIZE"), "KVIKIO_TASK_SIZE");
  ASSERT_EQ(found.count("KVIKIO_ENTIRELY_UNRELATED_THING"), 1U);
  EXPECT_EQ(found.at("KVIKIO_ENTIRELY_UNRELATED_THING"), "");
  EXPECT_EQ(found.count("KVIKIO_TASK_SIZE"), 0U);
}

}  // namespace
