/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Device-test helpers: a fixture with a device's primary context current (or a skip that says
 * why there is none), RAII device and pinned buffers through KvikIO's driver shim, and whether
 * the driver is the simulator.
 */
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace kvikio::test {

inline kvikio::cudaAPI& api() { return kvikio::cudaAPI::instance(); }

/// Whether the loaded libcuda.so.1 is the simulator (cpp/tests/cudasim).
inline bool on_simulator()
{
  void* lib      = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  bool const sim = lib != nullptr && ::dlsym(lib, "cudasim_is_simulator") != nullptr;
  if (lib != nullptr) { ::dlclose(lib); }
  return sim;
}

/// Functions of the simulator's own that tests call (cpp/tests/cudasim/simulator.cpp).
using FailCall    = int (*)(char const*, unsigned long long, int);
using TraceCalls  = void (*)(int);
using TracedCalls = std::size_t (*)(char*, std::size_t);

/// A function of the simulator (loaded by the driver shim, RTLD_LOCAL: looked up in it), or
/// nullptr on a real driver.
template <typename F>
inline F simulator_hook(char const* name)
{
  void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) { return nullptr; }
  auto* const f = reinterpret_cast<F>(::dlsym(lib, name));
  ::dlclose(lib);  // still loaded: the shim holds it
  return f;
}

/// The driver calls the simulator counted since `cudasim_trace_calls(1)`: entry point (without
/// its version suffix) -> calls.
inline std::map<std::string, std::size_t> traced_driver_calls()
{
  auto const traced = simulator_hook<TracedCalls>("cudasim_traced_calls");
  std::map<std::string, std::size_t> calls;
  if (traced == nullptr) { return calls; }
  std::string text(traced(nullptr, 0) + 1, '\0');
  text.resize(traced(text.data(), text.size()));
  std::istringstream in{text};
  std::string name;
  std::size_t count{};
  while (in >> name >> count) {
    calls[name] += count;
  }
  return calls;
}

/// Deterministic non-zero bytes, different for every (seed, index).
inline std::vector<std::uint8_t> pattern(std::size_t nbytes, std::uint32_t seed)
{
  std::vector<std::uint8_t> out(nbytes);
  std::uint32_t x = seed * 2654435761U + 12345U;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x | 1U);
  }
  return out;
}

/// Devices the driver reports (0 without a usable driver).
inline int device_count()
{
  if (!kvikio::is_cuda_available()) { return 0; }
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGetCount(&count));
  return count;
}

/// Why device tests cannot run here ("" if they can), for their skip message.
inline std::string no_device_reason()
{
  if (!kvikio::is_cuda_available()) {
    return "no CUDA device: " + kvikio::detail::cuda_unavailable_reason();
  }
  return device_count() == 0 ? "no CUDA device: the driver reports 0 devices" : "";
}

class OnDevice : public ::testing::Test {
 protected:
  void SetUp() override
  {
    if (auto const why = no_device_reason(); !why.empty()) { GTEST_SKIP() << why; }
    ctx_ = kvikio::get_primary_cuda_context(0);
    KVIKIO_CUDA_DRIVER_TRY(api().CtxPushCurrent(ctx_));
  }
  void TearDown() override
  {
    if (ctx_ != nullptr) {
      CUcontext popped{};
      EXPECT_EQ(api().CtxPopCurrent(&popped), CUDA_SUCCESS);
    }
  }
  CUcontext ctx_{};
};

struct DeviceBuffer {
  CUdeviceptr ptr{};
  std::size_t size;
  explicit DeviceBuffer(std::size_t nbytes) : size{nbytes}
  {
    KVIKIO_CUDA_DRIVER_TRY(api().MemAlloc(&ptr, nbytes));
  }
  ~DeviceBuffer() { EXPECT_EQ(api().MemFree(ptr), CUDA_SUCCESS); }
  DeviceBuffer(DeviceBuffer const&)            = delete;
  DeviceBuffer& operator=(DeviceBuffer const&) = delete;
  [[nodiscard]] void* get() const { return reinterpret_cast<void*>(ptr); }
};

struct PinnedBuffer {
  void* ptr{};
  std::size_t size;
  explicit PinnedBuffer(std::size_t nbytes) : size{nbytes}
  {
    KVIKIO_CUDA_DRIVER_TRY(api().MemHostAlloc(&ptr, nbytes, 0));
  }
  ~PinnedBuffer() { EXPECT_EQ(api().MemFreeHost(ptr), CUDA_SUCCESS); }
  PinnedBuffer(PinnedBuffer const&)            = delete;
  PinnedBuffer& operator=(PinnedBuffer const&) = delete;
  [[nodiscard]] std::uint8_t* bytes() const { return static_cast<std::uint8_t*>(ptr); }
};

struct Stream {
  CUstream handle{};
  explicit Stream(unsigned int flags = CU_STREAM_NON_BLOCKING)
  {
    KVIKIO_CUDA_DRIVER_TRY(api().StreamCreate(&handle, flags));
  }
  ~Stream() { EXPECT_EQ(api().StreamDestroy(handle), CUDA_SUCCESS); }
  Stream(Stream const&)            = delete;
  Stream& operator=(Stream const&) = delete;
};

struct Event {
  CUevent handle{};
  explicit Event(unsigned int flags = CU_EVENT_DISABLE_TIMING)
  {
    KVIKIO_CUDA_DRIVER_TRY(api().EventCreate(&handle, flags));
  }
  ~Event() { EXPECT_EQ(api().EventDestroy(handle), CUDA_SUCCESS); }
  Event(Event const&)            = delete;
  Event& operator=(Event const&) = delete;
};

}  // namespace kvikio::test
