/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/utils.hpp>

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>

namespace kvikio {

namespace {

// The driver's kind of the memory at `ptr`; 0 for memory it does not know (pageable host memory,
// and everything when no driver is loaded).
unsigned memory_type_of(void const* ptr)
{
  if (!is_cuda_available()) { return 0; }
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
  CUmemorytype memory_type{};
  void* values[] = {&memory_type};
  CUresult const r =
    cudaAPI::instance().PointerGetAttributes(1, attributes, values, convert_void2deviceptr(ptr));
  if (r == CUDA_ERROR_NOT_INITIALIZED) {
    // A child of fork() whose parent used the driver: the driver refuses every call here (CUDA
    // does not survive a fork), and no device memory of this process exists. Memory mapped in
    // this process is host memory; anything else (the parent's device memory, which the child
    // does not inherit) is no memory to read into.
    auto const page = reinterpret_cast<std::uintptr_t>(ptr) / get_page_size() * get_page_size();
    if (::msync(reinterpret_cast<void*>(page), 1, MS_ASYNC) == 0 || errno != ENOMEM) { return 0; }
    throw CUfileException(
      "KvikIO: " + std::to_string(reinterpret_cast<std::uintptr_t>(ptr)) +
      " is not memory of this process, and its CUDA driver refuses every call "
      "(CUDA_ERROR_NOT_INITIALIZED: after fork(), CUDA works only in a process that did not "
      "use it before the fork)");
  }
  KVIKIO_CUDA_DRIVER_TRY(r);
  return static_cast<unsigned>(memory_type);
}

}  // namespace

bool is_host_memory(void const* ptr)
{
  auto const type = memory_type_of(ptr);
  return type == 0 || type == CU_MEMORYTYPE_HOST;
}

bool detail::is_pageable_host_memory(void const* ptr) { return memory_type_of(ptr) == 0; }

int get_device_ordinal_from_pointer(CUdeviceptr dev_ptr)
{
  int ordinal{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().PointerGetAttribute(
    &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev_ptr));
  return ordinal;
}

std::tuple<void*, std::size_t, std::size_t> get_alloc_info(void const* devPtr, CUcontext* ctx)
{
  auto const dev_ptr      = convert_void2deviceptr(devPtr);
  CUcontext const context = ctx != nullptr ? *ctx : get_context_from_pointer(devPtr);
  PushAndPopContext const guard{context};
  CUdeviceptr base{};
  std::size_t size{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemGetAddressRange(&base, &size, dev_ptr));
  return {reinterpret_cast<void*>(base), size, static_cast<std::size_t>(dev_ptr - base)};
}

}  // namespace kvikio
