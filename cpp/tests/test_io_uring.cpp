/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * The io_uring local backend on its own: it is usable on these machines' kernels (so CI tests
 * the real backend), moves bytes exactly (more pieces than the queue holds, odd sizes and
 * offsets), reports a read past the end and a bad descriptor only after every request ended,
 * and where io_uring_setup is refused, FileHandle falls back to POSIX. The whole FileHandle and
 * stream-ordered suites run on this backend too (".io_uring" in ctest).
 */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/detail/io_uring_io.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>

#include "common/device.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::pattern;

namespace {

constexpr std::uint8_t poison = 0xEE;
constexpr std::size_t guard   = 64;

class IoUring : public ::testing::Test {
 protected:
  void SetUp() override
  {
    kvikio::detail::override_io_uring_setup(0);
    ASSERT_TRUE(kvikio::detail::io_uring_usable())
      << "io_uring is unavailable on this machine: the backend cannot be tested here";
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override
  {
    if (fd_ >= 0) { ::close(fd_); }
    kvikio::detail::override_io_uring_setup(0);
    kvikio::detail::set_io_uring_request_shape(std::size_t{1} << 20, 64);
  }
  void write_content()
  {
    ASSERT_EQ(::pwrite(fd_, content_.data(), content_.size(), 0),
              static_cast<ssize_t>(content_.size()));
  }
  kvikio::test::TempDir dir_;
  std::string path_ = dir_.file("data");
  int fd_{-1};
  // More pieces than the queue holds in flight, and a tail that is no whole piece.
  std::vector<std::uint8_t> content_ = pattern(
    (kvikio::detail::io_uring_queue_depth() + 5) * kvikio::detail::io_uring_piece_size() + 4099,
    17);
};

TEST_F(IoUring, ReadsExactlyWhatPreadReads)
{
  write_content();
  for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{4095}}) {
    for (std::size_t size : {std::size_t{1}, std::size_t{4097}, content_.size() - 4096}) {
      std::vector<std::uint8_t> buf(size + 2 * guard, poison);
      kvikio::detail::io_uring_transfer_all(
        true, fd_, reinterpret_cast<std::byte*>(buf.data() + guard), size, offset);
      ASSERT_EQ(0, std::memcmp(buf.data() + guard, content_.data() + offset, size))
        << size << " bytes at " << offset;
      for (std::size_t i = 0; i < guard; ++i) {
        ASSERT_EQ(buf[i], poison) << "written before the buffer";
        ASSERT_EQ(buf[guard + size + i], poison) << "written after the buffer";
      }
    }
  }
}

// Requests of an odd size, three at a time: many refills of the queue, pieces that straddle
// pages; and a shape that cannot be is refused.
TEST_F(IoUring, SmallRequestsAndAShallowQueue)
{
  write_content();
  kvikio::detail::set_io_uring_request_shape(5000, 3);
  std::size_t const size = 3 * 1000 * 1000 + 7;
  std::vector<std::uint8_t> buf(size + 2 * guard, poison);
  kvikio::detail::io_uring_transfer_all(
    true, fd_, reinterpret_cast<std::byte*>(buf.data() + guard), size, 11);
  ASSERT_EQ(0, std::memcmp(buf.data() + guard, content_.data() + 11, size));
  for (std::size_t i = 0; i < guard; ++i) {
    ASSERT_EQ(buf[i], poison);
    ASSERT_EQ(buf[guard + size + i], poison);
  }
  EXPECT_THROW(kvikio::detail::set_io_uring_request_shape(0, 3), std::invalid_argument);
  EXPECT_THROW(kvikio::detail::set_io_uring_request_shape(std::size_t{4} << 30, 3),
               std::invalid_argument);
  EXPECT_THROW(kvikio::detail::set_io_uring_request_shape(4096, 0), std::invalid_argument);
  EXPECT_THROW(
    kvikio::detail::set_io_uring_request_shape(4096, kvikio::detail::io_uring_max_depth + 1),
    std::invalid_argument);
}

