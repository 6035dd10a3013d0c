/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/batch.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cufile.hpp>

namespace kvikio {
namespace {

bool cufile_batch_available()
{
  if (defaults::is_compat_mode_preferred()) { return false; }
  auto& api = cuFileAPI::instance();
  return api.BatchIOSetUp != nullptr && api.BatchIOSubmit != nullptr &&
         api.BatchIOGetStatus != nullptr && api.BatchIOCancel != nullptr &&
         api.BatchIODestroy != nullptr;
}

}  // namespace

BatchHandle::BatchHandle(int max_num_events) : max_num_events_{max_num_events}, closed_{false}
{
  KVIKIO_EXPECT(
    max_num_events > 0,
    "BatchHandle: max_num_events must be positive, got " + std::to_string(max_num_events),
    std::invalid_argument);
  use_cufile_ = cufile_batch_available();
  if (use_cufile_) {
    KVIKIO_CUFILE_TRY(
      cuFileAPI::instance().BatchIOSetUp(&cufile_batch_, static_cast<unsigned>(max_num_events)));
  }
  cancelled_ = std::make_shared<std::atomic<bool>>(false);
}

BatchHandle::BatchHandle(BatchHandle&& o) noexcept
  : max_num_events_{o.max_num_events_},
    closed_{std::exchange(o.closed_, true)},
    use_cufile_{o.use_cufile_},
    cufile_batch_{std::exchange(o.cufile_batch_, nullptr)},
    cufile_in_flight_{o.cufile_in_flight_},
    pending_{std::move(o.pending_)},
    cancelled_{std::move(o.cancelled_)}
{
}

BatchHandle& BatchHandle::operator=(BatchHandle&& o) noexcept
{
  if (this != &o) {
    close();
    max_num_events_   = o.max_num_events_;
    closed_           = std::exchange(o.closed_, true);
    use_cufile_       = o.use_cufile_;
    cufile_batch_     = std::exchange(o.cufile_batch_, nullptr);
    cufile_in_flight_ = o.cufile_in_flight_;
    pending_          = std::move(o.pending_);
    cancelled_        = std::move(o.cancelled_);
  }
  return *this;
}

BatchHandle::~BatchHandle() noexcept { close(); }

bool BatchHandle::closed() const noexcept { return closed_; }

void BatchHandle::close() noexcept
{
  if (closed_) { return; }
  for (auto& f : pending_) {
    f.wait();  // the operations use the caller's buffers: none may outlive the batch
  }
  pending_.clear();
  if (cufile_batch_ != nullptr) {
    cuFileAPI::instance().BatchIODestroy(cufile_batch_);
    cufile_batch_ = nullptr;
  }
  closed_ = true;
}

void BatchHandle::submit(std::vector<BatchOp> const& operations)
{
  KVIKIO_EXPECT(!closed_, "BatchHandle::submit: the batch is closed");
  std::size_t const in_flight = use_cufile_ ? cufile_in_flight_ : pending_.size();
  KVIKIO_EXPECT(in_flight + operations.size() <= static_cast<std::size_t>(max_num_events_),
                "BatchHandle::submit: " + std::to_string(operations.size()) + " operations with " +
                  std::to_string(in_flight) + " in flight exceed max_num_events " +
                  std::to_string(max_num_events_),
                std::invalid_argument);
  if (use_cufile_) {
    std::vector<CUfileIOParams_t> params(operations.size());
    for (std::size_t i = 0; i < operations.size(); ++i) {
      auto const& op = operations[i];
      KVIKIO_EXPECT(!op.file_handle.get_compat_mode_manager().is_compat_mode_preferred(),
                    "BatchHandle::submit: a file of this cuFile batch uses POSIX I/O (compat mode)",
                    std::invalid_argument);
      params[i].mode                  = CUFILE_BATCH;
      params[i].u.batch.devPtr_base   = op.devPtr_base;
      params[i].u.batch.file_offset   = op.file_offset;
      params[i].u.batch.devPtr_offset = op.devPtr_offset;
      params[i].u.batch.size          = op.size;
      params[i].fh                    = op.file_handle.handle();
      params[i].opcode                = op.opcode;
      params[i].cookie                = reinterpret_cast<void*>(i);
    }
    KVIKIO_CUFILE_TRY(cuFileAPI::instance().BatchIOSubmit(
      cufile_batch_, static_cast<unsigned>(params.size()), params.data(), 0));
    cufile_in_flight_ += params.size();
    return;
  }
  auto& pool = defaults::thread_pool();
  for (std::size_t i = 0; i < operations.size(); ++i) {
    BatchOp const op = operations[i];
    pending_.push_back(pool.submit_task([op, i, cancelled = cancelled_]() noexcept {
      CUfileIOEvents_t event{reinterpret_cast<void*>(i), CUFILE_COMPLETE, 0};
      if (cancelled->load()) {
        event.status = CUFILE_CANCELED;
        return event;
      }
      try {
        event.ret = op.opcode == CUFILE_READ
                      ? op.file_handle.read(op.devPtr_base,
                                            op.size,
                                            static_cast<std::size_t>(op.file_offset),
                                            static_cast<std::size_t>(op.devPtr_offset))
                      : op.file_handle.write(op.devPtr_base,
                                             op.size,
                                             static_cast<std::size_t>(op.file_offset),
                                             static_cast<std::size_t>(op.devPtr_offset));
      } catch (std::exception const& e) {
        KVIKIO_LOG_ERROR("batch operation ", i, " failed: ", e.what());
        event.status = CUFILE_FAILED;
        event.ret    = static_cast<std::size_t>(-1);
      }
      return event;
    }));
  }
}

std::vector<CUfileIOEvents_t> BatchHandle::status(unsigned min_nr,
                                                  unsigned max_nr,
                                                  struct timespec* timeout)
{
  KVIKIO_EXPECT(!closed_, "BatchHandle::status: the batch is closed");
  if (use_cufile_) {
    std::vector<CUfileIOEvents_t> events(max_nr);
    unsigned nr = max_nr;
    KVIKIO_CUFILE_TRY(
      cuFileAPI::instance().BatchIOGetStatus(cufile_batch_, min_nr, &nr, events.data(), timeout));
    events.resize(nr);
    cufile_in_flight_ -= std::min<std::size_t>(cufile_in_flight_, nr);
    return events;
  }
  using clock         = std::chrono::steady_clock;
  auto const deadline = timeout == nullptr ? clock::time_point::max()
                                           : clock::now() + std::chrono::seconds(timeout->tv_sec) +
                                               std::chrono::nanoseconds(timeout->tv_nsec);
  std::vector<CUfileIOEvents_t> events;
  while (true) {
    for (auto it = pending_.begin(); it != pending_.end() && events.size() < max_nr;) {
      if (it->wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        events.push_back(it->get());
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    if (events.size() >= min_nr || pending_.empty() || clock::now() >= deadline) { return events; }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void BatchHandle::cancel()
{
  KVIKIO_EXPECT(!closed_, "BatchHandle::cancel: the batch is closed");
  if (use_cufile_) {
    KVIKIO_CUFILE_TRY(cuFileAPI::instance().BatchIOCancel(cufile_batch_));
    return;
  }
  cancelled_->store(true);
}

}  // namespace kvikio
