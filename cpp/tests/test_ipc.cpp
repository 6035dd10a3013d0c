/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The IPC handle caches. In one process: the blob (round trip; every altered byte, a truncated
 * blob and a foreign one rejected), the export cache (one driver handle per allocation, its
 * bound, no caching at 0, free + reallocation at one address re-exported, forget, bad input),
 * same-process opens. Between two real processes (this binary re-executed as the consumer, the
 * handles sent over a pipe): the consumer reads what the producer wrote and writes half of it
 * back, after waiting on the producer's interprocess event; cache hits, the LRU bound evicting
 * (and unmapping) exactly once, overflow while every entry is in use, 16 threads opening one
 * allocation at once (one driver open), a stale handle after the producer freed and reallocated
 * (never served the old mapping), no caching at 0, invalidate_producer. Under the simulator the
 * driver calls are counted too.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/ipc.hpp>
#include <kvikio/utils.hpp>

#include "common/child_process.hpp"
#include "common/device.hpp"
#include "ipc/ipc_internals.hpp"

using kvikio::test::api;
using kvikio::test::DeviceBuffer;
using kvikio::test::OnDevice;
using kvikio::test::pattern;
namespace ipc = kvikio::ipc;

namespace {

constexpr std::size_t nbytes = 1 << 20;

// Driver calls of the simulator ("get", "open", "close"); none with a real driver.
std::optional<unsigned long long> driver_calls(char const* which)
{
  using Count = unsigned long long (*)(char const*);
  static auto const count =
    reinterpret_cast<Count>(::dlsym(RTLD_DEFAULT, "cudasim_ipc_call_count"));
  if (count == nullptr) { return std::nullopt; }
  return count(which);
}

// The growth of a simulator count over a block; true with a real driver (nothing to count).
template <typename F>
::testing::AssertionResult calls_grow_by(char const* which, unsigned long long expected, F&& f)
{
  auto const before = driver_calls(which);
  f();
  auto const after = driver_calls(which);
  if (!before) { return ::testing::AssertionSuccess(); }
  if (*after - *before == expected) { return ::testing::AssertionSuccess(); }
  return ::testing::AssertionFailure()
         << which << " calls grew by " << (*after - *before) << ", expected " << expected;
}

std::vector<std::uint8_t> read_device(void const* ptr, std::size_t n)
{
  std::vector<std::uint8_t> out(n, 0xEE);
  KVIKIO_CUDA_DRIVER_TRY(
    api().MemcpyDtoH(out.data(), reinterpret_cast<CUdeviceptr>(ptr), out.size()));
  return out;
}

DeviceBuffer& filled(DeviceBuffer& buf, std::uint32_t seed)
{
  auto const data = pattern(buf.size, seed);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(buf.ptr, data.data(), data.size()));
  return buf;
}

class Ipc : public OnDevice {
 protected:
  void SetUp() override
  {
    OnDevice::SetUp();
    if (IsSkipped()) { return; }
    ipc::clear();
  }
  void TearDown() override
  {
    ipc::clear();
    kvikio::defaults::set_ipc_export_cache_size(1024);  // as tests in one process expect
    kvikio::defaults::set_ipc_open_cache_size(128);
    OnDevice::TearDown();
  }
};

