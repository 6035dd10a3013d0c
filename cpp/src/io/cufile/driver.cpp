/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/cufile/config.hpp>
#include <kvikio/cufile/driver.hpp>

#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>

namespace kvikio {
namespace {

// What this process set through the setters. cuFile applies a setting but may go on reporting
// the value it started with (without nvidia-fs it does), so a getter reports what was set.
struct SetValues {
  std::mutex mutex;
  std::optional<bool> poll_mode;
  std::optional<std::size_t> poll_thresh_size;
  std::optional<std::size_t> max_device_cache_size;
  std::optional<std::size_t> max_pinned_memory_size;
};

SetValues& set_values()
{
  static SetValues values;
  return values;
}

// The driver's report, with what was set in place of what it reports.
CUfileDrvProps_t properties()
{
  KVIKIO_EXPECT(detail::is_cufile_usable(),
                "cuFile is not usable: " + detail::cufile_unusable_reason());
  CUfileDrvProps_t props{};
  KVIKIO_CUFILE_TRY(cuFileAPI::instance().DriverGetProperties(&props));
  auto& set = set_values();
  std::lock_guard const lock{set.mutex};
  if (set.poll_mode) {
    unsigned int const bit = 1U << CU_FILE_USE_POLL_MODE;
    props.nvfs.dcontrolflags =
      *set.poll_mode ? (props.nvfs.dcontrolflags | bit) : (props.nvfs.dcontrolflags & ~bit);
  }
  if (set.poll_thresh_size) { props.nvfs.poll_thresh_size = *set.poll_thresh_size; }
  if (set.max_device_cache_size) { props.max_device_cache_size = *set.max_device_cache_size; }
  if (set.max_pinned_memory_size) {
    props.max_device_pinned_mem_size = *set.max_pinned_memory_size;
  }
  return props;
}

// Makes the driver call `apply` and, if it succeeded, records `value` in `slot`.
template <typename T, typename Apply>
void set_and_remember(std::optional<T> SetValues::*slot, T value, Apply apply)
{
  KVIKIO_CUFILE_TRY(apply());
  auto& set = set_values();
  std::lock_guard const lock{set.mutex};
  set.*slot = value;
}

template <typename F>
F require(F f, char const* name)
{
  KVIKIO_EXPECT(f != nullptr, std::string{"this libcufile has no "} + name);
  return f;
}

}  // namespace

void cuFileAPI::driver_open()
{
  auto const opened = DriverOpen();
  if (opened.err != CU_FILE_DRIVER_ALREADY_OPEN) { KVIKIO_CUFILE_TRY(opened); }
}

void cuFileAPI::driver_close() { KVIKIO_CUFILE_TRY(DriverClose()); }

DriverInitializer::DriverInitializer()
{
  KVIKIO_EXPECT(is_cufile_library_available(),
                "cuFile is not available: " + detail::cufile_unavailable_reason());
  KVIKIO_CUFILE_TRY(cuFileAPI::instance().DriverOpen());
}

DriverInitializer::~DriverInitializer() noexcept
{
  auto const closed = cuFileAPI::instance().DriverClose();
  if (closed.err != CU_FILE_SUCCESS) {
    KVIKIO_LOG_ERROR("cuFileDriverClose failed: ",
                     detail::cufile_error_description(closed.err, closed.cu_err));
  }
}

bool DriverProperties::is_gds_available()
{
  try {
    return get_nvfs_major_version() > 0;
  } catch (std::exception const&) {
    return false;
  }
}

unsigned int DriverProperties::get_nvfs_major_version() { return properties().nvfs.major_version; }
unsigned int DriverProperties::get_nvfs_minor_version() { return properties().nvfs.minor_version; }
bool DriverProperties::get_nvfs_allow_compat_mode()
{
  return (properties().nvfs.dcontrolflags & (1U << CU_FILE_ALLOW_COMPAT_MODE)) != 0;
}
bool DriverProperties::get_nvfs_poll_mode()
{
  return (properties().nvfs.dcontrolflags & (1U << CU_FILE_USE_POLL_MODE)) != 0;
}
std::size_t DriverProperties::get_nvfs_poll_thresh_size()
{
  return properties().nvfs.poll_thresh_size;
}
void DriverProperties::set_nvfs_poll_mode(bool enable)
{
  auto const threshold = get_nvfs_poll_thresh_size();
  auto const set_poll = require(cuFileAPI::instance().DriverSetPollMode, "cuFileDriverSetPollMode");
  set_and_remember(&SetValues::poll_mode, enable, [&] { return set_poll(enable, threshold); });
}
void DriverProperties::set_nvfs_poll_thresh_size(std::size_t size_in_kb)
{
  auto const mode     = get_nvfs_poll_mode();
  auto const set_poll = require(cuFileAPI::instance().DriverSetPollMode, "cuFileDriverSetPollMode");
  set_and_remember(
    &SetValues::poll_thresh_size, size_in_kb, [&] { return set_poll(mode, size_in_kb); });
}
std::size_t DriverProperties::get_max_device_cache_size()
{
  return properties().max_device_cache_size;
}
void DriverProperties::set_max_device_cache_size(std::size_t size_in_kb)
{
  (void)properties();  // usable, or a clear error
  auto const set_size =
    require(cuFileAPI::instance().DriverSetMaxCacheSize, "cuFileDriverSetMaxCacheSize");
  set_and_remember(
    &SetValues::max_device_cache_size, size_in_kb, [&] { return set_size(size_in_kb); });
}
std::size_t DriverProperties::get_per_buffer_cache_size()
{
  return properties().per_buffer_cache_size;
}
std::size_t DriverProperties::get_max_pinned_memory_size()
{
  return properties().max_device_pinned_mem_size;
}
void DriverProperties::set_max_pinned_memory_size(std::size_t size_in_kb)
{
  (void)properties();
  auto const set_size =
    require(cuFileAPI::instance().DriverSetMaxPinnedMemSize, "cuFileDriverSetMaxPinnedMemSize");
  set_and_remember(
    &SetValues::max_pinned_memory_size, size_in_kb, [&] { return set_size(size_in_kb); });
}
std::vector<CUfileDriverControlFlags> DriverProperties::get_nvfs_statusflags()
{
  // Reports which of the two control flags (poll mode, compat mode) are set.
  unsigned int const bits = properties().nvfs.dcontrolflags;
  std::vector<CUfileDriverControlFlags> set;
  for (auto flag : {CU_FILE_USE_POLL_MODE, CU_FILE_ALLOW_COMPAT_MODE}) {
    if ((bits >> flag) & 1U) { set.push_back(flag); }
  }
  return set;
}

std::size_t DriverProperties::get_max_batch_io_size() { return properties().max_batch_io_size; }
std::size_t DriverProperties::get_max_batch_io_timeout_msecs()
{
  return properties().max_batch_io_timeout_msecs;
}

}  // namespace kvikio
