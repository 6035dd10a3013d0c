/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The bounce-buffer ring, the event pool and the per-thread streams. Under the simulator with
 * CUDASIM_JITTER_US (the ".jitter" variants) copies complete late and in random order of
 * streams, which is what exposes a slot reused too early.
 */
#include <linux/mempolicy.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/event.hpp>
#include <kvikio/file_handle.hpp>

#include "common/device.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "cuda/pinned_memory.hpp"
#include "cuda/stream_cache.hpp"

using kvikio::test::api;
using kvikio::test::DeviceBuffer;
using kvikio::test::OnDevice;
using kvikio::test::pattern;

namespace {

using kvikio::test::poison;

// Random reads and writes through FileHandle with ring depth k, byte-exact, guards checked.
void random_round_trips(std::size_t k, std::uint32_t seed)
{
  kvikio::defaults::set_num_bounce_buffers(k);
  kvikio::defaults::set_bounce_buffer_size(64 << 10);  // small slots: many wrap-arounds
  kvikio::defaults::set_thread_pool_nthreads(3);
  kvikio::test::TempDir dir;
  auto const path = dir.file("f");
  // Reads of up to 128 KiB in 32 KiB tasks through slots of 8 to 64 KiB: every wrap-around of
  // the deepest ring, at a quarter of the bytes a MiB would cost the sanitizer builds.
  std::size_t const n = 256 << 10;
  auto const content  = pattern(n, seed);
  kvikio::test::write_file(path, content);
  std::mt19937 rng{seed};
  kvikio::FileHandle f{path, "r+"};
  DeviceBuffer dev{n + 128};
  for (int round = 0; round < 8; ++round) {
    std::size_t const size   = std::uniform_int_distribution<std::size_t>{1, n / 2}(rng);
    std::size_t const offset = std::uniform_int_distribution<std::size_t>{0, n - size}(rng);
    std::vector<std::uint8_t> fill(n + 128, poison);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoD(dev.ptr, fill.data(), fill.size()));
    ASSERT_EQ(f.pread(reinterpret_cast<char*>(dev.get()) + 64, size, offset, 32 << 10, 4096).get(),
              size);
    std::vector<std::uint8_t> back(n + 128);
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, back.size()));
    ASSERT_TRUE(std::all_of(back.begin(), back.begin() + 64, [](auto b) { return b == poison; }));
    ASSERT_EQ(0, std::memcmp(back.data() + 64, content.data() + offset, size))
      << "k " << k << " round " << round;
    ASSERT_TRUE(std::all_of(back.begin() + 64 + static_cast<std::ptrdiff_t>(size),
                            back.end(),
                            [](auto b) { return b == poison; }));
    // Write the same bytes elsewhere through the ring, read them back with POSIX.
    std::size_t const woff = (offset + n / 3) % (n - size + 1);
    ASSERT_EQ(f.pwrite(reinterpret_cast<char*>(dev.get()) + 64, size, woff, 32 << 10, 4096).get(),
              size);
    auto const disk = kvikio::test::read_file(path);
    ASSERT_EQ(0, std::memcmp(disk.data() + woff, content.data() + offset, size))
      << "k " << k << " round " << round;
    kvikio::test::write_file(path, content);  // restore for the next round
  }
}

class RingDepth : public OnDevice, public ::testing::WithParamInterface<std::size_t> {};

TEST_P(RingDepth, RandomReadsAndWritesAreByteExact)
{
  for (std::uint32_t seed : {1U, 2U, 3U}) {
    random_round_trips(GetParam(), seed);
    if (HasFatalFailure()) { return; }
  }
}

INSTANTIATE_TEST_SUITE_P(K,
                         RingDepth,
                         ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8),
                         [](auto const& info) {
                           return std::to_string(info.param).insert(0, 1, 'k');
                         });