TEST_F(Ipc, BlobRoundTripAndCorruption)
{
  DeviceBuffer dev{nbytes};
  auto const h = ipc::export_memory(reinterpret_cast<void*>(dev.ptr + 100), 5000);
  EXPECT_EQ(h.offset, 100U);
  EXPECT_EQ(h.length, 5000U);
  EXPECT_EQ(h.alloc_base, dev.ptr);
  EXPECT_GE(h.alloc_size, nbytes);
  EXPECT_EQ(h.producer, ipc::ProducerId::self());
  EXPECT_EQ(h.producer.pid, ::getpid());
  EXPECT_NE(h.producer.start_time, 0U);
  auto const bytes = h.to_bytes();
  auto const back  = ipc::IpcHandle::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(std::memcmp(&back, &h, sizeof(h)), 0);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto altered = bytes;
    altered[i] ^= std::byte{0x10};
    EXPECT_THROW((void)ipc::IpcHandle::from_bytes(altered.data(), altered.size()),
                 std::invalid_argument)
      << "byte " << i << " altered";
  }
  try {
    (void)ipc::IpcHandle::from_bytes(bytes.data(), bytes.size() - 1);
    FAIL() << "a truncated blob was accepted";
  } catch (std::invalid_argument const& e) {
    EXPECT_NE(std::string{e.what()}.find("175 bytes, expected 176"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)ipc::IpcHandle::from_bytes(nullptr, bytes.size()), std::invalid_argument);
  // An event handle is no memory handle, and the other way round.
  ipc::InterprocessEvent event;
  auto const eb = event.handle().to_bytes();
  EXPECT_THROW((void)ipc::IpcHandle::from_bytes(eb.data(), eb.size()), std::invalid_argument);
  std::vector<std::byte> longer(ipc::IpcEventHandle::nbytes);
  std::memcpy(longer.data(), bytes.data(), longer.size());
  try {
    (void)ipc::IpcEventHandle::from_bytes(longer.data(), longer.size());
    FAIL() << "a memory handle's bytes were taken for an event handle";
  } catch (std::invalid_argument const& e) {
    EXPECT_NE(std::string{e.what()}.find("magic"), std::string::npos) << e.what();
  }
}

TEST_F(Ipc, ExportIsCachedPerAllocation)
{
  DeviceBuffer dev{nbytes};
  std::optional<ipc::IpcHandle> a;
  std::optional<ipc::IpcHandle> b;
  EXPECT_TRUE(calls_grow_by("get", 1, [&] {
    a = ipc::export_memory(reinterpret_cast<void*>(dev.ptr), 10);
    b = ipc::export_memory(reinterpret_cast<void*>(dev.ptr + 4096), nbytes - 4096);
  }));
  EXPECT_EQ(std::memcmp(&a->cuda_handle, &b->cuda_handle, sizeof(CUipcMemHandle)), 0);
  EXPECT_EQ(b->offset, 4096U);
  auto const s = ipc::export_cache_stats();
  EXPECT_EQ(s.misses, 1U);
  EXPECT_EQ(s.hits, 1U);
  EXPECT_EQ(s.entries, 1U);
  // forget(): the next export asks the driver again.
  ipc::forget(reinterpret_cast<void*>(dev.ptr + 7));
  EXPECT_TRUE(calls_grow_by(
    "get", 1, [&] { (void)ipc::export_memory(reinterpret_cast<void*>(dev.ptr), 1); }));
}

TEST_F(Ipc, ExportCacheBoundAndNoCaching)
{
  kvikio::defaults::set_ipc_export_cache_size(2);
  DeviceBuffer d0{4096};
  DeviceBuffer d1{4096};
  DeviceBuffer d2{4096};
  for (auto* d : {&d0, &d1, &d2, &d2, &d0}) {  // d0 was evicted by d2
    (void)ipc::export_memory(d->get(), 1);
  }
  auto s = ipc::export_cache_stats();
  EXPECT_EQ(s.entries, 2U);
  EXPECT_EQ(s.misses, 4U);
  EXPECT_EQ(s.hits, 1U);
  EXPECT_EQ(s.evictions, 2U);
  kvikio::defaults::set_ipc_export_cache_size(0);
  ipc::clear();
  EXPECT_TRUE(calls_grow_by("get", 2, [&] {
    (void)ipc::export_memory(d1.get(), 1);
    (void)ipc::export_memory(d1.get(), 1);
  }));
  s = ipc::export_cache_stats();
  EXPECT_EQ(s.entries, 0U);
  EXPECT_EQ(s.misses, 2U);
}

