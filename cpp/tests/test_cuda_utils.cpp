/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Pointer and context facts (utils.hpp) against the CUDA driver: the real one on a GPU machine,
 * the simulator in CI. Host-memory cases run everywhere.
 */
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

#include "common/device.hpp"

using kvikio::cudaAPI;
using kvikio::test::DeviceBuffer;
using kvikio::test::OnDevice;

namespace {

TEST(CudaUtils, PageableHostMemoryIsHostMemory)
{
  std::vector<std::uint8_t> heap(4096);
  int stack_value = 0;
  EXPECT_TRUE(kvikio::is_host_memory(heap.data()));
  EXPECT_TRUE(kvikio::is_host_memory(&stack_value));
}

TEST_F(OnDevice, DeviceMemoryIsNotHostMemory)
{
  DeviceBuffer const buf{1 << 20};
  EXPECT_FALSE(kvikio::is_host_memory(buf.get()));
  EXPECT_FALSE(kvikio::is_host_memory(static_cast<char*>(buf.get()) + 12345));
}

TEST_F(OnDevice, PinnedHostMemoryIsHostMemory)
{
  void* pinned = nullptr;
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemHostAlloc(&pinned, 1 << 16, 0));
  EXPECT_TRUE(kvikio::is_host_memory(pinned));
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemFreeHost(pinned));
}

TEST_F(OnDevice, AllocationInfoOfAnInteriorPointer)
{
  std::size_t const nbytes = 3 << 20;
  DeviceBuffer const buf{nbytes};
  auto* interior            = static_cast<char*>(buf.get()) + 4097;
  auto [base, size, offset] = kvikio::get_alloc_info(interior);
  EXPECT_EQ(base, buf.get());
  EXPECT_GE(size, nbytes);
  EXPECT_EQ(offset, 4097U);
  CUcontext ctx                = ctx_;
  auto [base2, size2, offset2] = kvikio::get_alloc_info(interior, &ctx);
  EXPECT_EQ(base2, buf.get());
  EXPECT_EQ(size2, size);
  EXPECT_EQ(offset2, 4097U);
}

TEST_F(OnDevice, AllocationInfoOfHostMemoryFails)
{
  std::vector<char> host(64);
  CUcontext ctx = ctx_;
  EXPECT_THROW((void)kvikio::get_alloc_info(host.data(), &ctx), kvikio::CUfileException);
}

TEST_F(OnDevice, ContextFromPointerWithoutCurrentContext)
{
  DeviceBuffer const buf{4096};
  EXPECT_EQ(kvikio::get_context_from_pointer(buf.get()), ctx_);
  EXPECT_EQ(kvikio::get_device_ordinal_from_pointer(buf.ptr), 0);
  EXPECT_TRUE(kvikio::current_context_can_access_pointer(buf.ptr));
  // With no context current, the pointer still leads to its context.
  CUcontext popped{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxPopCurrent(&popped));
  EXPECT_EQ(popped, ctx_);
  EXPECT_FALSE(kvikio::current_context_can_access_pointer(buf.ptr));
  EXPECT_EQ(kvikio::get_context_from_pointer(buf.get()), ctx_);
  {
    kvikio::PushAndPopContext const guard{buf.get()};
    CUcontext current{};
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&current));
    EXPECT_EQ(current, ctx_);
  }
  CUcontext after{};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxGetCurrent(&after));
  EXPECT_EQ(after, nullptr);
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().CtxPushCurrent(ctx_));
}

TEST_F(OnDevice, DriverTableCopiesBytes)
{
  std::size_t const n = 1 << 20;
  std::vector<std::uint8_t> src(n), dst(n, 0xAB);
  for (std::size_t i = 0; i < n; ++i) {
    src[i] = static_cast<std::uint8_t>((i * 2654435761U) >> 13);
  }
  DeviceBuffer const buf{n};
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemcpyHtoD(buf.ptr, src.data(), n));
  KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemcpyDtoH(dst.data(), buf.ptr, n));
  EXPECT_EQ(src, dst);
}

TEST_F(OnDevice, DriverErrorsAreNamed)
{
  CUdeviceptr ptr{};
  try {
    // A size no device has: the driver refuses it by name.
    KVIKIO_CUDA_DRIVER_TRY(cudaAPI::instance().MemAlloc(&ptr, std::size_t{1} << 62));
    FAIL() << "allocating 4 EiB succeeded";
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
      << e.what();
  }
}

}  // namespace
