/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pinned host memory for staging: anonymous memory of this process, backed by huge pages where
 * the kernel allows, placed on a NUMA node where the host has several, kept out of fork()'s
 * children, and registered with the driver (cuMemHostRegister).
 */
#pragma once

#include <cstddef>
#include <string_view>

#include <cuda.h>

namespace kvikio::detail {

/**
 * @brief Pins `size` bytes: maps them (aligned to 2 MiB from 2 MiB up, so that huge pages can
 * back them), asks for huge pages, binds them to `numa_node` (preferred, not required; -1: no
 * binding), faults them in and registers them, portable to every context and mapped into the
 * devices' address space (cuMemHostGetDevicePointer). The caller has pushed a context.
 *
 * Registering memory the process mapped pins its pages 2-3x faster than `cuMemHostAlloc`, and
 * only it can choose the node. The mapping is not inherited by a child of fork(): the device
 * reads the parent's pages, which copy-on-write would otherwise take from the parent at its next
 * write.
 * @returns the driver's result; on success `*memory` is page-aligned, for
 * unpin_host_memory(*memory, size), and on failure nothing is held.
 * @throws std::bad_alloc if the memory cannot be mapped.
 */
[[nodiscard]] CUresult pin_host_memory(std::size_t size, int numa_node, void** memory);

/// @brief Unregisters and unmaps what pin_host_memory(size, ...) returned. The caller has pushed
/// a context; unregistering waits for copies that still read the memory. Memory whose
/// registration already ended with the context that made it (destroyed or reset) is unmapped,
/// and CUDA_SUCCESS returned.
CUresult unpin_host_memory(void* memory, std::size_t size) noexcept;

/**
 * @brief The node to bind staging for a device to: `device_node` (the driver's
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID) where the host has more than one online node and that one is
 * among them; -1 (no binding) otherwise. `online` is the kernel's list of online nodes, as
 * /sys/devices/system/node/online writes it ("0", "0-1", "0,2-3").
 */
[[nodiscard]] int staging_numa_node(int device_node, std::string_view online) noexcept;

/// @brief staging_numa_node() for `device` on this host.
[[nodiscard]] int staging_numa_node_of(CUdevice device);

}  // namespace kvikio::detail