// Free + allocation of the same size: the driver tends to hand out the same address, with a new
// buffer id; the export cache must not hand out the old allocation's handle.
TEST_F(Ipc, ReallocationAtTheSameAddressIsExportedAgain)
{
  CUdeviceptr first{};
  KVIKIO_CUDA_DRIVER_TRY(api().MemAlloc(&first, nbytes));
  auto const old = ipc::export_memory(reinterpret_cast<void*>(first), nbytes);
  KVIKIO_CUDA_DRIVER_TRY(api().MemFree(first));
  DeviceBuffer second{nbytes};
  auto const fresh = ipc::export_memory(second.get(), nbytes);
  EXPECT_NE(fresh.buffer_id, old.buffer_id);
  auto const s = ipc::export_cache_stats();
  EXPECT_EQ(s.misses, 2U);
  EXPECT_EQ(s.hits, 0U);
  if (second.ptr == first) {
    EXPECT_EQ(s.stale, 1U);
  } else {
    std::printf("note: the reallocation landed elsewhere; the stale path was not taken\n");
  }
}

TEST_F(Ipc, BadExportsAreRejected)
{
  DeviceBuffer dev{nbytes};
  std::vector<std::uint8_t> host(64);
  EXPECT_THROW((void)ipc::export_memory(nullptr, 1), std::invalid_argument);
  try {
    (void)ipc::export_memory(host.data(), host.size());
    FAIL() << "host memory was exported";
  } catch (std::invalid_argument const& e) {
    EXPECT_NE(std::string{e.what()}.find("not device memory"), std::string::npos) << e.what();
  }
  try {
    (void)ipc::export_memory(reinterpret_cast<void*>(dev.ptr + 10), nbytes);
    FAIL() << "a range past the allocation was exported";
  } catch (std::invalid_argument const& e) {
    EXPECT_NE(std::string{e.what()}.find("leave the allocation"), std::string::npos) << e.what();
  }
}

// A handle of this process whose allocation was freed names nothing: open() refuses it (the
// address may hold another allocation by now), and the new allocation's own handle opens.
TEST_F(Ipc, AStaleHandleOfThisProcessIsRefused)
{
  CUdeviceptr first{};
  KVIKIO_CUDA_DRIVER_TRY(api().MemAlloc(&first, nbytes));
  auto const old = ipc::export_memory(reinterpret_cast<void*>(first), nbytes);
  ipc::forget(reinterpret_cast<void*>(first));
  KVIKIO_CUDA_DRIVER_TRY(api().MemFree(first));
  DeviceBuffer second{nbytes};
  try {
    (void)ipc::open(old);
    FAIL() << "a stale handle of this process opened";
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("stale"), std::string::npos) << e.what();
  }
  auto const fresh = ipc::export_memory(second.get(), nbytes);
  EXPECT_EQ(ipc::open(fresh).get(), second.get());
}

TEST_F(Ipc, SameProcessOpenIsTheOriginalPointer)
{
  DeviceBuffer dev{nbytes};
  auto const h = ipc::export_memory(reinterpret_cast<void*>(dev.ptr + 64), 128);
  ipc::MappedRegion region;
  EXPECT_TRUE(calls_grow_by("open", 0, [&] { region = ipc::open(h); }));
  EXPECT_EQ(region.get(), reinterpret_cast<void*>(dev.ptr + 64));
  EXPECT_EQ(region.size(), 128U);
  EXPECT_EQ(ipc::open_cache_stats().entries, 0U);
}

// ---------------------------------------------------------------------------------------------
// Two processes. The parent (producer) sends three handles and an event handle; on 'R' it frees
// and reallocates the third allocation and sends its new handle; on 'Q' the child is done.

constexpr std::uint32_t realloc_seed = 99;