TEST_F(OnDevice, RingSlotsShareOneBufferAndPinnedMemoryIsBounded)
{
  auto& pool = kvikio::BounceBufferPool<>::instance();
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  pool.clear();
  std::size_t const before = pool.pinned_bytes();
  {
    kvikio::BounceBufferRing<> ring{4};
    EXPECT_EQ(ring.num_slots(), 4U);
    EXPECT_EQ(ring.slot_size(), 256U << 10);
    EXPECT_EQ(pool.pinned_bytes(), before + (1U << 20));  // one buffer, not four
    kvikio::BounceBufferRing<> deep{1000};                // never smaller than a page per slot
    EXPECT_EQ(deep.slot_size() % 4096, 0U);
    EXPECT_LE(deep.num_slots() * deep.slot_size(), 1U << 20);
  }
  EXPECT_EQ(pool.num_free_buffers(), 2U);
  EXPECT_THROW(kvikio::BounceBufferRing<>{0}, std::invalid_argument);
  EXPECT_THROW((kvikio::BounceBufferRing<>{4, 0}), std::invalid_argument);
}

// A buffer that comes back after the size setting changed is freed, not kept for later gets.
TEST_F(OnDevice, BufferOfAnOldSizeIsFreedOnReturn)
{
  auto& pool = kvikio::BounceBufferPool<>::instance();
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  pool.clear();
  std::size_t const before = pool.pinned_bytes();
  std::size_t const freed  = pool.num_freed();
  {
    auto buf = pool.get();
    EXPECT_EQ(buf.size(), 1U << 20);
    kvikio::defaults::set_bounce_buffer_size(2 << 20);
  }
  EXPECT_EQ(pool.num_free_buffers(), 0U);
  EXPECT_EQ(pool.num_freed(), freed + 1);
  EXPECT_EQ(pool.pinned_bytes(), before);
  {
    auto buf = pool.get();  // the new size, kept on return
    EXPECT_EQ(buf.size(), 2U << 20);
  }
  EXPECT_EQ(pool.num_free_buffers(), 1U);
  pool.clear();
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
}

// Part pools lend smaller buffers (a half down to a 256th of the setting, whole pages): the
// smallest that holds what is asked for, counted in the whole pool's pinned bytes, freed by its
// clear(), following the size setting like the whole buffers; a ring takes its buffer from one.
TEST_F(OnDevice, PartPoolsLendSmallerBuffers)
{
  auto& pool             = kvikio::BounceBufferPool<>::instance();
  std::size_t const page = kvikio::get_page_size();
  auto const pages = [page](std::size_t bytes) { return std::max(bytes / page * page, page); };
  kvikio::defaults::set_bounce_buffer_size(16 << 20);
  pool.clear();
  std::size_t const before = pool.pinned_bytes();
  EXPECT_EQ(&pool.part_pool_for(16 << 20), &pool);
  EXPECT_EQ(&pool.part_pool_for((8 << 20) + 1), &pool);  // no half holds it
  EXPECT_EQ(pool.part_pool_for(8 << 20).buffer_size(), 8U << 20);
  EXPECT_EQ(pool.part_pool_for(100 << 10).buffer_size(), pages(128U << 10));
  EXPECT_EQ(pool.part_pool_for(1).buffer_size(), pages(64U << 10));  // a 256th at the least
  auto& part = pool.part_pool_for(40000);
  EXPECT_EQ(&pool.part_pool_for(64 << 10), &part);
  EXPECT_EQ(&part.part_pool_for(1), &part);  // a part has no parts of its own
  {
    kvikio::BounceBufferRing<> ring{1, 1, 40000, &part};
    EXPECT_EQ(ring.slot_size(), 40000 / page * page);
    EXPECT_EQ(pool.pinned_bytes(), before + part.buffer_size());  // not a bounce buffer's
    EXPECT_EQ(part.pinned_bytes(), part.buffer_size());
  }
  EXPECT_EQ(part.num_free_buffers(), 1U);
  EXPECT_EQ(pool.num_free_buffers(), 0U);  // whole buffers only
  EXPECT_EQ(pool.clear(), part.buffer_size());
  EXPECT_EQ(part.num_free_buffers(), 0U);
  EXPECT_EQ(pool.pinned_bytes(), before);

  // A smaller setting: the same part pool now lends a 256th of it, and a buffer of the old size
  // is freed when it comes back.
  std::size_t const freed = part.num_freed();
  {
    auto buf = part.get();
    EXPECT_EQ(buf.size(), pages(64U << 10));
    kvikio::defaults::set_bounce_buffer_size(2 << 20);
  }
  EXPECT_EQ(part.num_freed(), freed + 1);
  EXPECT_EQ(part.buffer_size(), pages(8U << 10));
  EXPECT_EQ(part.get().size(), pages(8U << 10));
  EXPECT_EQ(pool.pinned_bytes(), before + pages(8U << 10));  // kept for the next get()

  // A part no longer asked for after the setting changed frees its waiting buffers at the next
  // lookup instead of keeping them pinned.
  auto& half = pool.part_pool_for(1 << 20);  // a half of 2 MiB
  {
    auto buf = half.get();
  }
  EXPECT_EQ(half.num_free_buffers(), 1U);
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  (void)pool.part_pool_for(1);
  EXPECT_EQ(half.num_free_buffers(), 0U) << "a part kept buffers of an old size";
  pool.clear();
  kvikio::defaults::set_bounce_buffer_size(4 * page);  // parts of a page, then none
  EXPECT_EQ(pool.part_pool_for(1).buffer_size(), page);
  EXPECT_EQ(&pool.part_pool_for(2 * page + 1), &pool);
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
}

