/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/compat_mode_manager.hpp>

#include <utility>

#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cufile.hpp>

#include "io/local_plan.hpp"

namespace kvikio {

CompatModeManager::CompatModeManager(std::string const& file_path, int fd, CompatMode requested)
  : requested_{requested}
{
  if (requested == CompatMode::ON) {
    reason_ = "compat mode ON";
    return;
  }
  std::string why_not;
  if (requested == CompatMode::AUTO && !detail::is_gds_available()) {
    why_not = detail::gds_unavailable_reason();  // without opening cuFile's driver
  } else if (!detail::is_cufile_usable()) {
    why_not = detail::cufile_unusable_reason();
  } else {
    auto const r = cufile_handle_.register_handle(fd).value();
    if (r.err == CU_FILE_SUCCESS) {
      compat_ = false;
      reason_ = std::string{"compat mode "} + detail::compat_mode_name(requested) +
                (requested == CompatMode::AUTO ? ": GPUDirect Storage is available" : "");
      return;
    }
    why_not = "cuFileHandleRegister failed: " + detail::cufile_error_description(r.err, r.cu_err);
  }
  KVIKIO_EXPECT(
    requested != CompatMode::OFF,
    "compat mode is OFF (KVIKIO_COMPAT_MODE, defaults::set_compat_mode(), Python's "
    "defaults.set(\"compat_mode\", ...), or the compat_mode argument) but cuFile cannot "
    "serve " +
      file_path + ": " + why_not);
  reason_ = "compat mode AUTO: " + why_not;
}

bool CompatModeManager::is_compat_mode_preferred() const noexcept { return compat_; }

bool CompatModeManager::is_compat_mode_preferred_for_async() const noexcept
{
  return compat_ || cuFileAPI::instance().ReadAsync == nullptr ||
         cuFileAPI::instance().WriteAsync == nullptr;
}

CompatMode CompatModeManager::compat_mode_requested() const noexcept { return requested_; }

std::string const& CompatModeManager::reason() const noexcept { return reason_; }

CUfileHandle_t CompatModeManager::cufile_handle() const noexcept { return cufile_handle_.handle(); }

void CompatModeManager::validate_compat_mode_for_async() const
{
  KVIKIO_EXPECT(requested_ != CompatMode::OFF || !is_compat_mode_preferred_for_async(),
                "Required cuFile stream API is unavailable: compat mode OFF cannot be honoured "
                "for asynchronous I/O (libcufile lacks cuFileReadAsync/cuFileWriteAsync)",
                std::runtime_error);
}

}  // namespace kvikio
