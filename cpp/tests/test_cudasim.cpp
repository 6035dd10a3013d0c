/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The CUDA driver simulator's own tests. Every test below also runs against the real driver on
 * a GPU machine (the simulator must match it); those marked "simulator strictness" check
 * behaviour the real driver leaves undefined and skip there, saying so.
 */
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/child_process.hpp"
#include "common/device.hpp"
#include "common/poison.hpp"

using kvikio::test::api;
using kvikio::test::DeviceBuffer;
using kvikio::test::Event;
using kvikio::test::on_simulator;
using kvikio::test::OnDevice;
using kvikio::test::pattern;
using kvikio::test::PinnedBuffer;
using kvikio::test::Stream;

namespace {

#define SKIP_UNLESS_SIMULATOR(why)                                            \
  do {                                                                        \
    if (!on_simulator()) { GTEST_SKIP() << "simulator strictness: " << why; } \
  } while (0)

using kvikio::test::poison;

// A pinned word that blocks a stream (cuStreamWaitValue32) until released, so that "not yet
// done" is observable deterministically, on the simulator and on a GPU.
class Gate {
 public:
  Gate() : word_{sizeof(std::uint32_t)} { flag().store(0); }
  void block(CUstream s)
  {
    KVIKIO_CUDA_DRIVER_TRY(api().StreamWaitValue32(
      s, reinterpret_cast<CUdeviceptr>(word_.ptr), 1, CU_STREAM_WAIT_VALUE_GEQ));
  }
  void release() { flag().store(1); }