// A cap on the slot size: the ring uses the start of its buffer, whole pages, at least one.
TEST_F(OnDevice, RingSlotsMayBeCapped)
{
  auto& pool = kvikio::BounceBufferPool<>::instance();
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  std::size_t const page = kvikio::get_page_size();
  {
    kvikio::BounceBufferRing<> capped{4, 1, 64 << 10};
    EXPECT_EQ(capped.num_slots(), 4U);
    EXPECT_EQ(capped.slot_size(), 64U << 10);
    EXPECT_EQ(capped.buffer_span(), 256U << 10);
    EXPECT_EQ(capped.data(0), capped.buffer(0));
    kvikio::BounceBufferRing<> odd{4, 1, 64 * 1024 + 100};  // rounded down to whole pages
    EXPECT_EQ(odd.slot_size(), (64U * 1024 + 100) / page * page);
    kvikio::BounceBufferRing<> tiny{4, 1, 10};  // never below a page
    EXPECT_EQ(tiny.slot_size(), page);
    kvikio::BounceBufferRing<> loose{4, 1, 8 << 20};  // a cap above the share changes nothing
    EXPECT_EQ(loose.slot_size(), 256U << 10);
  }
  EXPECT_EQ(pool.bytes_on_loan(), 0U);
}

// A ring over several pool buffers (io_uring's deeper staging): k slots in each, every slot
// inside its own buffer, and the buffers back in the pool afterwards.
TEST_F(OnDevice, RingOverSeveralBuffers)
{
  auto& pool = kvikio::BounceBufferPool<>::instance();
  kvikio::defaults::set_bounce_buffer_size(1 << 20);
  pool.clear();
  std::size_t const before = pool.pinned_bytes();
  {
    kvikio::BounceBufferRing<> ring{3, 2};
    ASSERT_EQ(ring.num_buffers(), 2U);
    EXPECT_EQ(ring.num_slots(), 6U);
    EXPECT_EQ(pool.pinned_bytes(), before + (2U << 20));
    EXPECT_EQ(ring.buffer_span(), 3 * ring.slot_size());
    EXPECT_LE(ring.buffer_span(), 1U << 20);
    for (std::size_t i = 0; i < ring.num_slots(); ++i) {
      auto const* base = static_cast<std::byte*>(ring.buffer(i / 3));
      auto const* slot = static_cast<std::byte*>(ring.data(i));
      EXPECT_GE(slot, base) << "slot " << i;
      EXPECT_LE(slot + ring.slot_size(), base + ring.buffer_span()) << "slot " << i;
    }
    EXPECT_NE(ring.buffer(0), ring.buffer(1));
  }
  EXPECT_EQ(pool.num_free_buffers(), 2U);
}

// The harness catches a ring that reuses slots without waiting: the broken cycle below refills
// slots whose copies may still be pending.
TEST_F(OnDevice, RingWithoutWrapAroundWaitIsCaughtUnderJitter)
{
  if (!kvikio::test::on_simulator() || std::getenv("CUDASIM_JITTER_US") == nullptr) {
    GTEST_SKIP() << "needs the simulator with CUDASIM_JITTER_US (the .jitter variant)";
  }
  kvikio::defaults::set_bounce_buffer_size(64 << 10);
  auto buffer             = kvikio::BounceBufferPool<>::instance().get();
  std::size_t const k     = 4;
  std::size_t const slot  = buffer.size() / k;
  std::size_t const total = slot * 64;
  auto const src          = pattern(total, 21);
  DeviceBuffer dev{total};
  kvikio::test::Stream stream;
  for (std::size_t i = 0; i * slot < total; ++i) {
    auto* p = static_cast<std::uint8_t*>(buffer.get()) + (i % k) * slot;
    std::memcpy(p, src.data() + i * slot, slot);  // no wait for the slot's previous copy
    KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr + i * slot, p, slot, stream.handle));
  }
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  std::vector<std::uint8_t> back(total);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, total));
  EXPECT_NE(back, src) << "the simulator failed to expose slots reused before their copies ran";
}