void write_all(int fd, void const* data, std::size_t n)
{
  auto const* p = static_cast<char const*>(data);
  while (n > 0) {
    ssize_t const w = ::write(fd, p, n);
    if (w <= 0) { throw std::runtime_error("pipe write failed"); }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

bool read_all(int fd, void* data, std::size_t n)
{
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t const r = ::read(fd, p, n);
    if (r <= 0) { return false; }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

template <typename Handle>
void send(int fd, Handle const& h)
{
  auto const bytes = h.to_bytes();
  write_all(fd, bytes.data(), bytes.size());
}

TEST_F(Ipc, TwoProcesses)
{
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  for (std::uint32_t i = 0; i < 3; ++i) {
    buffers.push_back(std::make_unique<DeviceBuffer>(nbytes));
    filled(*buffers.back(), i);
  }
  // From pageable memory a copy may still be in flight when cuMemcpyHtoD returns: the event,
  // recorded on the same (legacy) stream after the fills, tells the consumer when they landed.
  ipc::InterprocessEvent written;
  KVIKIO_CUDA_DRIVER_TRY(api().EventRecord(written.get(), nullptr));
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  for (auto const& b : buffers) {
    send(to_child[1], ipc::export_memory(b->get(), nbytes));
  }
  send(to_child[1], written.handle());
  std::atomic<bool> reallocated{false};
  CUcontext const ctx = ctx_;
  std::thread server{[&] {
    char c{};
    while (::read(from_child[0], &c, 1) == 1 && c == 'R') {
      KVIKIO_CUDA_DRIVER_TRY(api().CtxPushCurrent(ctx));
      ipc::forget(buffers[2]->get());
      buffers[2].reset();
      buffers[2] = std::make_unique<DeviceBuffer>(nbytes);
      filled(*buffers[2], realloc_seed);
      KVIKIO_CUDA_DRIVER_TRY(api().CtxSynchronize());  // landed before the consumer reads it
      send(to_child[1], ipc::export_memory(buffers[2]->get(), nbytes));
      CUcontext popped{};
      KVIKIO_CUDA_DRIVER_TRY(api().CtxPopCurrent(&popped));
      reallocated = true;
    }
  }};
  int const status =
    kvikio::test::run_child_test("DISABLED_Consumer",
                                 {"KVIKIO_TEST_IPC_IN=" + std::to_string(to_child[0]),
                                  "KVIKIO_TEST_IPC_OUT=" + std::to_string(from_child[1])});
  ::close(from_child[1]);  // the server sees the end if the child never said 'Q'
  server.join();
  for (int fd : {to_child[0], to_child[1], from_child[0]}) {
    ::close(fd);
  }
  EXPECT_EQ(status, 0) << "the consumer failed (its output is above)";
  EXPECT_TRUE(reallocated) << "the consumer never asked for the reallocation";
  // The consumer wrote the first half of allocation 0.
  auto const seen     = read_device(buffers[0]->get(), nbytes);
  auto const expected = pattern(nbytes / 2, 50);
  auto const original = pattern(nbytes, 0);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), seen.begin()));
  EXPECT_TRUE(std::equal(original.begin() + nbytes / 2, original.end(), seen.begin() + nbytes / 2));
}

