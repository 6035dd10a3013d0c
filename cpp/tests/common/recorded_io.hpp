/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Operations for monitors to observe: made with the recorder the library's calls use (no real
 * I/O, any backend), or real host reads and writes of a temporary file; and a monitor that
 * makes a completion arrive late.
 */
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/detail/observation_recorder.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/observation.hpp>

#include "common/temp_dir.hpp"

namespace kvikio::test {

/// Whether `text` holds `part`.
inline bool contains(std::string const& text, std::string const& part)
{
  return text.find(part) != std::string::npos;
}

/// An operation of `size` bytes begun as a call of the library begins one; finish it to end it.
inline std::unique_ptr<detail::LogicalObservationRecorder> begin_operation(
  std::size_t size,
  IoBackend backend           = IoBackend::POSIX,
  TransferDirection direction = TransferDirection::READ)
{
  return std::make_unique<detail::LogicalObservationRecorder>(
    backend, direction, MemoryKind::HOST, 0, size);
}

/// One whole operation moving `transferred` of `size` bytes, lasting at least `pause`.
inline void operation(std::size_t size,
                      std::size_t transferred,
                      IoBackend backend           = IoBackend::POSIX,
                      TransferDirection direction = TransferDirection::READ,
                      Duration pause              = std::chrono::microseconds{50})
{
  auto const recorder = begin_operation(size, backend, direction);
  std::this_thread::sleep_for(pause);
  recorder->finish(transferred);
}

/// A monitor that holds up the first completion after arm() for 60 ms: registered before
/// another monitor, it makes that completion reach the other one late.
class CompletionDelayer final : public Monitor {
 public:
  CompletionDelayer() : id_{register_monitor(this)} {}
  ~CompletionDelayer() override { unregister_monitor(id_); }
  CompletionDelayer(CompletionDelayer const&)            = delete;
  CompletionDelayer& operator=(CompletionDelayer const&) = delete;
  void arm() { armed_ = true; }
  /// Returns once the armed completion is being held up.
  void wait_until_stalled() const
  {
    while (!stalled_) {
      std::this_thread::yield();
    }
  }
  void on_start(Observation const&) noexcept override {}
  void on_finish(Observation const&) noexcept override
  {
    if (!armed_.exchange(false)) { return; }
    stalled_ = true;
    std::this_thread::sleep_for(std::chrono::milliseconds{60});
  }

 private:
  std::uint64_t id_;
  std::atomic<bool> armed_{false};
  std::atomic<bool> stalled_{false};
};

/// A file of `size` bytes, read and written whole with FileHandle (host memory).
class HostFile {
 public:
  explicit HostFile(std::size_t size) : buf_(size, 0x5A) { write_file(path_, buf_); }
  std::size_t read()
  {
    FileHandle file{path_, "r"};
    return file.pread(buf_.data(), buf_.size()).get();
  }
  std::size_t write()
  {
    FileHandle file{path_, "r+"};
    return file.pwrite(buf_.data(), buf_.size()).get();
  }
  /// A write through a read-only handle: fails.
  void write_read_only()
  {
    FileHandle file{path_, "r"};
    file.pwrite(buf_.data(), buf_.size()).get();
  }

 private:
  TempDir dir_;
  std::string path_ = dir_.file("data");
  std::vector<std::uint8_t> buf_;
};

}  // namespace kvikio::test