TEST_F(OnDevice, EventPoolReusesPerContextAndCounts)
{
  auto& pool               = kvikio::EventPool::instance();
  std::size_t const before = pool.num_free_events(ctx_);
  CUevent first{};
  {
    auto e = pool.get();
    first  = e.get();
    EXPECT_EQ(e.context(), ctx_);
    EXPECT_TRUE(e.is_done());  // never recorded
  }
  EXPECT_EQ(pool.num_free_events(ctx_), before + 1);
  {
    auto again = pool.get();
    EXPECT_EQ(again.get(), first);  // LIFO reuse
    kvikio::test::Stream stream;
    again.record(stream.handle);
    again.synchronize();
    EXPECT_TRUE(again.is_done());
  }
  // Another device's context has its own list.
  int count = 0;
  KVIKIO_CUDA_DRIVER_TRY(api().DeviceGetCount(&count));
  if (count > 1) {
    CUcontext other = kvikio::get_primary_cuda_context(1);
    kvikio::PushAndPopContext const guard{other};
    std::size_t const other_before = pool.num_free_events(other);
    {
      auto e = pool.get();
      EXPECT_EQ(e.context(), other);
    }
    EXPECT_EQ(pool.num_free_events(other), other_before + 1);
    EXPECT_EQ(pool.num_free_events(ctx_), before + 1);
  }
}

TEST_F(OnDevice, EventPoolCapDestroysSurplus)
{
  auto& pool = kvikio::EventPool::instance();
  kvikio::defaults::set_event_pool_max_per_context(2);
  {
    std::vector<kvikio::Event> events;
    for (int i = 0; i < 5; ++i) {
      events.push_back(pool.get());
    }
  }
  EXPECT_EQ(pool.num_free_events(ctx_), 2U);
  kvikio::defaults::set_event_pool_max_per_context(0);
}