// Runs only as the child of TwoProcesses.
TEST_F(Ipc, DISABLED_Consumer)
{
  char const* in_text  = std::getenv("KVIKIO_TEST_IPC_IN");
  char const* out_text = std::getenv("KVIKIO_TEST_IPC_OUT");
  ASSERT_TRUE(in_text != nullptr && out_text != nullptr) << "run by TwoProcesses only";
  int const in  = std::atoi(in_text);
  int const out = std::atoi(out_text);
  auto receive  = [&] {
    std::array<std::byte, ipc::IpcHandle::nbytes> bytes{};
    EXPECT_TRUE(read_all(in, bytes.data(), bytes.size()));
    return ipc::IpcHandle::from_bytes(bytes.data(), bytes.size());
  };
  std::vector<ipc::IpcHandle> h{receive(), receive(), receive()};
  std::array<std::byte, ipc::IpcEventHandle::nbytes> event_bytes{};
  ASSERT_TRUE(read_all(in, event_bytes.data(), event_bytes.size()));
  {
    ipc::OpenedEvent written{
      ipc::IpcEventHandle::from_bytes(event_bytes.data(), event_bytes.size())};
    ASSERT_EQ(api().EventSynchronize(written.get()), CUDA_SUCCESS);
  }

  // Read what the producer wrote, write half of it back; the mapping stays cached.
  {
    ipc::MappedRegion r0 = ipc::open(h[0]);
    ASSERT_EQ(r0.size(), nbytes);
    EXPECT_EQ(read_device(r0.get(), nbytes), pattern(nbytes, 0));
    auto const half = pattern(nbytes / 2, 50);
    KVIKIO_CUDA_DRIVER_TRY(
      api().MemcpyHtoD(reinterpret_cast<CUdeviceptr>(r0.get()), half.data(), half.size()));
    KVIKIO_CUDA_DRIVER_TRY(api().CtxSynchronize());
  }
  EXPECT_TRUE(calls_grow_by("open", 0, [&] {
    ipc::MappedRegion again = ipc::open(h[0]);
    ipc::MappedRegion copy  = again;  // copies share the mapping
    EXPECT_EQ(copy.get(), again.get());
  }));
  auto s = ipc::open_cache_stats();
  EXPECT_EQ(s.misses, 1U);
  EXPECT_EQ(s.hits, 1U);
  EXPECT_EQ(s.entries, 1U);

  // A bound of 2 over 3 allocations, one at a time: the least recently used is unmapped, once.
  ipc::clear();
  kvikio::defaults::set_ipc_open_cache_size(2);
  EXPECT_TRUE(calls_grow_by("close", 1, [&] {
    for (std::size_t i : {0, 1, 2}) {
      ipc::MappedRegion r = ipc::open(h[i]);
      EXPECT_EQ(read_device(r.get(), 64), read_device(r.get(), 64));
    }
  }));
  s = ipc::open_cache_stats();
  EXPECT_EQ(s.entries, 2U);
  EXPECT_EQ(s.evictions, 1U);
  EXPECT_EQ(s.overflows, 0U);
  // All three in use: the idle ones are evicted as the others come in, then the bound is
  // exceeded (counted) rather than anything unmapped under a user.
  {
    std::vector<ipc::MappedRegion> held;
    for (std::size_t i : {0, 1, 2}) {
      held.push_back(ipc::open(h[i]));
    }
    EXPECT_EQ(ipc::open_cache_stats().entries, 3U);
    EXPECT_GE(ipc::open_cache_stats().overflows, 1U);
    for (std::uint32_t i = 0; i < 3; ++i) {
      auto expected = i == 0 ? pattern(nbytes / 2, 50) : pattern(nbytes, i);  // 0: written above
      expected.resize(4096);
      EXPECT_EQ(read_device(held[i].get(), 4096), expected) << "mapping " << i;
    }
  }
  EXPECT_EQ(ipc::open_cache_stats().entries, 2U);

  // 16 threads open one allocation at once, 50 times each: one driver open.
  ipc::clear();
  kvikio::defaults::set_ipc_open_cache_size(128);
  std::atomic<int> wrong{0};
  EXPECT_TRUE(calls_grow_by("open", 1, [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&] {
        kvikio::PushAndPopContext const context{ctx_};
        for (int i = 0; i < 50; ++i) {
          ipc::MappedRegion r = ipc::open(h[1]);
          if (read_device(r.get(), 16) != std::vector<std::uint8_t>(pattern(16, 1))) { ++wrong; }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
  }));
  EXPECT_EQ(wrong.load(), 0);
  s = ipc::open_cache_stats();
  EXPECT_EQ(s.misses, 1U);
  EXPECT_EQ(s.hits, 16U * 50U - 1U);

  // Shuffled opens and releases of the three allocations from 8 threads with a bound of 2:
  // evictions race with opens and releases (TSan checks the locking); every mapping read has
  // its allocation's bytes, and once all is released the bound holds again.
  {
    kvikio::defaults::set_ipc_open_cache_size(2);
    std::vector<std::vector<std::uint8_t>> heads;
    for (std::uint32_t k = 0; k < 3; ++k) {
      auto head = k == 0 ? pattern(nbytes / 2, 50) : pattern(nbytes, k);
      head.resize(16);
      heads.push_back(head);
    }
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (std::uint32_t t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        kvikio::PushAndPopContext const context{ctx_};
        std::uint32_t x = t * 7919U + 1U;
        for (int i = 0; i < 200; ++i) {
          x                   = x * 1103515245U + 12345U;
          auto const k        = (x >> 16) % 3;
          ipc::MappedRegion r = ipc::open(h[k]);
          if (read_device(r.get(), 16) != heads[k]) { ++mismatches; }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_LE(ipc::open_cache_stats().entries, 2U);
    kvikio::defaults::set_ipc_open_cache_size(128);
  }

  // A handle altered to claim twice its allocation and sealed again: its range is checked
  // against what the driver mapped, when the mapping is made and when it is found cached.
  {
    auto altered = h[1];
    altered.alloc_size *= 2;
    altered.length = altered.alloc_size;
    ipc::detail::seal(altered);
    for (bool const cached : {false, true}) {
      if (cached) {
        (void)ipc::open(h[1]);
      }  // the true handle maps it, and it stays cached
      else {
        ipc::clear();
      }
      try {
        (void)ipc::open(altered);
        ADD_FAILURE() << "an altered handle's range was trusted past the mapping, cached "
                      << cached;
      } catch (std::invalid_argument const& e) {
        EXPECT_NE(std::string{e.what()}.find("altered"), std::string::npos) << e.what();
      }
    }
    auto head = pattern(nbytes, 1);
    head.resize(16);
    EXPECT_EQ(read_device(ipc::open(h[1]).get(), 16), head);
  }

  // The producer frees allocation 2 and allocates again (often at the same address): the new
  // handle must map the new memory, and the old mapping goes.
  {
    (void)ipc::open(h[2]);
  }  // cached, idle
  char const realloc_request = 'R';
  write_all(out, &realloc_request, 1);
  auto const h2 = receive();
  EXPECT_NE(h2.buffer_id, h[2].buffer_id);
  EXPECT_TRUE(calls_grow_by("close", h2.alloc_base == h[2].alloc_base ? 1 : 0, [&] {
    ipc::MappedRegion r = ipc::open(h2);
    EXPECT_EQ(read_device(r.get(), nbytes), pattern(nbytes, realloc_seed))
      << "a stale mapping was served for a reallocated allocation";
  }));
  if (h2.alloc_base == h[2].alloc_base) {
    EXPECT_EQ(ipc::open_cache_stats().stale, 1U);
    std::printf("stale path taken: the reallocation reused the producer's address\n");
  } else {
    std::printf("note: the reallocation landed elsewhere; the stale path was not taken\n");
  }

  // No caching: unmapped as soon as released.
  kvikio::defaults::set_ipc_open_cache_size(0);
  ipc::clear();
  EXPECT_TRUE(calls_grow_by("close", 2, [&] {
    (void)ipc::open(h[0]);
    (void)ipc::open(h[0]);
  }));
  EXPECT_EQ(ipc::open_cache_stats().entries, 0U);

  // invalidate_producer: that producer's idle mappings go at once, one in use once released.
  kvikio::defaults::set_ipc_open_cache_size(128);
  (void)ipc::open(h[0]);
  ipc::MappedRegion in_use = ipc::open(h[1]);
  EXPECT_TRUE(calls_grow_by("close", 1, [&] { ipc::invalidate_producer(h[0].producer); }));
  EXPECT_EQ(ipc::open_cache_stats().entries, 0U);
  EXPECT_EQ(read_device(in_use.get(), 16), pattern(16, 1));
  EXPECT_TRUE(calls_grow_by("close", 1, [&] { in_use.reset(); }));

  char const done = 'Q';
  write_all(out, &done, 1);
}

}  // namespace
