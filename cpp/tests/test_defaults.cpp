/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The process-wide settings: documented defaults, setters that validate, the thread pool size,
 * and concurrent use.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>

#include "common/thread_names.hpp"

using kvikio::defaults;

namespace {

// Each test runs in a fresh process (ctest), so the settings are built after this clears the
// developer's KVIKIO_* variables.
class Defaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite()
  {
    for (char** env = environ; *env != nullptr;) {
      std::string const entry{*env};
      if (entry.rfind("KVIKIO_", 0) == 0) {
        ::unsetenv(entry.substr(0, entry.find('=')).c_str());
        env = environ;  // unsetenv may move the array
      } else {
        ++env;
      }
    }
  }
};

// A setter given a bad value throws std::invalid_argument naming the setter, and changes nothing.
template <typename Get, typename Set, typename V>
void expect_rejected(Get get, Set set, V bad, std::string const& setter)
{
  auto const before = get();
  try {
    set(bad);
    FAIL() << setter << " accepted an invalid value";
  } catch (std::invalid_argument const& e) {
    EXPECT_NE(std::string{e.what()}.find(setter), std::string::npos) << e.what();
  }
  EXPECT_EQ(get(), before);
}

// A setter given a good value is seen by the getter.
template <typename Get, typename Set, typename V>
void expect_round_trip(Get get, Set set, V value)
{
  auto const before = get();
  set(value);
  EXPECT_EQ(get(), value);
  set(before);
}

TEST_F(Defaults, DocumentedDefaults)
{
  EXPECT_EQ(defaults::compat_mode(), kvikio::CompatMode::AUTO);
  EXPECT_EQ(defaults::thread_pool_nthreads(), 1U);
  EXPECT_EQ(defaults::num_threads(), 1U);
  EXPECT_EQ(defaults::thread_pool().get_thread_count(), 1U);
  EXPECT_EQ(defaults::task_size(), 4U << 20);
  EXPECT_EQ(defaults::gds_threshold(), 16U << 10);
  EXPECT_EQ(defaults::bounce_buffer_size(), 16U << 20);
  EXPECT_EQ(defaults::num_bounce_buffers(), 4U);
  EXPECT_EQ(defaults::http_max_attempts(), 3U);
  EXPECT_EQ(defaults::http_timeout(), 60);
  EXPECT_EQ(defaults::http_status_codes(), (std::vector<int>{429, 500, 502, 503, 504}));
  EXPECT_FALSE(defaults::auto_direct_io_read());
  EXPECT_FALSE(defaults::auto_direct_io_read_overread());
  EXPECT_TRUE(defaults::auto_direct_io_write());
  EXPECT_FALSE(defaults::thread_pool_per_block_device());
  EXPECT_EQ(defaults::local_io_backend(), kvikio::LocalIOBackend::AUTO);
  EXPECT_EQ(defaults::remote_backend(), kvikio::RemoteBackendType::LIBCURL_EASY);
  EXPECT_EQ(defaults::remote_max_connections(), 8U);
  EXPECT_EQ(defaults::remote_io_num_reactors(), 1U);
  EXPECT_EQ(defaults::remote_io_max_concurrent_requests(), 0U);
  EXPECT_EQ(defaults::remote_io_reactor_dispatch(), kvikio::RemoteReactorDispatch::PER_CHUNK);
  EXPECT_EQ(defaults::event_pool_max_per_context(), 0U);
  EXPECT_EQ(defaults::ipc_export_cache_size(), 1024U);
  EXPECT_EQ(defaults::ipc_open_cache_size(), 128U);
}

TEST_F(Defaults, SettersRoundTrip)
{
  expect_round_trip(defaults::compat_mode, defaults::set_compat_mode, kvikio::CompatMode::ON);
  expect_round_trip(defaults::task_size, defaults::set_task_size, std::size_t{1} << 20);
  expect_round_trip(defaults::gds_threshold, defaults::set_gds_threshold, std::size_t{0});
  expect_round_trip(defaults::bounce_buffer_size, defaults::set_bounce_buffer_size, 12345UL);
  expect_round_trip(defaults::num_bounce_buffers, defaults::set_num_bounce_buffers, 1UL);
  expect_round_trip(defaults::http_max_attempts, defaults::set_http_max_attempts, 7UL);
  expect_round_trip(defaults::http_timeout, defaults::set_http_timeout, 9L);
  expect_round_trip(
    defaults::http_status_codes, defaults::set_http_status_codes, std::vector<int>{418});
  expect_round_trip(defaults::auto_direct_io_read, defaults::set_auto_direct_io_read, true);
  expect_round_trip(
    defaults::auto_direct_io_read_overread, defaults::set_auto_direct_io_read_overread, true);
  expect_round_trip(defaults::auto_direct_io_write, defaults::set_auto_direct_io_write, false);
  expect_round_trip(
    defaults::thread_pool_per_block_device, defaults::set_thread_pool_per_block_device, true);
  expect_round_trip(
    defaults::local_io_backend, defaults::set_local_io_backend, kvikio::LocalIOBackend::IO_URING);
  expect_round_trip(
    defaults::local_io_backend, defaults::set_local_io_backend, kvikio::LocalIOBackend::POSIX);
  expect_round_trip(defaults::remote_backend,
                    defaults::set_remote_backend,
                    kvikio::RemoteBackendType::LIBCURL_MULTI_POLL);
  expect_round_trip(defaults::remote_max_connections, defaults::set_remote_max_connections, 3UL);
  expect_round_trip(defaults::remote_io_num_reactors, defaults::set_remote_io_num_reactors, 2U);
  expect_round_trip(defaults::remote_io_reactor_dispatch,
                    defaults::set_remote_io_reactor_dispatch,
                    kvikio::RemoteReactorDispatch::PER_PREAD);
  expect_round_trip(defaults::remote_io_max_concurrent_requests,
                    defaults::set_remote_io_max_concurrent_requests,
                    std::size_t{64});
  expect_round_trip(
    defaults::event_pool_max_per_context, defaults::set_event_pool_max_per_context, 5UL);
  expect_round_trip(defaults::ipc_export_cache_size, defaults::set_ipc_export_cache_size, 0UL);
  expect_round_trip(defaults::ipc_open_cache_size, defaults::set_ipc_open_cache_size, 0UL);
}