// Through an O_DIRECT descriptor (requests issued inline, not by kernel workers): page-aligned
// memory, offsets and sizes, the bytes of the file.
TEST_F(IoUring, DirectDescriptor)
{
  write_content();
  ASSERT_EQ(::fsync(fd_), 0);
  int const direct = ::open(path_.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (direct < 0) { GTEST_SKIP() << "the temp directory's file system refuses O_DIRECT"; }
  std::size_t const size = 5 * kvikio::detail::io_uring_piece_size() + 3 * 4096;
  void* mem              = std::aligned_alloc(4096, size);
  ASSERT_NE(mem, nullptr);
  std::memset(mem, poison, size);
  kvikio::detail::io_uring_transfer_all(
    true, direct, static_cast<std::byte*>(mem), size, 2 * 4096, false);
  EXPECT_EQ(0, std::memcmp(mem, content_.data() + 2 * 4096, size));
  std::free(mem);
  ::close(direct);
}

TEST_F(IoUring, WritesAreInTheFileWhenItReturns)
{
  kvikio::detail::io_uring_transfer_all(
    false, fd_, reinterpret_cast<std::byte*>(content_.data()), content_.size(), 3);
  std::vector<std::uint8_t> back(content_.size());
  ASSERT_EQ(::pread(fd_, back.data(), back.size(), 3), static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, content_);
}

TEST_F(IoUring, ReadPastTheEndIsAnOutOfRangeError)
{
  write_content();
  std::vector<std::uint8_t> buf(4 * kvikio::detail::io_uring_piece_size());
  try {
    kvikio::detail::io_uring_transfer_all(
      true, fd_, reinterpret_cast<std::byte*>(buf.data()), buf.size(), content_.size() - 1000);
    FAIL() << "a read past the end succeeded";
  } catch (std::out_of_range const& e) {
    EXPECT_NE(std::string{e.what()}.find("past the end"), std::string::npos) << e.what();
  }
  // The ring is whole: the next transfer works.
  kvikio::detail::io_uring_transfer_all(
    true, fd_, reinterpret_cast<std::byte*>(buf.data()), 1000, content_.size() - 1000);
  EXPECT_EQ(0, std::memcmp(buf.data(), content_.data() + content_.size() - 1000, 1000));
}

TEST_F(IoUring, BadDescriptorIsASystemError)
{
  // Not a closed descriptor's number: the thread's ring may be set up on it and reuse it.
  int const closed = 1 << 20;
  ASSERT_EQ(::fcntl(closed, F_GETFD), -1);
  std::vector<std::uint8_t> buf(3 * kvikio::detail::io_uring_piece_size());
  try {
    kvikio::detail::io_uring_transfer_all(
      true, closed, reinterpret_cast<std::byte*>(buf.data()), buf.size(), 0);
    FAIL() << "a read from a closed descriptor succeeded";
  } catch (kvikio::GenericSystemError const& e) {
    EXPECT_EQ(e.code().value(), EBADF) << e.what();
  }
}

// FileHandle with KVIKIO_LOCAL_IO_BACKEND=io_uring where io_uring_setup is refused: the probe
// says so (one warning) and reads and writes go through POSIX.
TEST_F(IoUring, RefusedSetupFallsBackToPosix)
{
  kvikio::detail::override_io_uring_setup(EPERM);
  EXPECT_FALSE(kvikio::detail::io_uring_usable());
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::IO_URING);
  {
    kvikio::FileHandle f{path_, "r+"};
    EXPECT_EQ(f.pwrite(content_.data(), content_.size(), 0).get(), content_.size());
    std::vector<std::uint8_t> back(content_.size(), poison);
    EXPECT_EQ(f.pread(back.data(), back.size(), 0).get(), back.size());
    EXPECT_EQ(back, content_);
  }
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
}

// The process's probe succeeded, but a new thread's ring cannot be set up: that thread's reads
// go through POSIX, with the bytes of the file.
TEST_F(IoUring, ThreadWithoutARingUsesPosix)
{
  write_content();
  kvikio::detail::override_io_uring_setup(ENOMEM, false);
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::IO_URING);
  bool usable = true;
  std::vector<std::uint8_t> back(content_.size(), poison);
  std::thread{[&] {
    usable = kvikio::detail::io_uring_usable();
    kvikio::FileHandle f{path_, "r"};
    (void)f.pread(back.data(), back.size(), 0, back.size(), 1 << 30).get();  // on this thread
  }}.join();
  kvikio::defaults::set_local_io_backend(kvikio::LocalIOBackend::POSIX);
  EXPECT_FALSE(usable);
  EXPECT_EQ(back, content_);
}

}  // namespace