 private:
  std::atomic<std::uint32_t>& flag()
  {
    return *reinterpret_cast<std::atomic<std::uint32_t>*>(word_.ptr);
  }
  PinnedBuffer word_;
};

CUresult pointer_attribute(void* data, CUpointer_attribute attribute, void const* ptr)
{
  return api().PointerGetAttribute(data, attribute, kvikio::convert_void2deviceptr(ptr));
}

// ---------------------------------------------------------------------------------------------
// Contexts

// Guards against the device tests skipping silently in CI: where ctest put the simulator on the
// library path, it must be the driver in use.
TEST(Simulator, IsLoadedUnderCtest)
{
  std::string const dir    = KVIKIO_CUDASIM_DIR;
  char const* library_path = std::getenv("LD_LIBRARY_PATH");
  if (library_path == nullptr || std::string{library_path}.find(dir) == std::string::npos) {
    GTEST_SKIP()
      << "the simulator's directory is not on LD_LIBRARY_PATH: this run uses the real driver";
  }
  if (::access((dir + "/libcuda.so.1").c_str(), F_OK) != 0) {
    GTEST_SKIP() << "the simulator was removed from " << dir
                 << " (GPU run): this run uses the real driver";
  }
  EXPECT_TRUE(kvikio::is_cuda_available()) << kvikio::detail::cuda_unavailable_reason();
  EXPECT_TRUE(on_simulator());
}

TEST_F(OnDevice, ContextStack)
{
  CUcontext popped{};
  ASSERT_EQ(api().CtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, ctx_);
  EXPECT_EQ(api().CtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);  // empty stack
  CUcontext current{reinterpret_cast<CUcontext>(0x1)};
  EXPECT_EQ(api().CtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, nullptr);
  CUdeviceptr ptr{};
  EXPECT_EQ(api().MemAlloc(&ptr, 16), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(api().CtxPushCurrent(ctx_), CUDA_SUCCESS);
  CUdevice device{-1};
  EXPECT_EQ(api().CtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
}

TEST_F(OnDevice, CreatedContextIsPushedAndPopped)
{
  CUdevice dev{};
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGet(&dev, 0));
  CUcontext created{};
  ASSERT_EQ(api().CtxCreate(&created, nullptr, 0, dev), CUDA_SUCCESS);
  CUcontext current{};
  KVIKIO_CUDA_DRIVER_TRY(api().CtxGetCurrent(&current));
  EXPECT_EQ(current, created);
  EXPECT_NE(created, ctx_);
  {
    DeviceBuffer buf{4096};
    EXPECT_EQ(kvikio::get_context_from_pointer(buf.get()), created);
  }
  EXPECT_EQ(api().CtxDestroy(created), CUDA_SUCCESS);  // also pops it
  KVIKIO_CUDA_DRIVER_TRY(api().CtxGetCurrent(&current));
  EXPECT_EQ(current, ctx_);
}

TEST_F(OnDevice, InvalidDevice)
{
  CUdevice dev{};
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGetCount(&count));
  EXPECT_EQ(api().DeviceGet(&dev, count), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(api().DeviceGet(&dev, -1), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(OnDevice, EveryDeviceHasItsOwnPrimaryContextAndMemory)
{
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGetCount(&count));
  if (count < 2) { GTEST_SKIP() << "needs 2 devices (the simulator runs with CUDASIM_DEVICES=2)"; }
  CUcontext second = kvikio::get_primary_cuda_context(1);
  EXPECT_NE(second, ctx_);
  KVIKIO_CUDA_DRIVER_TRY(api().CtxPushCurrent(second));
  {
    DeviceBuffer buf{1024};
    EXPECT_EQ(kvikio::get_device_ordinal_from_pointer(buf.ptr), 1);
    CUcontext popped{};
    KVIKIO_CUDA_DRIVER_TRY(api().CtxPopCurrent(&popped));
    // With device 0's context current, the pointer still leads to device 1's context.
    EXPECT_EQ(kvikio::get_context_from_pointer(buf.get()), second);
    KVIKIO_CUDA_DRIVER_TRY(api().CtxPushCurrent(second));
  }
  CUcontext popped{};
  KVIKIO_CUDA_DRIVER_TRY(api().CtxPopCurrent(&popped));
}

// ---------------------------------------------------------------------------------------------
// Pointer attributes (values as an H100 with driver 580 reports them)

TEST_F(OnDevice, PointerAttributesOfEachMemoryKind)
{
  std::vector<char> pageable(4096);
  PinnedBuffer pinned{1 << 16};
  DeviceBuffer device{1 << 20};
  std::vector<char> registered_storage(3 * 4096);
  void* registered = registered_storage.data();
  KVIKIO_CUDA_DRIVER_TRY(api().MemHostRegister(registered, registered_storage.size(), 0));

  unsigned int type = 77;
  EXPECT_EQ(pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pageable.data()),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pinned.ptr), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_HOST);
  EXPECT_EQ(pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, registered), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_HOST);
  EXPECT_EQ(pointer_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device.get()), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);

  CUcontext ctx{};
  EXPECT_EQ(pointer_attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, pinned.bytes() + 100),
            CUDA_SUCCESS);
  EXPECT_EQ(ctx, ctx_);
  int ordinal = -7;
  EXPECT_EQ(pointer_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, device.get()),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  int mapped = -7;
  EXPECT_EQ(pointer_attribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, pinned.ptr), CUDA_SUCCESS);
  EXPECT_EQ(mapped, 1);
  int managed = -7;
  EXPECT_EQ(pointer_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, device.get()),
            CUDA_SUCCESS);
  EXPECT_EQ(managed, 0);

  // Pinned memory is mapped at the same address; device memory has no host address.
  CUdeviceptr dptr{};
  EXPECT_EQ(pointer_attribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, pinned.ptr),
            CUDA_SUCCESS);
  EXPECT_EQ(dptr, reinterpret_cast<CUdeviceptr>(pinned.ptr));
  void* host = nullptr;
  EXPECT_EQ(pointer_attribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, device.get()),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemHostGetDevicePointer(&dptr, registered, 0), CUDA_SUCCESS);
  EXPECT_EQ(dptr, reinterpret_cast<CUdeviceptr>(registered));

  // Interior pointers report their allocation.
  auto* interior = static_cast<char*>(device.get()) + 4097;
  CUdeviceptr start{};
  std::size_t size{};
  EXPECT_EQ(pointer_attribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, interior),
            CUDA_SUCCESS);
  EXPECT_EQ(start, device.ptr);
  EXPECT_EQ(pointer_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, interior), CUDA_SUCCESS);
  EXPECT_EQ(size, device.size);
  // One past the end is outside.
  EXPECT_EQ(
    pointer_attribute(
      &type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, static_cast<char*>(device.get()) + device.size),
    CUDA_ERROR_INVALID_VALUE);

  // The plural query does not fail on unknown memory: it reports "none".
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT};
  unsigned int type2          = 77;
  CUcontext ctx2              = reinterpret_cast<CUcontext>(0x77);
  void* values[]              = {&type2, &ctx2};
  EXPECT_EQ(
    api().PointerGetAttributes(2, attrs, values, reinterpret_cast<CUdeviceptr>(pageable.data())),
    CUDA_SUCCESS);
  EXPECT_EQ(type2, 0U);
  EXPECT_EQ(ctx2, nullptr);

  CUdeviceptr base{};
  EXPECT_EQ(api().MemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(pageable.data())),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(
    api().MemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(pinned.bytes() + 5)),
    CUDA_SUCCESS);
  EXPECT_EQ(base, reinterpret_cast<CUdeviceptr>(pinned.ptr));

  KVIKIO_CUDA_DRIVER_TRY(api().MemHostUnregister(registered));
}

TEST_F(OnDevice, BufferIdChangesAndFreedMemoryIsUnknown)
{
  CUdeviceptr first{};
  KVIKIO_CUDA_DRIVER_TRY(api().MemAlloc(&first, 1 << 20));
  unsigned long long id1 = 0, id2 = 0;
  KVIKIO_CUDA_DRIVER_TRY(api().PointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, first));
  KVIKIO_CUDA_DRIVER_TRY(api().MemFree(first));
  unsigned int type = 77;
  EXPECT_EQ(api().PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, first),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemFree(first), CUDA_ERROR_INVALID_VALUE);  // double free
  CUdeviceptr second{};
  KVIKIO_CUDA_DRIVER_TRY(api().MemAlloc(&second, 1 << 20));
  KVIKIO_CUDA_DRIVER_TRY(api().PointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, second));
  EXPECT_NE(id1, id2);                                              // even if the address is reused
  EXPECT_EQ(api().MemFree(second + 16), CUDA_ERROR_INVALID_VALUE);  // interior pointer
  KVIKIO_CUDA_DRIVER_TRY(api().MemFree(second));
  EXPECT_EQ(api().MemFree(0), CUDA_SUCCESS);
}

