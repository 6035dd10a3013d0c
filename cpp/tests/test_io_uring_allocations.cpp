/*
 * SPDX-License-Identifier: Apache-2.0
 */

// The io_uring engine's bookkeeping lives from one transfer of a thread to the next: once a
// thread has made a transfer of a shape, the next one allocates nothing. Heap allocations are
// counted per thread by replacing the global operator new of this test program (and with it
// the library's, which this program's definition preempts).

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/poison.hpp"
#include "common/temp_dir.hpp"
#include "io/io_uring/io_uring_io.hpp"

namespace {
thread_local std::size_t allocations_on_this_thread = 0;

void* counted_allocation(std::size_t size, std::size_t alignment = 0)
{
  ++allocations_on_this_thread;
  void* p = alignment > alignof(std::max_align_t)
              ? std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)
              : std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) { throw std::bad_alloc{}; }
  return p;
}
}  // namespace

// NOLINTBEGIN(cppcoreguidelines-no-malloc): the replaced global allocation functions
void* operator new(std::size_t size) { return counted_allocation(size); }
void* operator new[](std::size_t size) { return counted_allocation(size); }
void* operator new(std::size_t size, std::align_val_t a)
{
  return counted_allocation(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a)
{
  return counted_allocation(size, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
// NOLINTEND(cppcoreguidelines-no-malloc)

namespace {

TEST(IoUringAllocations, ASecondTransferOfAThreadAllocatesNothing)
{
  ASSERT_TRUE(kvikio::detail::io_uring_usable())
    << "io_uring is unavailable on this machine: the backend cannot be tested here";
  kvikio::test::TempDir dir;
  std::string const path = dir.file("data");
  int const fd           = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  // 9 MiB and a bit: ten pieces of 1 MiB, the last one short, in one transfer.
  std::size_t const size = (std::size_t{9} << 20) + 4099;
  std::vector<std::uint8_t> data(size);
  for (std::size_t i = 0; i < size; ++i) {
    data[i] = static_cast<std::uint8_t>((i * 2654435761U) >> 13);
  }
  std::vector<std::uint8_t> back(size, kvikio::test::poison);
  auto* out = reinterpret_cast<std::byte*>(data.data());
  auto* in  = reinterpret_cast<std::byte*>(back.data());

  kvikio::detail::io_uring_transfer_all(false, fd, out, size, 0);  // the thread's first ones
  kvikio::detail::io_uring_transfer_all(true, fd, in, size, 0);
  ASSERT_EQ(back, data);

  std::fill(back.begin(), back.end(), kvikio::test::poison);
  std::size_t const before = allocations_on_this_thread;
  kvikio::detail::io_uring_transfer_all(false, fd, out, size, 0);
  kvikio::detail::io_uring_transfer_all(true, fd, in, size, 0);
  std::size_t const allocated = allocations_on_this_thread - before;
  ::close(fd);
  EXPECT_EQ(allocated, 0U) << "heap allocations in a write and a read of " << size << " bytes";
  EXPECT_EQ(back, data);
}

}  // namespace
