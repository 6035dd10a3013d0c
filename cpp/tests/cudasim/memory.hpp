/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Helpers shared by the entry points that take pointers: operand checks, mapping, attributes.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include <cuda.h>

#include "simulator.hpp"

namespace cudasim {

/// Where the bytes of a copy operand are, and whether it is pageable host memory.
struct Operand {
  std::byte* bytes{nullptr};
  bool pageable{false};
};

std::size_t page_round_size(std::size_t nbytes);

/// Maps a shared-memory file twice: readable/writable for the simulator (`bytes`) and PROT_NONE
/// at the address handed out (`base`).
CUresult map_shared(
  int fd, std::size_t size, std::uintptr_t& base, std::byte*& bytes, std::size_t& mapped);

// Operand checks. Callers hold Simulator::mutex. A failure is logged as misuse.
/// [ptr, ptr + nbytes) must lie in one device allocation, of the device that `stream` runs on
/// (0 and the default streams: the current context's): as on a GPU without peer access, a
/// device's copy engines reach only its own memory.
CUresult device_operand(
  char const* entry, CUdeviceptr ptr, std::size_t nbytes, std::byte*& bytes, CUstream stream);
/// `ptr` must not be device memory; pinned ranges must not run past their allocation.
CUresult host_operand(
  char const* entry, void const* ptr, std::size_t nbytes, std::byte*& bytes, bool& pageable);
/// Either kind, told apart by the table (unified addressing); device memory as device_operand().
CUresult classify(
  char const* entry, std::uintptr_t ptr, std::size_t nbytes, Operand& out, CUstream stream);

/// Runs `work` on a stream (0: the legacy default stream); waits for it if `synchronous`.
CUresult run_on_stream(char const* entry,
                       CUstream stream,
                       std::function<void()> work,
                       bool synchronous);

/// Frees the allocation starting at `base`, which must be of `kind` (else misuse: `why`):
/// takes it out of the table, waits for work in flight, unmaps it.
CUresult release_allocation(char const* entry,
                            std::uintptr_t base,
                            Allocation::Kind kind,
                            char const* why);

/// Waits for everything on the current context's legacy stream.
CUresult synchronize_legacy_stream(char const* entry);

/// Copies `n` bytes of pageable host memory aside now and queues their copy to `dst` on `stream`
/// (0: legacy) without waiting for it: what the driver does with pageable sources.
CUresult staged_copy_to_device(
  char const* entry, CUstream stream, std::byte* dst, std::byte const* src, std::size_t n);

/// One pointer attribute of known memory, with the driver's result codes and value sizes.
CUresult pointer_attribute(Allocation const& a,
                           CUdeviceptr ptr,
                           CUpointer_attribute attribute,
                           void* data);
/// The value cuPointerGetAttributes gives for memory the driver does not know.
CUresult pointer_attribute_none(CUpointer_attribute attribute, void* data);

}  // namespace cudasim
