/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file ipc.hpp
 * @brief Sharing device allocations between processes through CUDA IPC, with caches on both
 * sides: a producer exports an allocation's handle once (`KVIKIO_IPC_EXPORT_CACHE_SIZE`), a
 * consumer maps it once and reuses the mapping (`KVIKIO_IPC_OPEN_CACHE_SIZE`), and both notice
 * an allocation freed and reallocated at the same address (its buffer id changes).
 *
 * ```
 * // producer
 * auto h = kvikio::ipc::export_memory(p, n);
 * send(h.to_bytes());
 * // consumer
 * auto h = kvikio::ipc::IpcHandle::from_bytes(bytes, len);
 * kvikio::ipc::MappedRegion r = kvikio::ipc::open(h);
 * use(r.get(), r.size());  // unmapped when evicted
 * ```
 */

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda.h>

namespace kvikio::ipc {

/**
 * @brief A process, told apart from every other one on the machine across pid reuse, pid
 * namespaces and reboots: boot id, pid namespace, pid and start time.
 */
struct ProducerId {
  std::array<std::uint8_t, 16> boot_id{};  ///< `/proc/sys/kernel/random/boot_id`
  std::uint64_t pid_namespace{};           ///< inode of `/proc/self/ns/pid`
  /// @brief `getpid()`.
  std::int32_t pid{};
  /// @brief Unused; zero.
  std::uint32_t reserved{};
  std::uint64_t start_time{};  ///< clock ticks after boot (`/proc/self/stat`, field 22)

  /// @brief This process (read once, and again in a child after `fork()`).
  /// @throws std::runtime_error if this process's identity cannot be read from `/proc`.
  [[nodiscard]] static ProducerId const& self();
  /// @brief Whether two ids are equal field by field (the same process).
  friend bool operator==(ProducerId const&, ProducerId const&) = default;
};

/**
 * @brief `length` bytes at `offset` of a device allocation of a producer process: fixed size,
 * trivially copyable, versioned and checksummed, to send over any channel as to_bytes().
 */
struct IpcHandle {
  static constexpr std::uint32_t magic_value     = 0x5049564BU;  ///< "KVIP": value of `magic`
  static constexpr std::uint16_t current_version = 1;            ///< `version` written and read

  std::uint32_t magic{};     ///< magic_value
  std::uint16_t version{};   ///< current_version
  std::uint16_t reserved{};  ///< unused; zero
  ProducerId producer{};     ///< the exporting process
  /// @brief UUID of the device that holds the allocation.
  std::array<std::uint8_t, 16> device_uuid{};
  std::uint64_t alloc_base{};  ///< the allocation's address in the producer
  /// @brief The allocation's size in bytes.
  std::uint64_t alloc_size{};
  std::uint64_t buffer_id{};  ///< CU_POINTER_ATTRIBUTE_BUFFER_ID: new for every allocation
  std::uint64_t offset{};     ///< of the requested bytes, from alloc_base
  /// @brief Bytes requested, from `offset`.
  std::uint64_t length{};
  /// @brief The driver's handle of the whole allocation.
  CUipcMemHandle cuda_handle{};
  std::uint64_t checksum{};  ///< FNV-1a of every byte before it

  /// @brief The blob's size in bytes.
  static constexpr std::size_t nbytes = 176;

  /// @brief The handle as a blob of `nbytes` bytes, for from_bytes() in another process.
  [[nodiscard]] std::array<std::byte, nbytes> to_bytes() const noexcept;
  /**
   * @brief The handle a blob holds.
   * @throws std::invalid_argument naming what is wrong: a size other than `nbytes`, a foreign
   * magic number, an unknown version, a checksum mismatch, a range outside the allocation.
   */
  [[nodiscard]] static IpcHandle from_bytes(void const* data, std::size_t size);
};

/**
 * @brief The handle of `nbytes` at `ptr`, inside one device allocation of this process, through
 * the process's export cache: the driver is asked once per allocation (keyed by device and
 * allocation base, valid while the allocation's buffer id is unchanged), LRU-bounded by
 * `KVIKIO_IPC_EXPORT_CACHE_SIZE` (0: no caching).
 * @throws std::invalid_argument for a null pointer, host memory, or a range that leaves the
 * allocation; kvikio::CUfileException for a driver failure.
 */
[[nodiscard]] IpcHandle export_memory(void const* ptr, std::size_t nbytes);

/// @brief Drops the export-cache entry of the allocation holding `ptr` (call before freeing it).
void forget(void const* ptr);

/**
 * @brief A mapping of a handle's bytes in this process. Copies share it; the last one gone
 * releases it to the open cache, which unmaps it when it is evicted (or at once when stale or
 * when caching is off). A handle of this very process maps nothing: get() is the original
 * pointer. Release every region before the process exits (not from a static destructor): the
 * unmapping needs the CUDA driver and the library's settings, which static destruction tears
 * down.
 */
class MappedRegion {
 public:
  MappedRegion() noexcept = default;
  /// @brief The handle's first byte (the allocation's mapping plus the handle's offset).
  [[nodiscard]] void* get() const noexcept { return ptr_; }
  /// @brief The handle's length.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// @brief Releases this copy's share now.
  void reset() noexcept { *this = MappedRegion{}; }

