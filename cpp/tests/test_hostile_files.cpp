/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Files that change under the library as it opens them: one FileHandle is one file. The handle
 * opens its path once and takes its O_DIRECT descriptor from that first one; a publisher that
 * replaces the file by a rename in between (write a temporary, rename it over the name) must not
 * leave the handle on two files. This binary's own open() does the rename at that very moment:
 * it wraps the C library's, and when armed, renames the replacement over the path just before
 * the library opens with O_DIRECT.
 *
 * Also files that shrink under a mapping: this binary's fstat(), when armed, truncates the file
 * just after it reports the size, so that an MmapHandle copy that checked the size then touches
 * pages past the new end (SIGBUS).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/mmap.hpp>

#include "common/device.hpp"
#include "common/file_size_limit.hpp"
#include "common/poison.hpp"
#include "common/temp_dir.hpp"

using kvikio::test::pattern;
using kvikio::test::read_file;
using kvikio::test::TempDir;
using kvikio::test::write_file;

namespace {
// When set, the next open() with O_DIRECT first renames rename_from over rename_to.
std::string rename_from;
std::string rename_to;
bool armed{false};
// When set, opening a /proc/self/fd/ path fails with ENOENT, as where /proc is not mounted.
bool no_proc{false};
// When not -1, the next fstat() truncates this descriptor's file to shrink_to after it answers.
std::atomic<int> shrink_fd{-1};
off_t shrink_to{0};
}  // namespace

extern "C" int fstat(int fd, struct stat* st)
{
  using FstatFn     = int (*)(int, struct stat*);
  static auto* real = reinterpret_cast<FstatFn>(::dlsym(RTLD_NEXT, "fstat"));
  int const result  = real(fd, st);
  int const target  = shrink_fd.exchange(-1);
  if (target >= 0 && ::ftruncate(target, shrink_to) != 0) { std::abort(); }
  return result;
}

extern "C" int open(char const* path, int flags, ...)
{
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list args;
    va_start(args, flags);
    mode = static_cast<mode_t>(va_arg(args, unsigned int));
    va_end(args);
  }
  using OpenFn      = int (*)(char const*, int, ...);
  static auto* real = reinterpret_cast<OpenFn>(::dlsym(RTLD_NEXT, "open"));
  if (no_proc && std::strncmp(path, "/proc/self/fd/", 14) == 0) {
    errno = ENOENT;
    return -1;
  }
  if (armed && (flags & O_DIRECT) != 0) {
    armed = false;
    if (std::rename(rename_from.c_str(), rename_to.c_str()) != 0) { std::abort(); }
  }
  return real(path, flags, mode);
}

