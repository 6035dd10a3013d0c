/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file batch.hpp
 * @brief Batches of reads and writes submitted together and completed one by one.
 *
 * With cuFile's batch API (cuFileBatchIO*) when the files use cuFile; otherwise (compat mode)
 * the batch runs on KvikIO's thread pool.
 */

#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <ctime>
#include <future>
#include <memory>
#include <vector>

#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/// @brief One operation of a batch: read or write `size` bytes at `file_offset` to or from
/// device memory at `devPtr_base + devPtr_offset`.
struct BatchOp {
  FileHandle& file_handle;  ///< the open file; not owned, must outlive the operation
  void* devPtr_base;        ///< device memory the bytes go to or come from; not owned
  off_t file_offset;        ///< offset in the file, in bytes
  off_t devPtr_offset;      ///< offset from `devPtr_base`, in bytes
  std::size_t size;         ///< bytes to move
  CUfileOpcode_t opcode;    ///< `CUFILE_READ` or `CUFILE_WRITE`
};

/**
 * @brief A batch context with room for `max_num_events` operations in flight.
 */
class BatchHandle {
 public:
  BatchHandle() noexcept = default;
  /// @throws std::invalid_argument if `max_num_events` is not positive.
  explicit BatchHandle(int max_num_events);
  /// @brief Takes over another batch, operations in flight included; that one is left closed.
  BatchHandle(BatchHandle&&) noexcept;
  /// @brief close()s this batch, then takes over another one, which is left closed.
  BatchHandle& operator=(BatchHandle&&) noexcept;
  BatchHandle(BatchHandle const&)            = delete;
  BatchHandle& operator=(BatchHandle const&) = delete;
  ~BatchHandle() noexcept;

  /// @brief Whether the batch is closed (default-constructed, moved from, or close()d).
  [[nodiscard]] bool closed() const noexcept;
  /// @brief Waits for operations still running, then releases the batch.
  void close() noexcept;

  /**
   * @brief Starts `operations`; each event later reports its index in this call as its cookie.
   * @throws std::invalid_argument if more than `max_num_events` would be in flight.
   */
  void submit(std::vector<BatchOp> const& operations);

  /**
   * @brief Completed operations, each reported once: waits until at least `min_nr` are
   * complete (or `timeout` passes; null waits as long as it takes), returns at most `max_nr`.
   */
  std::vector<CUfileIOEvents_t> status(unsigned min_nr,
                                       unsigned max_nr,
                                       struct timespec* timeout = nullptr);

  /// @brief Cancels what has not started (pool) or asks cuFile to cancel.
  void cancel();

 private:
  int max_num_events_{0};
  bool closed_{true};
  bool use_cufile_{false};
  CUfileBatchHandle_t cufile_batch_{nullptr};
  std::size_t cufile_in_flight_{0};
  // Pool mode: one future per operation not yet reported, and the flag cancel() sets.
  std::vector<std::future<CUfileIOEvents_t>> pending_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

}  // namespace kvikio