TEST_F(OnDevice, HostRegistration)
{
  std::vector<char> storage(4 * 4096);
  KVIKIO_CUDA_DRIVER_TRY(api().MemHostRegister(storage.data(), storage.size(), 0));
  EXPECT_EQ(api().MemHostRegister(storage.data(), storage.size(), 0),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(api().MemHostRegister(storage.data() + 4096, 4096, 0),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  KVIKIO_CUDA_DRIVER_TRY(api().MemHostUnregister(storage.data()));
  EXPECT_EQ(api().MemHostUnregister(storage.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

// ---------------------------------------------------------------------------------------------
// Copies, streams, events

TEST_F(OnDevice, SynchronousCopiesAndMemset)
{
  std::size_t const n = (1 << 20) + 3;
  auto const src      = pattern(n, 1);
  std::vector<std::uint8_t> dst(n + 2, poison);
  DeviceBuffer a{n}, b{n};
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(a.ptr, src.data(), n));
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoD(b.ptr, a.ptr, n));
  KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8(a.ptr + 10, 0x5A, 7));
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(dst.data() + 1, b.ptr, n));
  EXPECT_EQ(0, std::memcmp(dst.data() + 1, src.data(), n));
  EXPECT_EQ(dst.front(), poison);
  EXPECT_EQ(dst.back(), poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(dst.data(), a.ptr, 20));
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(dst[i], (i >= 10 && i < 17) ? 0x5A : src[i]) << i;
  }
}

TEST_F(OnDevice, PageableSourceIsStagedAtTheCall)
{
  // The driver copies a pageable source aside before returning (the DMA comes later), so
  // changing it afterwards changes nothing on the device.
  std::size_t const n = 4096;
  auto src            = pattern(n, 7);
  auto const original = src;
  DeviceBuffer dev{n};
  Stream stream;
  Gate gate;
  gate.block(stream.handle);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr, src.data(), n, stream.handle));
  std::fill(src.begin(), src.end(), poison);
  gate.release();
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  std::vector<std::uint8_t> back(n);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, n));
  EXPECT_EQ(back, original);
}

TEST_F(OnDevice, StreamWorkCompletesLaterAndInOrder)
{
  std::size_t const n = 1 << 20;
  auto const src      = pattern(n, 2);
  PinnedBuffer in{n}, out{n};
  std::memcpy(in.ptr, src.data(), n);
  std::memset(out.ptr, poison, n);
  DeviceBuffer dev{n};
  Stream stream;
  Gate gate;
  gate.block(stream.handle);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr, in.ptr, n, stream.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoHAsync(out.ptr, dev.ptr, n, stream.handle));
  EXPECT_EQ(api().StreamQuery(stream.handle), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(out.bytes()[0], poison);  // nothing ran yet
  gate.release();
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  EXPECT_EQ(api().StreamQuery(stream.handle), CUDA_SUCCESS);
  EXPECT_EQ(0, std::memcmp(out.ptr, src.data(), n));
}

TEST_F(OnDevice, EventsOrderWorkAcrossStreams)
{
  std::size_t const n = 1 << 16;
  auto const src      = pattern(n, 3);
  PinnedBuffer in{n}, out{n};
  std::memcpy(in.ptr, src.data(), n);
  std::memset(out.ptr, poison, n);
  DeviceBuffer dev{n};
  Stream producer, consumer;
  Event done;
  EXPECT_EQ(api().EventQuery(done.handle), CUDA_SUCCESS);  // never recorded
  Gate gate;
  gate.block(producer.handle);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr, in.ptr, n, producer.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(done.handle, producer.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamWaitEvent(consumer.handle, done.handle, 0));
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoHAsync(out.ptr, dev.ptr, n, consumer.handle));
  EXPECT_EQ(api().EventQuery(done.handle), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(api().StreamQuery(consumer.handle), CUDA_ERROR_NOT_READY);
  gate.release();
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(consumer.handle));
  EXPECT_EQ(api().EventQuery(done.handle), CUDA_SUCCESS);
  KVIKIO_CUDA_DRIVER_TRY(api().EventSynchronize(done.handle));
  EXPECT_EQ(0, std::memcmp(out.ptr, src.data(), n));
}

TEST_F(OnDevice, LegacyStreamWaitsForBlockingStreamsOnly)
{
  DeviceBuffer dev{4096};
  Stream blocking{CU_STREAM_DEFAULT};
  Stream nonblocking{CU_STREAM_NON_BLOCKING};
  Gate gate;
  gate.block(blocking.handle);
  // Work on the legacy default stream waits for the blocked blocking stream...
  KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8Async(dev.ptr, 1, 4096, nullptr));
  // ... while a non-blocking stream does not wait for the legacy stream.
  KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8Async(dev.ptr, 2, 16, nonblocking.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(nonblocking.handle));
  EXPECT_EQ(api().StreamQuery(nullptr), CUDA_ERROR_NOT_READY);
  gate.release();
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(nullptr));
  std::uint8_t first{};
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(&first, dev.ptr, 1));
  EXPECT_EQ(first, 1);
}

