/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/buffer.hpp>

#include <algorithm>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

void buffer_register(void const* devPtr_base,
                     std::size_t size,
                     int flags,
                     std::vector<int> const& errors_to_ignore)
{
  if (defaults::is_compat_mode_preferred()) { return; }
  auto const r = cuFileAPI::instance().BufRegister(devPtr_base, size, flags);
  if (r.err == CU_FILE_SUCCESS ||
      std::find(errors_to_ignore.begin(), errors_to_ignore.end(), static_cast<int>(r.err)) !=
        errors_to_ignore.end()) {
    return;
  }
  KVIKIO_CUFILE_TRY(r);
}

void buffer_deregister(void const* devPtr_base)
{
  if (defaults::is_compat_mode_preferred()) { return; }
  KVIKIO_CUFILE_TRY(cuFileAPI::instance().BufDeregister(devPtr_base));
}

void memory_register(void const* devPtr, int flags, std::vector<int> const& errors_to_ignore)
{
  if (defaults::is_compat_mode_preferred()) { return; }
  auto const [base, size, offset] = get_alloc_info(devPtr);
  (void)offset;
  buffer_register(base, size, flags, errors_to_ignore);
}

void memory_deregister(void const* devPtr)
{
  if (defaults::is_compat_mode_preferred()) { return; }
  auto const [base, size, offset] = get_alloc_info(devPtr);
  (void)size;
  (void)offset;
  buffer_deregister(base);
}

}  // namespace kvikio
