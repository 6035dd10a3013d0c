/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Interprocess events: a consumer waits for the producer's writes into shared memory.
 */
#include <kvikio/ipc.hpp>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>

#include "ipc/ipc_internals.hpp"

namespace kvikio::ipc {

InterprocessEvent::InterprocessEvent()
{
  KVIKIO_CUDA_DRIVER_TRY(
    cudaAPI::instance().EventCreate(&event_, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
}

InterprocessEvent::~InterprocessEvent() noexcept
{
  if (CUresult const r = cudaAPI::instance().EventDestroy(event_); r != CUDA_SUCCESS) {
    KVIKIO_LOG_ERROR("kvikio::ipc: destroying an interprocess event failed (CUresult ", r, ")");
  }
}

IpcEventHandle InterprocessEvent::handle() const
{
  IpcEventHandle h;
  h.producer = ProducerId::self();
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().IpcGetEventHandle(&h.cuda_handle, event_));
  detail::seal(h);
  return h;
}

OpenedEvent::OpenedEvent(IpcEventHandle const& handle)
{
  detail::check_handle(handle, "kvikio::ipc::OpenedEvent");
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().IpcOpenEventHandle(&event_, handle.cuda_handle));
}

OpenedEvent::~OpenedEvent() noexcept
{
  if (CUresult const r = cudaAPI::instance().EventDestroy(event_); r != CUDA_SUCCESS) {
    KVIKIO_LOG_ERROR("kvikio::ipc: destroying an opened event failed (CUresult ", r, ")");
  }
}

}  // namespace kvikio::ipc