void CUDA_CB record_order(void* data)
{
  auto* order = static_cast<std::vector<int>*>(data);
  order->push_back(static_cast<int>(order->size()));
}

TEST_F(OnDevice, HostFunctionsRunInStreamOrder)
{
  Stream stream;
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    KVIKIO_CUDA_DRIVER_TRY(api().LaunchHostFunc(stream.handle, record_order, &order));
  }
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

struct CallInsideHostFunction {
  CUresult alloc_result{CUDA_SUCCESS};
  CUresult query_result{CUDA_SUCCESS};
  CUstream stream;
};
void CUDA_CB calls_inside(void* data)
{
  auto* call = static_cast<CallInsideHostFunction*>(data);
  CUdeviceptr ptr{};
  call->alloc_result = api().MemAlloc(&ptr, 16);
  call->query_result = api().StreamQuery(call->stream);
}

TEST_F(OnDevice, CudaCallInsideHostFunctionIsRefused)
{
  Stream stream;
  CallInsideHostFunction call{};
  call.stream = stream.handle;
  KVIKIO_CUDA_DRIVER_TRY(api().LaunchHostFunc(stream.handle, calls_inside, &call));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  // The driver refuses an allocation (seen on an H200, driver 580) but answers a query (NOT_READY);
  // the simulator refuses every call, which is what the CUDA documentation requires.
  EXPECT_EQ(call.alloc_result, CUDA_ERROR_NOT_PERMITTED);
  if (on_simulator()) { EXPECT_EQ(call.query_result, CUDA_ERROR_NOT_PERMITTED); }
}

// An event re-recorded on another stream that completes first: a wait enqueued for the first
// record still waits for it (a pooled event is re-recorded by unrelated work this way).
TEST_F(OnDevice, WaitIsForTheRecordThatWasLast)
{
  std::size_t const n = 1 << 16;
  auto const src      = pattern(n, 4);
  PinnedBuffer in{n}, out{n};
  std::memcpy(in.ptr, src.data(), n);
  std::memset(out.ptr, poison, n);
  DeviceBuffer dev{n};
  Stream slow, fast, consumer;
  Event event;
  Gate gate;
  gate.block(slow.handle);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr, in.ptr, n, slow.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(event.handle, slow.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamWaitEvent(consumer.handle, event.handle, 0));
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoHAsync(out.ptr, dev.ptr, n, consumer.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(event.handle, fast.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(fast.handle));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(api().StreamQuery(consumer.handle), CUDA_ERROR_NOT_READY)
    << "the wait passed on a later record of the event";
  gate.release();
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(consumer.handle));
  EXPECT_EQ(0, std::memcmp(out.ptr, src.data(), n));
}