TEST_F(Defaults, SettersRejectInvalidValues)
{
  expect_rejected(defaults::compat_mode,
                  defaults::set_compat_mode,
                  static_cast<kvikio::CompatMode>(7),
                  "set_compat_mode");
  expect_rejected(defaults::thread_pool_nthreads,
                  defaults::set_thread_pool_nthreads,
                  0U,
                  "set_thread_pool_nthreads");
  expect_rejected(defaults::task_size, defaults::set_task_size, 0UL, "set_task_size");
  expect_rejected(
    defaults::bounce_buffer_size, defaults::set_bounce_buffer_size, 0UL, "set_bounce_buffer_size");
  expect_rejected(
    defaults::num_bounce_buffers, defaults::set_num_bounce_buffers, 0UL, "set_num_bounce_buffers");
  expect_rejected(
    defaults::http_max_attempts, defaults::set_http_max_attempts, 0UL, "set_http_max_attempts");
  expect_rejected(defaults::http_timeout, defaults::set_http_timeout, 0L, "set_http_timeout");
  expect_rejected(defaults::http_timeout, defaults::set_http_timeout, -3L, "set_http_timeout");
  expect_rejected(defaults::http_status_codes,
                  defaults::set_http_status_codes,
                  std::vector<int>{503, 42},
                  "set_http_status_codes");
  expect_rejected(defaults::local_io_backend,
                  defaults::set_local_io_backend,
                  static_cast<kvikio::LocalIOBackend>(9),
                  "set_local_io_backend");
  expect_rejected(defaults::remote_backend,
                  defaults::set_remote_backend,
                  static_cast<kvikio::RemoteBackendType>(9),
                  "set_remote_io_backend");
  expect_rejected(defaults::remote_max_connections,
                  defaults::set_remote_max_connections,
                  0UL,
                  "set_remote_max_connections");
  expect_rejected(defaults::remote_io_num_reactors,
                  defaults::set_remote_io_num_reactors,
                  0U,
                  "set_remote_io_num_reactors");
  expect_rejected(defaults::remote_io_reactor_dispatch,
                  defaults::set_remote_io_reactor_dispatch,
                  static_cast<kvikio::RemoteReactorDispatch>(7),
                  "set_remote_io_reactor_dispatch");
}

TEST_F(Defaults, ThreadCountResizesTheGlobalPool)
{
  defaults::set_thread_pool_nthreads(3);
  EXPECT_EQ(defaults::thread_pool().get_thread_count(), 3U);
  EXPECT_EQ(defaults::num_threads(), 3U);
  defaults::set_num_threads(2);
  EXPECT_EQ(defaults::thread_pool().get_thread_count(), 2U);
  auto answer = defaults::thread_pool().submit_task([] { return 41 + 1; });
  EXPECT_EQ(answer.get(), 42);
}

TEST_F(Defaults, ConcurrentGettersAndSetters)
{
  std::atomic<bool> bad{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &bad] {
      for (std::size_t i = 1; i <= 2000; ++i) {
        if (t % 2 == 0) {
          defaults::set_task_size(i);
          defaults::set_http_status_codes({500, static_cast<int>(100 + i % 400)});
        } else {
          if (defaults::task_size() == 0) { bad = true; }
          if (defaults::http_status_codes().size() == 1) { bad = true; }
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_FALSE(bad);
}

}  // namespace

// The pool's threads are kvikio-0 to kvikio-(n-1), after every resize (as upstream's).
TEST_F(Defaults, PoolThreadsAreNamedFromZeroAfterEachResize)
{
  for (unsigned int n : {3U, 2U}) {
    kvikio::defaults::set_thread_pool_nthreads(n);
    std::vector<std::string> expected;
    for (unsigned int i = 0; i < n; ++i) {
      expected.push_back("kvikio-" + std::to_string(i));
    }
    std::vector<std::string> names;
    for (int attempt = 0; attempt < 500 && names != expected; ++attempt) {
      names.clear();
      for (auto const& name : kvikio::test::thread_names()) {
        if (name.rfind("kvikio-", 0) == 0) { names.push_back(name); }
      }
      std::sort(names.begin(), names.end());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(names, expected);
  }
}
