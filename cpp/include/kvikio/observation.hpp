/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file observation.hpp
 * @brief Observation hooks: a Monitor registered with register_monitor() is told of every I/O
 * call as it starts and as it ends (one Observation per user call), on the thread doing the I/O.
 */

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <kvikio/shim/utils.hpp>

namespace kvikio {

/// @brief The clock observations are stamped with (monotonic; for spans within one process).
using Clock = std::chrono::steady_clock;
/// @brief A point in time on Clock.
using TimePoint = Clock::time_point;
/// @brief A length of time, in nanoseconds.
using Duration = std::chrono::nanoseconds;

/**
 * @brief Clock and the wall clock read together, so that a TimePoint can be shown as wall time
 * (a log line, another process, a profiler's trace). The readings are a few tens of nanoseconds
 * apart, and the wall clock may be stepped later: take a fresh anchor for a long run.
 */
struct ClockAnchor {
  TimePoint steady{};                            ///< the reading of Clock
  std::chrono::system_clock::time_point wall{};  ///< the wall clock's reading at the same moment

  /// @brief Reads both clocks, one right after the other.
  [[nodiscard]] static ClockAnchor now() noexcept;

  /// @brief `time` on the wall clock: the anchor's wall reading moved by `time - steady`.
  [[nodiscard]] std::chrono::system_clock::time_point to_wall_clock(TimePoint time) const noexcept
  {
    static_assert(std::is_integral_v<TimePoint::rep>);
    static_assert(std::is_integral_v<std::chrono::system_clock::rep>);
    return wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(time - steady);
  }
};

/// @brief What moved the bytes of an operation.
enum class IoBackend : std::uint8_t {
  POSIX = 0,    ///< pread/pwrite (or io_uring) through host memory, compat mode included
  GDS,          ///< cuFile (GPUDirect Storage)
  MMAP,         ///< a memory-mapped file (MmapHandle)
  REMOTE_HTTP,  ///< HTTP(S): plain URLs, S3, presigned URLs
  REMOTE_HDFS   ///< WebHDFS
};

/// @brief How many IoBackend values there are (an array indexed by backend has this size).
constexpr std::size_t num_io_backends = static_cast<std::size_t>(IoBackend::REMOTE_HDFS) + 1;

/// @brief Which way an operation moves bytes.
enum class TransferDirection : std::uint8_t {
  READ = 0,  ///< from the file or object into the buffer
  WRITE      ///< from the buffer into the file
};

/// @brief Where an operation's buffer is.
enum class MemoryKind : std::uint8_t {
  HOST = 0,  ///< host memory
  DEVICE     ///< device memory
};

/// @brief What an observation stands for.
enum class ObservationKind : std::uint8_t {
  LOGICAL = 0  ///< one user call (one FileHandle::pread(), however many reads it made)
};

/// @brief The enumerator's name ("POSIX", "GDS", "MMAP", "REMOTE_HTTP", "REMOTE_HDFS"), or
/// "Unknown" for a value that is none of them.
[[nodiscard]] std::string_view to_string(IoBackend backend) noexcept;
/// @brief "READ" or "WRITE" ("Unknown" otherwise).
[[nodiscard]] std::string_view to_string(TransferDirection direction) noexcept;
/// @brief "HOST" or "DEVICE" ("Unknown" otherwise).
[[nodiscard]] std::string_view to_string(MemoryKind memory_kind) noexcept;
/// @brief "LOGICAL" ("Unknown" otherwise).
[[nodiscard]] std::string_view to_string(ObservationKind kind) noexcept;

/**
 * @brief One I/O operation: what was asked, and (once finished) what came of it.
 */
struct Observation {
  TimePoint start{};                 ///< when the call began
  TimePoint end{};                   ///< when its last byte moved (zero until finished)
  std::size_t offset{};              ///< offset in the file or object
  std::size_t size{};                ///< bytes asked for
  std::size_t bytes_transferred{};   ///< bytes moved (0 for a failed operation)
  std::uint64_t id{};                ///< unique in the process (from 1); pairs a start and finish
  char const* http_method{nullptr};  ///< "GET" for remote reads, null for local I/O
  /// The file's path or the object's URL (without query, fragment or user information), owned
  /// by the handle: valid while the handle lives (copy it to keep it longer).
  std::string_view source{};
  ObservationKind kind{ObservationKind::LOGICAL};        ///< what the observation stands for
  IoBackend backend{IoBackend::POSIX};                   ///< what moved the bytes
  TransferDirection direction{TransferDirection::READ};  ///< which way
  MemoryKind memory_kind{MemoryKind::HOST};              ///< where the buffer is
  bool ok{true};  ///< false for a failed operation (true at its start: nothing failed yet)

  /// @brief `end - start` (zero before the end).
  [[nodiscard]] Duration duration() const noexcept
  {
    return end > start ? end - start : Duration::zero();
  }
  /// @brief bytes_transferred per second of duration(); 0 for no duration.
  [[nodiscard]] double bytes_per_sec() const noexcept
  {
    auto const seconds = std::chrono::duration<double>{duration()}.count();
    return seconds > 0.0 ? static_cast<double>(bytes_transferred) / seconds : 0.0;
  }
};

/**
 * @brief Told of every operation twice: on_start() as it begins, on_finish() as it ends (with the
 * finished record), each exactly once, on whichever thread does the work.
 *
 * One user call is one operation: `FileHandle::pread/pwrite/read/write`, `MmapHandle::read/pread`
 * and `RemoteHandle::read/pread` (both transports), and each request of `file_batch_read()` /
 * `remote_batch_read()`. A call refused on its arguments is none; a failed call is one with
 * `ok == false`. Not reported: cuFile's own stream API (`read_async` with GPUDirect Storage;
 * stream-ordered reads in compat mode are reported when their bytes have moved) and
 * `BatchHandle`.
 *
 * Callbacks run inline with the I/O: keep them light and thread-safe. They must not call back
 * into KvikIO's I/O (which throws std::runtime_error), nor register or unregister monitors.
 */
class Monitor {
 public:
  Monitor()                          = default;
  virtual ~Monitor()                 = default;
  Monitor(Monitor const&)            = delete;
  Monitor& operator=(Monitor const&) = delete;

  /**
   * @brief An operation began: `end`, `bytes_transferred` are zero and `ok` is true.
   * @param observation valid only during the call: copy what is kept.
   */
  virtual void on_start(Observation const& observation) noexcept = 0;

  /**
   * @brief An operation ended. A monitor registered after `observation.start` never saw its
   * on_start() and should ignore it.
   * @param observation valid only during the call: copy what is kept.
   */
  virtual void on_finish(Observation const& observation) noexcept = 0;
};

/**
 * @brief Registers `monitor` (not owned; it must outlive its registration) for observations of
 * `kind`.
 * @return the id unregister_monitor() takes.
 * @throws std::invalid_argument if `monitor` is null; std::runtime_error inside a callback.
 */
[[nodiscard]] std::uint64_t register_monitor(Monitor* monitor,
                                             ObservationKind kind = ObservationKind::LOGICAL);

/**
 * @brief Unregisters the monitor of `id` (an unknown id is ignored). Returns only when no thread
 * is inside one of its callbacks: the monitor may be destroyed then.
 * @throws std::runtime_error inside a callback.
 */
void unregister_monitor(std::uint64_t id);

}  // namespace kvikio
