/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * IPC handle blobs from another process: any bytes are either a handle (which writes back to
 * the same bytes) or rejected with std::invalid_argument. The checksum guards the fields, so the
 * bytes are also tried sealed (valid magic, version and checksum): then only a range outside the
 * allocation may be rejected.
 */
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <kvikio/ipc.hpp>

#include "ipc/ipc_internals.hpp"

namespace {

template <typename Handle>
void parse_any(std::uint8_t const* data, std::size_t size)
{
  try {
    auto const h     = Handle::from_bytes(data, size);
    auto const bytes = h.to_bytes();
    if (size != bytes.size() || std::memcmp(bytes.data(), data, size) != 0) { std::abort(); }
  } catch (std::invalid_argument const&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  namespace ipc = kvikio::ipc;
  parse_any<ipc::IpcHandle>(data, size);
  parse_any<ipc::IpcEventHandle>(data, size);
  if (size >= sizeof(ipc::IpcHandle)) {
    ipc::IpcHandle h;
    std::memcpy(&h, data, sizeof(h));
    ipc::detail::seal(h);
    bool const in_range = h.offset <= h.alloc_size && h.length <= h.alloc_size - h.offset;
    auto const bytes    = h.to_bytes();
    try {
      (void)ipc::IpcHandle::from_bytes(bytes.data(), bytes.size());
      if (!in_range) { std::abort(); }  // accepted a range outside the allocation
    } catch (std::invalid_argument const&) {
      if (in_range) { std::abort(); }  // rejected a sealed handle with a valid range
    }
  }
  if (size >= sizeof(ipc::IpcEventHandle)) {
    ipc::IpcEventHandle h;
    std::memcpy(&h, data, sizeof(h));
    ipc::detail::seal(h);
    auto const bytes = h.to_bytes();
    (void)ipc::IpcEventHandle::from_bytes(bytes.data(), bytes.size());  // must not throw
  }
  return 0;
}