TEST_F(OnDevice, EventPoolUnderConcurrency)
{
  auto& pool = kvikio::EventPool::instance();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      try {
        kvikio::PushAndPopContext const guard{ctx_};
        for (int i = 0; i < 50; ++i) {
          auto a = pool.get();
          auto b = pool.get();
          if (a.get() == b.get()) { ++failures; }
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(pool.num_free_events(ctx_), 32U);  // at most two per thread ever existed at once
  EXPECT_EQ(pool.total_free_events(),
            pool.num_free_events(ctx_) + pool.total_free_events() - pool.num_free_events(ctx_));
}

TEST(EventPoolWithoutContext, ClearError)
{
  if (!kvikio::is_cuda_available()) {
    GTEST_SKIP() << "no CUDA device: " << kvikio::detail::cuda_unavailable_reason();
  }
  try {
    (void)kvikio::EventPool::instance().get();
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("no current CUDA context"), std::string::npos) << e.what();
  }
}

TEST_F(OnDevice, StreamsPerThreadAndContext)
{
  std::vector<CUstream> streams(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < streams.size(); ++t) {
    threads.emplace_back([&, t] {
      CUstream const s = kvikio::detail::stream_for_this_thread(ctx_);
      if (kvikio::detail::stream_for_this_thread(ctx_) == s) { streams[t] = s; }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(std::set<CUstream>(streams.begin(), streams.end()).size(), streams.size());
  EXPECT_EQ(std::count(streams.begin(), streams.end(), nullptr), 0);
}

// Run by ctest with CUDASIM_FAIL on a driver call of the ring path (see CMakeLists.txt), after
// the ring's four slots have their events: the call fails clearly, the buffer and the events
// return to their pools, the next call succeeds.
TEST_F(OnDevice, InjectedRingFailureLeavesPoolsWhole)
{
  if (std::getenv("CUDASIM_FAIL") == nullptr) {
    GTEST_SKIP() << "runs with CUDASIM_FAIL set (ctest)";
  }
  std::size_t const bounce = 64 << 10;
  kvikio::defaults::set_bounce_buffer_size(bounce);
  kvikio::defaults::set_num_bounce_buffers(4);  // 16 KiB slots: a 1 MiB read is 64 chunks
  kvikio::defaults::set_thread_pool_nthreads(1);
  // The ring's path: POSIX reads (the default, auto, reads through io_uring's own staging).
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  kvikio::test::TempDir dir;
  auto const path     = dir.file("f");
  std::size_t const n = 1 << 20;
  auto const content  = pattern(n, 22);
  kvikio::test::write_file(path, content);
  kvikio::FileHandle f{path, "r"};
  DeviceBuffer dev{n};
  auto& buffers                 = kvikio::BounceBufferPool<>::instance();
  auto& events                  = kvikio::EventPool::instance();
  std::size_t const free_events = events.num_free_events(ctx_);
  try {
    (void)f.pread(dev.get(), n, 0, n).get();
    FAIL() << "the injected failure did not surface";
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("CUDA_ERROR_"), std::string::npos) << e.what();
  }
  EXPECT_EQ(buffers.bytes_on_loan(), 0U) << "a bounce buffer is still on loan";
  EXPECT_EQ(events.num_free_events(ctx_), free_events + 4)
    << "the ring's events did not all return";
  std::vector<std::uint8_t> back(n, poison);
  ASSERT_EQ(f.pread(dev.get(), n, 0, n).get(), n);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, n));
  EXPECT_EQ(back, content);
}

TEST_F(OnDevice, InjectedEventCreateFailure)
{
  if (std::getenv("CUDASIM_FAIL") == nullptr) {
    GTEST_SKIP() << "runs with CUDASIM_FAIL set (ctest)";
  }
  auto& pool               = kvikio::EventPool::instance();
  std::size_t const before = pool.num_free_events(ctx_);
  {
    auto first = pool.get();                                  // the first cuEventCreate succeeds
    EXPECT_THROW((void)pool.get(), kvikio::CUfileException);  // the second is refused
    EXPECT_EQ(pool.num_free_events(ctx_), before);
  }
  EXPECT_EQ(pool.num_free_events(ctx_), before + 1);
  auto again = pool.get();  // reused, no creation needed
  EXPECT_EQ(pool.num_free_events(ctx_), before);
}

}  // namespace

