/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/observation.hpp>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/error.hpp>

namespace kvikio {
namespace {

// A registered monitor. `active` counts the threads inside one of its callbacks; `gone` is set
// when it is unregistered. A notifier raises `active` before it reads `gone`, and unregistering
// sets `gone` before it reads `active` (both sequentially consistent): either the notifier sees
// it gone and skips it, or unregistering sees the callback and waits for it to end.
struct Entry {
  std::uint64_t id;
  ObservationKind kind;
  Monitor* monitor;
  std::atomic<unsigned> active{0};
  std::atomic<bool> gone{false};
};
using Entries = std::vector<std::shared_ptr<Entry>>;

// The monitors, published as an immutable list: a notification reads it with one atomic load,
// so unregistering never waits behind a stream of I/O, only for the callbacks already running.
// A list replaced is freed once no notification reads any list (`readers` is raised before a
// notification loads the list and checked after a new one is published, both sequentially
// consistent: a notification that starts later reads the new list).
struct Registry {
  std::mutex mutex;  // serialises changes of the list
  std::unique_ptr<Entries const> current{std::make_unique<Entries const>()};
  std::vector<std::unique_ptr<Entries const>> retired;  // replaced, perhaps still read
  std::atomic<Entries const*> entries{current.get()};
  std::atomic<std::size_t> readers{0};
  std::atomic<std::size_t> count{0};
  std::atomic<std::uint64_t> next_monitor_id{1};
  std::atomic<std::uint64_t> next_observation_id{1};
};

Registry& registry()
{
  static auto* const instance = new Registry();  // never destroyed: I/O may run during exit
  return *instance;
}

// Around fork() the lock is held, so the child finds the list whole. The child has none of the
// threads that were inside callbacks or reading the list: their counts are forgotten, or
// unregistering would wait for them forever.
[[maybe_unused]] int const fork_handlers_registered =
  ::pthread_atfork([] { registry().mutex.lock(); },
                   [] { registry().mutex.unlock(); },
                   [] {
                     for (auto const& entry : *registry().entries.load()) {
                       entry->active.store(0);
                     }
                     registry().readers.store(0);
                     registry().mutex.unlock();
                   });

// Makes `next` the list notifications read (under the registry's lock).
void publish(Registry& r, std::unique_ptr<Entries const> next)
{
  r.retired.reserve(r.retired.size() + 1);  // so that nothing can fail once it is published
  r.count.store(next->size());
  r.entries.store(next.get());
  r.retired.push_back(std::exchange(r.current, std::move(next)));
  if (r.readers.load() == 0) { r.retired.clear(); }
}

// Set while this thread runs a callback: nested notifications are dropped, and calls into the
// library's I/O or the registry are refused.
thread_local bool in_callback = false;

template <typename Call>
void notify(Observation const& observation, Call call) noexcept
{
  if (!detail::monitoring_enabled() || in_callback) { return; }
  auto& r = registry();
  r.readers.fetch_add(1);
  in_callback = true;
  for (auto const& entry : *r.entries.load()) {
    if (entry->kind != observation.kind) { continue; }
    entry->active.fetch_add(1);
    if (!entry->gone.load()) { call(*entry->monitor); }
    entry->active.fetch_sub(1);
  }
  in_callback = false;
  r.readers.fetch_sub(1);
}

}  // namespace

ClockAnchor ClockAnchor::now() noexcept
{
  ClockAnchor anchor;
  anchor.steady = Clock::now();
  anchor.wall   = std::chrono::system_clock::now();
  return anchor;
}

std::string_view to_string(IoBackend backend) noexcept
{
  switch (backend) {
    case IoBackend::POSIX: return "POSIX";
    case IoBackend::GDS: return "GDS";
    case IoBackend::MMAP: return "MMAP";
    case IoBackend::REMOTE_HTTP: return "REMOTE_HTTP";
    case IoBackend::REMOTE_HDFS: return "REMOTE_HDFS";
  }
  return "Unknown";
}

std::string_view to_string(TransferDirection direction) noexcept
{
  switch (direction) {
    case TransferDirection::READ: return "READ";
    case TransferDirection::WRITE: return "WRITE";
  }
  return "Unknown";
}

std::string_view to_string(MemoryKind memory_kind) noexcept
{
  switch (memory_kind) {
    case MemoryKind::HOST: return "HOST";
    case MemoryKind::DEVICE: return "DEVICE";
  }
  return "Unknown";
}

std::string_view to_string(ObservationKind kind) noexcept
{
  return kind == ObservationKind::LOGICAL ? "LOGICAL" : "Unknown";
}

std::uint64_t register_monitor(Monitor* monitor, ObservationKind kind)
{
  KVIKIO_EXPECT(monitor != nullptr, "the monitor must not be null", std::invalid_argument);
  KVIKIO_EXPECT(
    !in_callback, "cannot register a monitor from inside a monitor callback", std::runtime_error);
  auto& r        = registry();
  auto entry     = std::make_shared<Entry>();
  entry->id      = r.next_monitor_id.fetch_add(1);
  entry->kind    = kind;
  entry->monitor = monitor;
  std::lock_guard const lock{r.mutex};
  auto next = std::make_unique<Entries>(*r.entries.load());
  next->push_back(entry);
  publish(r, std::move(next));
  return entry->id;
}

void unregister_monitor(std::uint64_t id)
{
  KVIKIO_EXPECT(
    !in_callback, "cannot unregister a monitor from inside a monitor callback", std::runtime_error);
  auto& r = registry();
  std::shared_ptr<Entry> removed;
  {
    std::lock_guard const lock{r.mutex};
    auto next = std::make_unique<Entries>();
    for (auto const& entry : *r.entries.load()) {
      if (entry->id == id) {
        removed = entry;
      } else {
        next->push_back(entry);
      }
    }
    if (!removed) { return; }
    publish(r, std::move(next));
  }
  removed->gone.store(true);
  // The callbacks already running end soon (they must be light): wait for them.
  for (unsigned spins = 0; removed->active.load() != 0; ++spins) {
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

namespace detail {

void expect_not_in_monitor()
{
  KVIKIO_EXPECT(!in_callback, "a monitor must not call back into KvikIO", std::runtime_error);
}

TimePoint now() noexcept { return Clock::now(); }

bool monitoring_enabled() noexcept { return registry().count.load(std::memory_order_acquire) != 0; }

void notify_started(Observation const& observation) noexcept
{
  notify(observation, [&](Monitor& monitor) { monitor.on_start(observation); });
}

void notify_finished(Observation const& observation) noexcept
{
  notify(observation, [&](Monitor& monitor) { monitor.on_finish(observation); });
}

LogicalObservationRecorder::LogicalObservationRecorder(IoBackend backend,
                                                       TransferDirection direction,
                                                       MemoryKind memory_kind,
                                                       std::size_t offset,
                                                       std::size_t size,
                                                       std::string_view source,
                                                       char const* http_method) noexcept
  : active_{monitoring_enabled()}
{
  if (!active_) { return; }
  observation_.source      = source;
  observation_.backend     = backend;
  observation_.direction   = direction;
  observation_.memory_kind = memory_kind;
  observation_.offset      = offset;
  observation_.size        = size;
  observation_.http_method = http_method;
  observation_.id          = registry().next_observation_id.fetch_add(1);
  observation_.start       = now();
  notify_started(observation_);
}

LogicalObservationRecorder::LogicalObservationRecorder(IoBackend backend,
                                                       TransferDirection direction,
                                                       MemoryKind memory_kind,
                                                       std::size_t offset,
                                                       std::size_t size,
                                                       std::shared_ptr<std::string const> source,
                                                       char const* http_method) noexcept
  : LogicalObservationRecorder(backend,
                               direction,
                               memory_kind,
                               offset,
                               size,
                               source ? std::string_view{*source} : std::string_view{},
                               http_method)
{
  source_ = std::move(source);
}

LogicalObservationRecorder::~LogicalObservationRecorder() { finish_with_failure(); }

void LogicalObservationRecorder::finish(std::size_t bytes_transferred) noexcept
{
  if (!active_ || emitted_.exchange(true)) { return; }
  observation_.bytes_transferred = bytes_transferred;
  emit();
}

void LogicalObservationRecorder::finish_with_failure() noexcept
{
  if (!active_ || emitted_.exchange(true)) { return; }
  observation_.ok                = false;
  observation_.bytes_transferred = 0;
  emit();
}

void LogicalObservationRecorder::emit() noexcept
{
  observation_.end = now();
  notify_finished(observation_);
}

}  // namespace detail
}  // namespace kvikio