TEST_F(OnDevice, StreamMemoryOperations)
{
  PinnedBuffer words{8};
  auto* w = reinterpret_cast<std::atomic<std::uint32_t>*>(words.ptr);
  w[0].store(0);
  w[1].store(0);
  Stream stream;
  auto const addr = reinterpret_cast<CUdeviceptr>(words.ptr);
  KVIKIO_CUDA_DRIVER_TRY(api().StreamWaitValue32(stream.handle, addr, 7, CU_STREAM_WAIT_VALUE_EQ));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamWriteValue32(stream.handle, addr + 4, 42, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(w[1].load(), 0U);  // still waiting for the value 7
  w[0].store(7);
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  EXPECT_EQ(w[1].load(), 42U);
}

// With CUDASIM_HW_QUEUES=1 (its ctest entry) every stream shares one hardware queue: a stream
// waiting for a value holds up another stream's work enqueued after the wait, until the value
// comes. Skipped elsewhere: on a GPU which streams share a queue is the driver's choice.
TEST_F(OnDevice, WaitHoldsUpTheOtherStreamsOfItsHardwareQueue)
{
  char const* queues = std::getenv("CUDASIM_HW_QUEUES");
  if (queues == nullptr || std::string{queues} != "1") {
    GTEST_SKIP() << "runs with CUDASIM_HW_QUEUES=1 (ctest)";
  }
  PinnedBuffer words{12};
  auto* w = reinterpret_cast<std::atomic<std::uint32_t>*>(words.ptr);
  for (int i = 0; i < 3; ++i) {
    w[i].store(0);
  }
  Stream waiting, other, before;
  auto const addr = reinterpret_cast<CUdeviceptr>(words.ptr);
  KVIKIO_CUDA_DRIVER_TRY(api().StreamWriteValue32(before.handle, addr + 8, 5, 0));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(before.handle));  // enqueued before: runs
  KVIKIO_CUDA_DRIVER_TRY(
    api().StreamWaitValue32(waiting.handle, addr, 1, CU_STREAM_WAIT_VALUE_GEQ));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamWriteValue32(other.handle, addr + 4, 42, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(api().StreamQuery(other.handle), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(w[1].load(), 0U) << "work behind a waiting stream in its queue ran";
  w[0].store(1);
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(other.handle));
  EXPECT_EQ(w[1].load(), 42U);
  EXPECT_EQ(w[2].load(), 5U);
}

TEST_F(OnDevice, ElapsedTime)
{
  Stream stream;
  Event start{CU_EVENT_DEFAULT}, end{CU_EVENT_DEFAULT}, untimed{CU_EVENT_DISABLE_TIMING};
  DeviceBuffer dev{1 << 20};
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(start.handle, stream.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().MemsetD8Async(dev.ptr, 3, 1 << 20, stream.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(end.handle, stream.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(untimed.handle, stream.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  float ms = -1;
  EXPECT_EQ(api().EventElapsedTime(&ms, start.handle, end.handle), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0F);
  EXPECT_EQ(api().EventElapsedTime(&ms, start.handle, untimed.handle), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(OnDevice, BatchCopyInEveryDirection)
{
  if (api().MemcpyBatchAsync == nullptr) {
    GTEST_SKIP() << "the driver has no cuMemcpyBatchAsync (CUDA < 12.8)";
  }
  std::size_t const n = 4096;
  auto const src      = pattern(n, 4);
  PinnedBuffer host_in{n}, host_out{n};
  std::memcpy(host_in.ptr, src.data(), n);
  std::memset(host_out.ptr, poison, n);
  DeviceBuffer a{n}, b{n};
  Stream stream;
  CUdeviceptr dsts[]  = {a.ptr, b.ptr, reinterpret_cast<CUdeviceptr>(host_out.ptr)};
  CUdeviceptr srcs[]  = {reinterpret_cast<CUdeviceptr>(host_in.ptr), a.ptr, b.ptr};
  std::size_t sizes[] = {n, n, n};
  CUmemcpyAttributes attr{};
  attr.srcAccessOrder    = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  std::size_t attr_idx[] = {0};
  KVIKIO_CUDA_DRIVER_TRY(
    api().MemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, attr_idx, 1, stream.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  EXPECT_EQ(0, std::memcmp(host_out.ptr, src.data(), n));
}

// cudaAPI::cuda_memcpy_async, upstream's helper: host and device in every direction, on a
// created stream (the batch path where the driver has it) and on the null stream (cuMemcpyAsync).
TEST_F(OnDevice, CudaMemcpyAsyncInEveryDirectionOnBothKindsOfStream)
{
  EXPECT_GE(api().driver_version, 12000);
  std::size_t const n = 8192;
  auto const src      = pattern(n, 9);
  Stream stream;
  for (CUstream s : {stream.handle, CUstream{nullptr}}) {
    PinnedBuffer host_in{n}, host_out{n + 64};
    std::memcpy(host_in.ptr, src.data(), n);
    std::memset(host_out.ptr, poison, n + 64);
    DeviceBuffer a{n}, b{n};
    auto const as_ptr = [](void* p) { return reinterpret_cast<CUdeviceptr>(p); };
    KVIKIO_CUDA_DRIVER_TRY(kvikio::cudaAPI::cuda_memcpy_async(a.ptr, as_ptr(host_in.ptr), n, s));
    KVIKIO_CUDA_DRIVER_TRY(kvikio::cudaAPI::cuda_memcpy_async(b.ptr, a.ptr, n, s));
    KVIKIO_CUDA_DRIVER_TRY(kvikio::cudaAPI::cuda_memcpy_async(
      as_ptr(static_cast<char*>(host_out.ptr) + 32), b.ptr, n, s));
    KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(s));
    auto const* out = static_cast<unsigned char const*>(host_out.ptr);
    EXPECT_EQ(0, std::memcmp(out + 32, src.data(), n)) << "stream " << s;
    for (std::size_t i = 0; i < 32; ++i) {
      ASSERT_EQ(out[i], poison) << i;
      ASSERT_EQ(out[32 + n + i], poison) << i;
    }
  }
}

TEST_F(OnDevice, BatchCopyOnTheNullStreamIsRefused)
{
  if (api().MemcpyBatchAsync == nullptr) {
    GTEST_SKIP() << "the driver has no cuMemcpyBatchAsync (CUDA < 12.8)";
  }
  DeviceBuffer a{64}, b{64};
  CUdeviceptr dst = a.ptr, src = b.ptr;
  std::size_t size = 64, idx = 0;
  CUmemcpyAttributes attr{};
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  EXPECT_EQ(api().MemcpyBatchAsync(&dst, &src, &size, 1, &attr, &idx, 1, nullptr),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(OnDevice, EventOfAnotherContextCannotBeRecorded)
{
  Event foreign;  // in the primary context
  CUdevice dev{};
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGet(&dev, 0));
  CUcontext other{};
  KVIKIO_CUDA_DRIVER_TRY(api().CtxCreate(&other, nullptr, 0, dev));
  {
    Stream stream;  // in `other`
    EXPECT_EQ(api().EventRecord(foreign.handle, stream.handle), CUDA_ERROR_INVALID_HANDLE);
    // Waiting on an event of another context is allowed.
    EXPECT_EQ(api().StreamWaitEvent(stream.handle, foreign.handle, 0), CUDA_SUCCESS);
    KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  }
  KVIKIO_CUDA_DRIVER_TRY(api().CtxDestroy(other));
}

// ---------------------------------------------------------------------------------------------
// Simulator strictness: misuse the real driver rejects or leaves undefined.

TEST_F(OnDevice, HostMemoryUsedAsDeviceMemoryIsRejected)
{
  SKIP_UNLESS_SIMULATOR(
    "the real driver's result for a host pointer passed as device memory is undefined");
  std::vector<char> pageable(64, 'x');
  PinnedBuffer pinned{64};
  EXPECT_EQ(
    api().MemcpyDtoH(pageable.data(), reinterpret_cast<CUdeviceptr>(pageable.data() + 32), 16),
    CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemcpyDtoH(pageable.data(), reinterpret_cast<CUdeviceptr>(pinned.ptr), 16),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemcpyHtoD(reinterpret_cast<CUdeviceptr>(pageable.data()), pinned.ptr, 16),
            CUDA_ERROR_INVALID_VALUE);
  DeviceBuffer dev{64};
  EXPECT_EQ(api().MemcpyHtoD(dev.ptr, dev.get(), 16), CUDA_ERROR_INVALID_VALUE);  // device as host
}

// Without peer access a device's engines reach only its own memory: a copy or memset on a stream
// (or with a current context) of one device into another device's memory is refused, so that a
// library that runs a transfer in the wrong context fails here even where a GPU would route the
// bytes through unified addressing.
TEST_F(OnDevice, AnotherDevicesMemoryIsRejected)
{
  SKIP_UNLESS_SIMULATOR("with unified addressing the driver may route such a copy itself");
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGetCount(&count));
  if (count < 2) { GTEST_SKIP() << "needs 2 devices (the simulator runs with CUDASIM_DEVICES=2)"; }
  CUcontext second = kvikio::get_primary_cuda_context(1);
  CUcontext popped{};
  std::optional<DeviceBuffer> other;  // device 1's memory, freed with device 1 current
  std::optional<Stream> theirs;       // a stream of device 1
  KVIKIO_CUDA_DRIVER_TRY(api().CtxPushCurrent(second));
  other.emplace(64);
  theirs.emplace();
  KVIKIO_CUDA_DRIVER_TRY(api().CtxPopCurrent(&popped));
  PinnedBuffer host{64};
  DeviceBuffer own{64};
  Stream stream;  // device 0's
  // With device 0 current: synchronous calls, the default streams and device 0's stream.
  EXPECT_EQ(api().MemcpyHtoD(other->ptr, host.ptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemcpyDtoH(host.ptr, other->ptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemcpyDtoD(own.ptr, other->ptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemsetD8(other->ptr, 1, 16), CUDA_ERROR_INVALID_VALUE);
  for (CUstream s : {CUstream{nullptr}, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, stream.handle}) {
    EXPECT_EQ(api().MemcpyHtoDAsync(other->ptr, host.ptr, 16, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(api().MemcpyDtoDAsync(own.ptr, other->ptr, 16, s), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(api().MemsetD8Async(other->ptr, 1, 16, s), CUDA_ERROR_INVALID_VALUE);
  }
  // Device 1's stream reaches device 1's memory whatever context is current, and not device 0's.
  std::memset(host.ptr, 0x5A, 16);
  EXPECT_EQ(api().MemcpyHtoDAsync(other->ptr, host.ptr, 16, theirs->handle), CUDA_SUCCESS);
  EXPECT_EQ(api().MemcpyHtoDAsync(own.ptr, host.ptr, 16, theirs->handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().StreamSynchronize(theirs->handle), CUDA_SUCCESS);
  KVIKIO_CUDA_DRIVER_TRY(api().CtxPushCurrent(second));
  std::vector<std::uint8_t> back(16, 0);
  EXPECT_EQ(api().MemcpyDtoH(back.data(), other->ptr, 16), CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<std::uint8_t>(16, 0x5A));
  theirs.reset();
  other.reset();
  KVIKIO_CUDA_DRIVER_TRY(api().CtxPopCurrent(&popped));
}

TEST_F(OnDevice, FreedAndOutOfRangeDeviceMemoryIsRejected)
{
  // The driver rejects these synchronous copies the same way (seen on an H200, driver 580).
  std::vector<char> host(64);
  CUdeviceptr freed{};
  KVIKIO_CUDA_DRIVER_TRY(api().MemAlloc(&freed, 64));
  KVIKIO_CUDA_DRIVER_TRY(api().MemFree(freed));
  EXPECT_EQ(api().MemcpyHtoD(freed, host.data(), 16), CUDA_ERROR_INVALID_VALUE);
  DeviceBuffer dev{64};
  EXPECT_EQ(api().MemcpyHtoD(dev.ptr + 56, host.data(), 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().MemcpyDtoH(host.data(), dev.ptr + 56, 16), CUDA_ERROR_INVALID_VALUE);
  if (on_simulator()) {  // not yet compared with a GPU
    Stream stream;
    EXPECT_EQ(api().MemcpyDtoHAsync(host.data(), dev.ptr + 60, 8, stream.handle),
              CUDA_ERROR_INVALID_VALUE);
  }
}

TEST_F(OnDevice, DeviceMemoryIsNotHostAccessible)
{
  SKIP_UNLESS_SIMULATOR(
    "on a GPU without HMM this crashes too, but the test would take the GPU process down");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  DeviceBuffer dev{64};
  EXPECT_DEATH(
    {
      volatile char c = *static_cast<char volatile*>(dev.get());
      (void)c;
    },
    "");
}

TEST_F(OnDevice, DestroyingAStreamWithPendingWorkIsLogged)
{
  SKIP_UNLESS_SIMULATOR("the real driver finishes the work silently");
  auto* stream = new Stream;
  Gate gate;
  gate.block(stream->handle);
  ::testing::internal::CaptureStderr();
  delete stream;  // returns at once, as the driver's does; the work still completes
  std::string const log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("[cudasim] misuse: cuStreamDestroy: stream destroyed with pending work"),
            std::string::npos)
    << log;
  gate.release();
}

TEST_F(OnDevice, UnknownHandlesAreRejected)
{
  SKIP_UNLESS_SIMULATOR("stale handles crash or corrupt a real driver");
  CUstream stream{};
  KVIKIO_CUDA_DRIVER_TRY(api().StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamDestroy(stream));
  EXPECT_EQ(api().StreamQuery(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api().StreamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
  CUevent event{};
  KVIKIO_CUDA_DRIVER_TRY(api().EventCreate(&event, CU_EVENT_DISABLE_TIMING));
  KVIKIO_CUDA_DRIVER_TRY(api().EventDestroy(event));
  EXPECT_EQ(api().EventQuery(event), CUDA_ERROR_INVALID_HANDLE);
}

// ---------------------------------------------------------------------------------------------
// Knobs

TEST_F(OnDevice, InjectedFailure)
{
  // ctest runs this with CUDASIM_FAIL=cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY (see CMakeLists.txt).
  char const* rule = std::getenv("CUDASIM_FAIL");
  if (rule == nullptr || std::string{rule} != "cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY") {
    GTEST_SKIP() << "runs only with CUDASIM_FAIL=cuMemAlloc:2:CUDA_ERROR_OUT_OF_MEMORY";
  }
  SKIP_UNLESS_SIMULATOR("failure injection is the simulator's");
  CUdeviceptr a{}, b{}, c{};
  EXPECT_EQ(api().MemAlloc(&a, 64), CUDA_SUCCESS);
  EXPECT_EQ(api().MemAlloc(&b, 64), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(api().MemAlloc(&c, 64), CUDA_SUCCESS);
  KVIKIO_CUDA_DRIVER_TRY(api().MemFree(a));
  KVIKIO_CUDA_DRIVER_TRY(api().MemFree(c));
}

// ---------------------------------------------------------------------------------------------
// The harness catches the bug it exists for: reusing a pinned buffer before its copy completed.

// Copies `chunks` chunks of a pattern to the device through ONE pinned buffer; `wait_for_copy`
// decides whether each refill waits for the previous copy. Returns how many chunks arrived wrong.
int staged_upload(bool wait_for_copy)
{
  std::size_t const chunk = 64 << 10;
  int const chunks        = 32;
  auto const src          = pattern(chunk * chunks, 5);
  PinnedBuffer staging{chunk};
  DeviceBuffer dev{chunk * chunks};
  Stream stream;
  Event copied;
  for (int i = 0; i < chunks; ++i) {
    if (wait_for_copy) { KVIKIO_CUDA_DRIVER_TRY(api().EventSynchronize(copied.handle)); }
    std::memcpy(staging.ptr, src.data() + i * chunk, chunk);
    KVIKIO_CUDA_DRIVER_TRY(
      api().MemcpyHtoDAsync(dev.ptr + i * chunk, staging.ptr, chunk, stream.handle));
    KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(copied.handle, stream.handle));
  }
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  std::vector<std::uint8_t> out(chunk * chunks, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(out.data(), dev.ptr, out.size()));
  int wrong = 0;
  for (int i = 0; i < chunks; ++i) {
    wrong += std::memcmp(out.data() + i * chunk, src.data() + i * chunk, chunk) != 0 ? 1 : 0;
  }
  return wrong;
}

TEST_F(OnDevice, CorrectPipelinePasses) { EXPECT_EQ(staged_upload(true), 0); }

TEST_F(OnDevice, BrokenPipelineIsCaughtUnderJitter)
{
  SKIP_UNLESS_SIMULATOR("a GPU's copies are too fast to expose the bug reliably");
  if (std::getenv("CUDASIM_JITTER_US") == nullptr) {
    GTEST_SKIP() << "runs in the jitter variant (CUDASIM_JITTER_US set), where the bug must show";
  }
  EXPECT_GT(staged_upload(false), 0) << "the simulator failed to expose a reused staging buffer";
}

// ---------------------------------------------------------------------------------------------
// IPC between processes: this binary re-runs itself as the child.

std::string to_hex(void const* data, std::size_t n)
{
  std::string out;
  char buf[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", static_cast<unsigned char const*>(data)[i]);
    out += buf;
  }
  return out;
}

void from_hex(std::string const& hex, void* data, std::size_t n)
{
  ASSERT_EQ(hex.size(), 2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    static_cast<unsigned char*>(data)[i] =
      static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
}

int run_child(char const* test,
              std::string const& mem_handle,
              std::string const& event_handle,
              int signal_fd)
{
  return kvikio::test::run_child_test(test,
                                      {"KVIKIO_TEST_IPC_MEM=" + mem_handle,
                                       "KVIKIO_TEST_IPC_EVENT=" + event_handle,
                                       "KVIKIO_TEST_IPC_SIGNAL_FD=" + std::to_string(signal_fd)});
}

TEST_F(OnDevice, IpcMemoryAndEventBetweenProcesses)
{
  std::size_t const n = 1 << 16;
  auto const src      = pattern(n, 6);
  DeviceBuffer dev{n};
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, src.data(), n));
  // From pageable memory the copy may still be in flight when cuMemcpyHtoD returns.
  KVIKIO_CUDA_DRIVER_TRY(api().CtxSynchronize());
  CUipcMemHandle mem{};
  KVIKIO_CUDA_DRIVER_TRY(api().IpcGetMemHandle(&mem, dev.ptr));
  CUdeviceptr self{};
  EXPECT_NE(api().IpcOpenMemHandle(&self, mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS)
    << "opening a handle in the exporting process must fail";

  // An interprocess event recorded behind a gate: the child sees it pending, tells us, and
  // then waits for it while we open the gate.
  Event ipc_event{CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS};
  CUipcEventHandle event{};
  KVIKIO_CUDA_DRIVER_TRY(api().IpcGetEventHandle(&event, ipc_event.handle));
  Event plain;
  CUipcEventHandle unused{};
  EXPECT_NE(api().IpcGetEventHandle(&unused, plain.handle), CUDA_SUCCESS);
  Stream stream;
  Gate gate;
  gate.block(stream.handle);
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(ipc_event.handle, stream.handle));

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::atomic<bool> signaled{false};
  std::thread opener{[&] {
    char c{};
    if (::read(fds[0], &c, 1) == 1) {
      signaled = true;
      gate.release();
    }
  }};
  int const status = run_child(
    "DISABLED_IpcChild", to_hex(&mem, sizeof(mem)), to_hex(&event, sizeof(event)), fds[1]);
  ::close(fds[1]);  // the reader sees end-of-file if the child never signalled
  opener.join();
  ::close(fds[0]);
  gate.release();
  EXPECT_EQ(status, 0) << "the child process failed (its output is above)";
  EXPECT_TRUE(signaled) << "the child never reached the event check";
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));

  // The child wrote the reversed bytes back into our allocation.
  std::vector<std::uint8_t> out(n, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(out.data(), dev.ptr, n));
  EXPECT_TRUE(std::equal(out.begin(), out.end(), src.rbegin()));
}

// Runs only as the child of the test above.
TEST_F(OnDevice, DISABLED_IpcChild)
{
  char const* mem_hex   = std::getenv("KVIKIO_TEST_IPC_MEM");
  char const* event_hex = std::getenv("KVIKIO_TEST_IPC_EVENT");
  char const* signal_fd = std::getenv("KVIKIO_TEST_IPC_SIGNAL_FD");
  ASSERT_TRUE(mem_hex && event_hex && signal_fd) << "run by IpcMemoryAndEventBetweenProcesses only";
  CUipcMemHandle mem{};
  CUipcEventHandle event{};
  from_hex(mem_hex, &mem, sizeof(mem));
  from_hex(event_hex, &event, sizeof(event));

  CUevent opened_event{};
  ASSERT_EQ(api().IpcOpenEventHandle(&opened_event, event), CUDA_SUCCESS);
  EXPECT_EQ(api().EventQuery(opened_event), CUDA_ERROR_NOT_READY);  // the parent's gate is closed
  char const go = 1;
  ASSERT_EQ(::write(std::atoi(signal_fd), &go, 1), 1);
  ASSERT_EQ(api().EventSynchronize(opened_event), CUDA_SUCCESS);
  EXPECT_EQ(api().EventQuery(opened_event), CUDA_SUCCESS);

  std::size_t const n = 1 << 16;
  auto const src      = pattern(n, 6);
  CUdeviceptr opened{};
  ASSERT_EQ(api().IpcOpenMemHandle(&opened, mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
  std::vector<std::uint8_t> seen(n, poison);
  ASSERT_EQ(api().MemcpyDtoH(seen.data(), opened, n), CUDA_SUCCESS);
  EXPECT_EQ(seen, src);
  std::vector<std::uint8_t> reversed(src.rbegin(), src.rend());
  ASSERT_EQ(api().MemcpyHtoD(opened, reversed.data(), n), CUDA_SUCCESS);
  EXPECT_EQ(api().IpcCloseMemHandle(opened), CUDA_SUCCESS);
  EXPECT_EQ(api().IpcCloseMemHandle(opened), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api().EventDestroy(opened_event), CUDA_SUCCESS);
}

}  // namespace
