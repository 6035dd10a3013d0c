/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/cufile/config.hpp>
#include <kvikio/cufile/driver.hpp>

#include <unistd.h>

#include <cstdlib>
#include <string>

#include <kvikio/detail/logger.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>

namespace kvikio {
namespace {

CUfileDrvProps_t properties()
{
  KVIKIO_EXPECT(detail::is_cufile_usable(),
                "cuFile is not usable: " + detail::cufile_unusable_reason());
  CUfileDrvProps_t props{};
  KVIKIO_CUFILE_TRY(cuFileAPI::instance().DriverGetProperties(&props));
  return props;
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

std::string const& config_path()
{
  // The file cuFile reads: CUFILE_ENV_PATH_JSON's, else its default; "" if neither exists.
  static std::string const path = [] {
    char const* env = std::getenv("CUFILE_ENV_PATH_JSON");
    for (char const* candidate : {env, "/etc/cufile.json"}) {
      if (candidate != nullptr && *candidate != '\0' && ::access(candidate, F_OK) == 0) {
        return std::string{candidate};
      }
    }
    return std::string{};
  }();
  return path;
}

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
  KVIKIO_CUFILE_TRY(
    require(cuFileAPI::instance().DriverSetPollMode, "cuFileDriverSetPollMode")(enable, threshold));
}
void DriverProperties::set_nvfs_poll_thresh_size(std::size_t size_in_kb)
{
  auto const mode = get_nvfs_poll_mode();
  KVIKIO_CUFILE_TRY(
    require(cuFileAPI::instance().DriverSetPollMode, "cuFileDriverSetPollMode")(mode, size_in_kb));
}
std::size_t DriverProperties::get_max_device_cache_size()
{
  return properties().max_device_cache_size;
}
void DriverProperties::set_max_device_cache_size(std::size_t size_in_kb)
{
  (void)properties();  // usable, or a clear error
  KVIKIO_CUFILE_TRY(require(cuFileAPI::instance().DriverSetMaxCacheSize,
                            "cuFileDriverSetMaxCacheSize")(size_in_kb));
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
  KVIKIO_CUFILE_TRY(require(cuFileAPI::instance().DriverSetMaxPinnedMemSize,
                            "cuFileDriverSetMaxPinnedMemSize")(size_in_kb));
}
std::vector<CUfileDriverControlFlags> DriverProperties::get_nvfs_statusflags()
{
  // Upstream reports the two control flags that are set.
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