 private:
  friend MappedRegion open(IpcHandle const& handle);
  MappedRegion(void* ptr, std::size_t size, std::shared_ptr<void> lease) noexcept
    : ptr_{ptr}, size_{size}, lease_{std::move(lease)}
  {
  }
  void* ptr_{nullptr};
  std::size_t size_{0};
  std::shared_ptr<void> lease_;
};

/**
 * @brief Maps a handle through the process's open cache, keyed by (producer, device, allocation
 * base): a hit reuses the mapping; a miss opens it (concurrent opens of one key open once; the
 * others wait); a stale entry (same key, another buffer id) is replaced and unmapped once its
 * last user is gone; LRU-bounded by `KVIKIO_IPC_OPEN_CACHE_SIZE` (0: no caching), where entries
 * in use are never unmapped: with every entry in use the bound is exceeded (counted, logged
 * once). `CUDA_ERROR_ALREADY_MAPPED` evicts that producer's idle entries and retries once. The
 * mapping is made in the primary context of the device with the handle's UUID.
 * @throws std::invalid_argument for a malformed handle or an unknown device;
 * kvikio::CUfileException for a driver failure (the producer or its allocation gone, say).
 */
[[nodiscard]] MappedRegion open(IpcHandle const& handle);

/// @brief Counters of a cache since the process started (or the last clear()).
struct CacheStats {
  std::size_t entries{0};    ///< held now
  std::size_t hits{0};       ///< served from the cache
  std::size_t misses{0};     ///< asked of the driver
  std::size_t evictions{0};  ///< dropped for the bound (or by forget, invalidate, clear)
  std::size_t overflows{0};  ///< times the bound was exceeded because every entry was in use
  std::size_t stale{0};      ///< entries replaced because the allocation changed
};
/// @brief A snapshot of the export cache's counters (see export_memory()). Thread-safe.
[[nodiscard]] CacheStats export_cache_stats();
/// @brief A snapshot of the open cache's counters (see open()). Thread-safe.
[[nodiscard]] CacheStats open_cache_stats();

/// @brief Drops every open-cache entry of `producer`: idle ones are unmapped now, those in use
/// once released.
void invalidate_producer(ProducerId const& producer);

/// @brief Empties both caches (mappings in use are unmapped once released) and zeroes the counters.
void clear();

/**
 * @brief An interprocess event handle (`CUipcEventHandle`), versioned and checksummed like
 * IpcHandle.
 */
struct IpcEventHandle {
  static constexpr std::uint32_t magic_value     = 0x4549564BU;  ///< "KVIE": value of `magic`
  static constexpr std::uint16_t current_version = 1;            ///< `version` written and read

  std::uint32_t magic{};           ///< magic_value
  std::uint16_t version{};         ///< current_version
  std::uint16_t reserved{};        ///< unused; zero
  ProducerId producer{};           ///< the process that created the event
  CUipcEventHandle cuda_handle{};  ///< the driver's handle of the event
  std::uint64_t checksum{};        ///< FNV-1a of every byte before it

  /// @brief The blob's size in bytes.
  static constexpr std::size_t nbytes = 120;
  /// @brief The handle as a blob of `nbytes` bytes, for from_bytes() in another process.
  [[nodiscard]] std::array<std::byte, nbytes> to_bytes() const noexcept;
  /// @throws std::invalid_argument as IpcHandle::from_bytes().
  [[nodiscard]] static IpcEventHandle from_bytes(void const* data, std::size_t size);
};

/**
 * @brief An event that other processes can wait for (`CU_EVENT_INTERPROCESS |
 * CU_EVENT_DISABLE_TIMING`), created in the current context: record it after writing into an
 * exported allocation, send handle(), and the consumer's OpenedEvent waits for those writes.
 */
class InterprocessEvent {
 public:
  /// @throws kvikio::CUfileException without a current context or on a driver failure.
  InterprocessEvent();
  ~InterprocessEvent() noexcept;
  InterprocessEvent(InterprocessEvent const&)            = delete;
  InterprocessEvent& operator=(InterprocessEvent const&) = delete;
  /// @brief The CUDA event, owned by this object (destroyed with it).
  [[nodiscard]] CUevent get() const noexcept { return event_; }
  /**
   * @brief The handle to send to a consumer, which opens it as an OpenedEvent.
   * @throws kvikio::CUfileException on a driver failure.
   * @throws std::runtime_error if this process's identity cannot be read from `/proc`.
   */
  [[nodiscard]] IpcEventHandle handle() const;

 private:
  CUevent event_{};
};

/// @brief Another process's InterprocessEvent, opened in the current context.
class OpenedEvent {
 public:
  /// @throws std::invalid_argument for a malformed handle; kvikio::CUfileException otherwise.
  explicit OpenedEvent(IpcEventHandle const& handle);
  ~OpenedEvent() noexcept;
  OpenedEvent(OpenedEvent const&)            = delete;
  OpenedEvent& operator=(OpenedEvent const&) = delete;
  /// @brief The opened CUDA event, owned by this object (destroyed with it), to wait on.
  [[nodiscard]] CUevent get() const noexcept { return event_; }

 private:
  CUevent event_{};
};

}  // namespace kvikio::ipc