namespace {

class ReplacedWhileOpening : public ::testing::Test {
 protected:
  void SetUp() override
  {
    write_file(path_, first_);
    write_file(replacement_, second_);
    // The file the path names first, kept open here to look at after the rename.
    original_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(original_, 0);
    // O_DIRECT must be possible here, or the case tests nothing.
    int const direct = ::open(path_.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (direct < 0) {
      GTEST_SKIP() << "no O_DIRECT in " << path_ << "'s file system: nothing to test";
    }
    ::close(direct);
    rename_from = replacement_;
    rename_to   = path_;
    armed       = true;
  }
  void TearDown() override
  {
    armed   = false;
    no_proc = false;
    if (original_ >= 0) { ::close(original_); }
  }
  [[nodiscard]] std::vector<std::uint8_t> original_bytes() const
  {
    std::vector<std::uint8_t> bytes(first_.size());
    EXPECT_EQ(::pread(original_, bytes.data(), bytes.size(), 0),
              static_cast<ssize_t>(bytes.size()));
    return bytes;
  }

  TempDir dir_;
  std::string path_        = dir_.file("published");
  std::string replacement_ = dir_.file("published.tmp");
  // Whole pages and a tail: an O_DIRECT write takes the pages, the buffered descriptor the tail.
  std::vector<std::uint8_t> first_  = pattern((1 << 20) + 100, 1);
  std::vector<std::uint8_t> second_ = pattern((1 << 20) + 100, 2);
  int original_{-1};
};

}  // namespace

// Written with the default settings (O_DIRECT for the whole pages): every byte goes to the file
// the handle opened, none to the file that replaced it; reads see that same file.
TEST_F(ReplacedWhileOpening, TheHandleStaysOnTheFileItOpened)
{
  kvikio::FileHandle file{path_, "r+"};
  EXPECT_FALSE(armed) << "the library opened no O_DIRECT descriptor: nothing was tested";
  auto const written = pattern(first_.size(), 3);
  ASSERT_EQ(file.pwrite(written.data(), written.size(), 0, 1 << 18).get(), written.size());
  EXPECT_EQ(original_bytes(), written) << "the file the handle opened lacks some bytes";
  EXPECT_EQ(read_file(path_), second_) << "the file that replaced it was written into";
  std::vector<std::uint8_t> back(written.size(), kvikio::test::poison);
  kvikio::defaults::set_auto_direct_io_read(true);
  ASSERT_EQ(file.pread(back.data(), back.size(), 0, 1 << 18).get(), back.size());
  kvikio::defaults::set_auto_direct_io_read(false);
  EXPECT_EQ(back, written);
}

// Where /proc is missing the path is opened again and must name the same file: here it does
// not, and the open fails with a message naming the path, rather than make a handle on two.
TEST_F(ReplacedWhileOpening, WithoutProcAReplacedPathFailsTheOpen)
{
  no_proc = true;
  try {
    kvikio::FileHandle file{path_, "r+"};
    FAIL() << "a handle was opened on two files";
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find(path_), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("another file"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(armed);
  EXPECT_EQ(original_bytes(), first_);
  EXPECT_EQ(read_file(path_), second_);
}

// Without the rename, both ways open the one file (the fallback included).
TEST_F(ReplacedWhileOpening, WithoutProcAnUnchangedPathOpens)
{
  armed   = false;
  no_proc = true;
  kvikio::FileHandle file{path_, "r"};
  std::vector<std::uint8_t> back(first_.size(), kvikio::test::poison);
  kvikio::defaults::set_auto_direct_io_read(true);
  ASSERT_EQ(file.pread(back.data(), back.size(), 0, 1 << 18).get(), back.size());
  kvikio::defaults::set_auto_direct_io_read(false);
  EXPECT_EQ(back, first_);
}

namespace {

class ShrinksUnderAMapping : public ::testing::Test {
 protected:
  void SetUp() override
  {
    write_file(path_, content_);
    fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override
  {
    shrink_fd = -1;
    ::close(fd_);
  }
  TempDir dir_;
  std::string path_                        = dir_.file("mapped");
  std::vector<std::uint8_t> const content_ = pattern(1 << 20, 4);
  int fd_{-1};
};

}  // namespace

// The file shrinks after the read checked its size, before the copy touches the pages: the
// copy faults (SIGBUS), and the read fails with an error saying so instead of killing the
// process.
TEST_F(ShrinksUnderAMapping, ACopyThatFaultsIsAnError)
{
  kvikio::MmapHandle mapped{path_, "r"};
  std::vector<std::uint8_t> buf(content_.size());
  shrink_to = 4096;
  shrink_fd = fd_;
  try {
    (void)mapped.read(buf.data(), buf.size(), 0);
    FAIL() << "a copy from pages past the end succeeded";
  } catch (std::out_of_range const& e) {
    EXPECT_NE(std::string{e.what()}.find("SIGBUS"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find(path_), std::string::npos) << e.what();
  }
  EXPECT_EQ(shrink_fd.load(), -1) << "the read never asked the file's size";
  // The handle goes on: what still exists reads.
  std::vector<std::uint8_t> head(4096, kvikio::test::poison);
  EXPECT_EQ(mapped.read(head.data(), head.size(), 0), head.size());
  EXPECT_TRUE(std::equal(head.begin(), head.end(), content_.begin()));
}

// A SIGBUS outside the library's copies is not swallowed: once the library's handler is in
// place, a program that touches a mapping past its file's end still dies of SIGBUS.
TEST_F(ShrinksUnderAMapping, ASigbusElsewhereStillEndsTheProcess)
{
  {
    kvikio::MmapHandle mapped{path_, "r"};
    std::vector<std::uint8_t> buf(4096);
    ASSERT_EQ(mapped.read(buf.data(), buf.size(), 0), buf.size());  // a guarded copy ran
  }
  pid_t const child = ::fork();
  if (child == 0) {
    void* const map = ::mmap(nullptr, 1 << 20, PROT_READ, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED || ::ftruncate(fd_, 0) != 0) { ::_exit(3); }
    volatile auto const* bytes = static_cast<std::uint8_t const*>(map);
    std::uint8_t const touched = bytes[8192];
    ::_exit(touched == 0 ? 4 : 5);  // the touch must not return
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer's own SIGBUS handler was there before ours: it reports the fault and ends the
  // child (ASan aborts or exits 1, TSan exits 66); the touch never returns (3-5 would say so).
  int const code                = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  bool const ended_by_the_fault = WIFSIGNALED(status) || (code != 0 && (code < 3 || code > 5));
#else
  bool const ended_by_the_fault = WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
#endif
  EXPECT_TRUE(ended_by_the_fault) << "the child ended with status " << status;
}

// A write that fails after writing a part (past RLIMIT_FSIZE: EFBIG, SIGXFSZ ignored) leaves
// the handle's size at what the file has grown to, not at the size before the write; its error
// names the file.
TEST(FileSize, APartlyFailedWriteCountsWhatItWrote)
{
  TempDir dir;
  std::string const path = dir.file("limited");
  auto const data        = pattern(3 << 20, 5);
  std::string what;
  std::size_t nbytes = 0;
  {
    kvikio::test::FileSizeLimit const limit{1 << 20};
    ASSERT_TRUE(limit.set());
    kvikio::FileHandle f{path, "w"};
    try {
      (void)f.pwrite(data.data(), data.size(), 0, data.size()).get();
    } catch (std::exception const& e) {
      what = e.what();
    }
    nbytes = f.nbytes();
  }
  EXPECT_NE(what.find("(" + path + ")"), std::string::npos) << "the error names no file: " << what;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20) << "the part below the limit was not written";
  EXPECT_EQ(nbytes, static_cast<std::size_t>(st.st_size));
}
