/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Proof at link time that the simulator implements every entry point KvikIO's shim resolves:
 * this table takes the address of each, and the library is linked with --no-undefined.
 */
#include <kvikio/shim/cuda.hpp>

extern "C" {

#define CUDASIM_ENTRY_ADDRESS(member, function) reinterpret_cast<void const*>(&::function),
// Exported so that no optimisation can drop the references.
extern void const* const cudasim_entry_points[];
void const* const cudasim_entry_points[] = {KVIKIO_CUDA_DRIVER_ENTRY_POINTS(
  CUDASIM_ENTRY_ADDRESS) KVIKIO_CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(CUDASIM_ENTRY_ADDRESS)};
#undef CUDASIM_ENTRY_ADDRESS

/// Lets a test tell the simulator from a real driver (dlsym on the loaded libcuda.so.1).
int cudasim_is_simulator() { return 1; }

}  // extern "C"