// Pinned staging: memory of this process, aligned for huge pages from 2 MiB up, registered (the
// driver calls it host memory and copies from it), and not mapped at all in a child of fork():
// copy-on-write would otherwise move the parent off the pages the device reads.
TEST_F(OnDevice, PinnedStagingIsRegisteredAndKeptFromChildren)
{
  std::size_t const size = (std::size_t{4} << 20) + 4096;
  void* pinned           = kvikio::CudaPinnedAllocator::allocate(size);
  auto const address     = reinterpret_cast<std::uintptr_t>(pinned);
  EXPECT_EQ(address % (std::size_t{2} << 20), 0U);
  CUmemorytype type{};
  KVIKIO_CUDA_DRIVER_TRY(
    api().PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr{address}));
  EXPECT_EQ(type, CU_MEMORYTYPE_HOST);

  auto const content = pattern(size, 41);
  std::memcpy(pinned, content.data(), size);
  DeviceBuffer dev{size};
  kvikio::test::Stream stream;
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyHtoDAsync(dev.ptr, pinned, size, stream.handle));
  KVIKIO_CUDA_DRIVER_TRY(api().StreamSynchronize(stream.handle));
  std::vector<std::uint8_t> back(size, poison);
  KVIKIO_CUDA_DRIVER_TRY(api().MemcpyDtoH(back.data(), dev.ptr, size));
  EXPECT_EQ(back, content);

  pid_t const pid = ::fork();
  if (pid == 0) {  // msync(2) says ENOMEM for a range that is not mapped
    int const r = ::msync(pinned, 4096, MS_ASYNC);
    ::_exit(r != 0 && errno == ENOMEM ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
    << "the child of fork() has the parent's pinned staging mapped";
  EXPECT_EQ(::msync(pinned, 4096, MS_ASYNC), 0) << "the parent's mapping stays";

  kvikio::CudaPinnedAllocator::deallocate(pinned, size);
  EXPECT_NE(::msync(pinned, 4096, MS_ASYNC), 0) << "freeing unmaps";
}

// The node staging is bound to: the device's node where the host has several online, none
// otherwise (the kernel's list of online nodes as sysfs writes it).
TEST(PinnedStaging, NodeFollowsTheDeviceOnlyWhereTheHostHasSeveral)
{
  using kvikio::detail::staging_numa_node;
  EXPECT_EQ(staging_numa_node(0, "0\n"), -1);  // one node: nothing to choose
  EXPECT_EQ(staging_numa_node(1, "0-1\n"), 1);
  EXPECT_EQ(staging_numa_node(0, "0-1"), 0);
  EXPECT_EQ(staging_numa_node(-1, "0-1"), -1);  // the driver knows no node
  EXPECT_EQ(staging_numa_node(2, "0-1"), -1);   // not online
  EXPECT_EQ(staging_numa_node(3, "0,2-3"), 3);
  EXPECT_EQ(staging_numa_node(1, "0,2-3"), -1);
  EXPECT_EQ(staging_numa_node(1, ""), -1);  // no sysfs: one node
  EXPECT_EQ(staging_numa_node(1, "nodes"), -1);
  EXPECT_EQ(staging_numa_node(1, "1-0"), -1);
}

// Binding: the pages prefer the node given, and are left to the kernel's default without one.
TEST_F(OnDevice, PinnedStagingPrefersTheNodeItIsGiven)
{
  {  // a host (or container) that refuses NUMA calls: the library goes on unbound, nothing to test
    std::size_t const page = 4096;
    void* scratch =
      ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(scratch, MAP_FAILED);
    unsigned long one = 1;
    long const r      = ::syscall(SYS_mbind, scratch, page, MPOL_PREFERRED, &one, 65, 0);
    int const error   = errno;
    ::munmap(scratch, page);
    if (r != 0) { GTEST_SKIP() << "this host refuses mbind(2) of node 0: errno " << error; }
  }
  for (int const node : {0, -1}) {
    void* pinned{};
    ASSERT_EQ(kvikio::detail::pin_host_memory(std::size_t{2} << 20, node, &pinned), CUDA_SUCCESS);
    int mode = -1;
    std::array<unsigned long, 4> mask{};
    long const r    = ::syscall(SYS_get_mempolicy, &mode, mask.data(), 256, pinned, MPOL_F_ADDR);
    int const error = errno;
    EXPECT_EQ(kvikio::detail::unpin_host_memory(pinned, std::size_t{2} << 20), CUDA_SUCCESS);
    ASSERT_EQ(r, 0) << "get_mempolicy: errno " << error;
    if (node >= 0) {
      EXPECT_EQ(mode, MPOL_PREFERRED);
      EXPECT_EQ(mask[0], 1UL << node);
    } else {
      EXPECT_EQ(mode, MPOL_DEFAULT);
    }
  }
}

// The device's node is the driver's: the simulator puts device d of n on node d * nodes / n
// (CUDASIM_NUMA_NODES; ctest runs this test once more with 4 devices on 2 nodes); the choice for
// this host follows its own list of online nodes.
TEST_F(OnDevice, EachDeviceReportsItsNode)
{
  if (!kvikio::test::on_simulator()) {
    GTEST_SKIP() << "the simulated topology is the simulator's; a GPU reports its own";
  }
  char const* knob = std::getenv("CUDASIM_NUMA_NODES");
  int const nodes  = knob == nullptr ? 1 : std::atoi(knob);
  int const n      = kvikio::test::device_count();
  std::string online_nodes;
  std::getline(std::ifstream{"/sys/devices/system/node/online"}, online_nodes);
  for (int d = 0; d < n; ++d) {
    int node = -1;
    KVIKIO_CUDA_DRIVER_TRY(api().DeviceGetAttribute(&node, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, d));
    EXPECT_EQ(node, d * nodes / n) << "device " << d;
    // On a host with those nodes online, the device's staging goes to its node.
    EXPECT_EQ(kvikio::detail::staging_numa_node(node, "0-" + std::to_string(nodes - 1)),
              nodes > 1 ? node : -1)
      << "device " << d;
    EXPECT_EQ(kvikio::detail::staging_numa_node_of(d),
              kvikio::detail::staging_numa_node(node, online_nodes))
      << "device " << d << " on this host";
  }
}
