/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Exception types and checking macros: type, message prefix, errno.
 */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include <kvikio/error.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace {

// Upstream's prefixes: "KvikIO failure at: " (EXPECT/FAIL), "CUDA error at: ", "cuFile error at: ".
bool starts_with_location(std::string const& what,
                          std::string const& prefix = "KvikIO failure at: ")
{
  return what.rfind(prefix + __FILE__ + ":", 0) == 0;
}

TEST(Error, ExpectDefaultsToCUfileException)
{
  try {
    KVIKIO_EXPECT(1 + 1 == 3, "arithmetic is broken");
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(starts_with_location(what)) << what;
    EXPECT_NE(what.find("arithmetic is broken"), std::string::npos);
  }
  EXPECT_NO_THROW(KVIKIO_EXPECT(true, "never"));
}

TEST(Error, ExpectWithExceptionType)
{
  EXPECT_THROW(KVIKIO_EXPECT(false, "bad size", std::invalid_argument), std::invalid_argument);
  EXPECT_THROW(KVIKIO_EXPECT(false, std::string{"past the end"}, std::out_of_range),
               std::out_of_range);
}

TEST(Error, Fail)
{
  EXPECT_THROW(KVIKIO_FAIL("always"), kvikio::CUfileException);
  try {
    KVIKIO_FAIL("overflow!", std::overflow_error);
  } catch (std::overflow_error const& e) {
    EXPECT_TRUE(starts_with_location(e.what())) << e.what();
  }
}

TEST(Error, SyscallCheckKeepsErrno)
{
  int const fd = ::open("/nonexistent-dir/kvikio-test-file", O_RDONLY);
  try {
    KVIKIO_SYSCALL_CHECK(fd, "open(/nonexistent-dir/kvikio-test-file)");
    FAIL();
  } catch (kvikio::GenericSystemError const& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    // Upstream's wording: the context, where, then what() adds the errno's text.
    std::string const what = e.what();
    std::string const expected =
      std::string{
        "open(/nonexistent-dir/kvikio-test-file) Linux "
        "system/library function call error at: "} +
      __FILE__ + ":";
    EXPECT_EQ(what.rfind(expected, 0), 0U) << what;
    EXPECT_NE(what.find(": No such file or directory"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(KVIKIO_SYSCALL_CHECK(0));
}

TEST(Error, GenericSystemErrorFromErrno)
{
  errno = EACCES;
  kvikio::GenericSystemError const e{"reading the file"};
  EXPECT_EQ(e.code().value(), EACCES);
  EXPECT_EQ(e.code().category(), std::generic_category());
}

TEST(Error, CudaDriverTryNamesTheError)
{
  try {
    KVIKIO_CUDA_DRIVER_TRY(CUDA_ERROR_OUT_OF_MEMORY);
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(starts_with_location(what, "CUDA error at: ")) << what;
    // Named by the driver when one is loaded; by number otherwise.
    EXPECT_TRUE(what.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos ||
                what.find("CUresult 2") != std::string::npos)
      << what;
    EXPECT_NE(what.find("in CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << what;
  }
  EXPECT_THROW(KVIKIO_CUDA_DRIVER_TRY(CUDA_ERROR_INVALID_VALUE, std::invalid_argument),
               std::invalid_argument);
  EXPECT_NO_THROW(KVIKIO_CUDA_DRIVER_TRY(CUDA_SUCCESS));
}

TEST(Error, StubDriverIsExplained)
{
  try {
    KVIKIO_CUDA_DRIVER_TRY(CUDA_ERROR_STUB_LIBRARY);
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("stub"), std::string::npos) << e.what();
  }
}

TEST(Error, CufileTry)
{
  CUfileError_t const ok{CU_FILE_SUCCESS, CUDA_SUCCESS};
  EXPECT_NO_THROW(KVIKIO_CUFILE_TRY(ok));
  CUfileError_t const cuda_failed{CU_FILE_CUDA_DRIVER_ERROR, CUDA_ERROR_INVALID_CONTEXT};
  try {
    KVIKIO_CUFILE_TRY(cuda_failed);
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    // A CUDA cause is reported as a CUDA error, as upstream does.
    std::string const what = e.what();
    EXPECT_TRUE(starts_with_location(what, "CUDA error at: ")) << what;
    EXPECT_TRUE(what.find("CUDA_ERROR_INVALID_CONTEXT") != std::string::npos ||
                what.find("CUresult 201") != std::string::npos)
      << what;
  }
  CUfileError_t const not_open{CU_FILE_DRIVER_NOT_INITIALIZED, CUDA_SUCCESS};
  try {
    KVIKIO_CUFILE_TRY(not_open);
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(starts_with_location(what, "cuFile error at: ")) << what;
    EXPECT_NE(what.find(": CU_FILE_DRIVER_NOT_INITIALIZED ("), std::string::npos) << what;
    EXPECT_NE(what.find(" in not_open"), std::string::npos) << what;
  }
}

TEST(Error, CufileStatusTextNamesEveryStatus)
{
  // Every value of the cuFile status enum has its name and a meaning; others are "unknown".
  for (int v = CUFILEOP_BASE_ERR + 1; v <= CU_FILE_IO_MAX_ERROR; ++v) {
    std::string const text = cufileop_status_error(static_cast<CUfileOpError>(v));
    if (v == 5021 || v == 5032) {  // no status of CUDA 13's cufile.h
      EXPECT_EQ(text, "unknown cuFile error") << v;
    } else {
      EXPECT_EQ(text.rfind("CU_FILE_", 0), 0U) << v << ": " << text;
      EXPECT_NE(text.find(" ("), std::string::npos) << v << ": " << text;
    }
  }
  EXPECT_STREQ(cufileop_status_error(CU_FILE_PERMISSION_DENIED),
               "CU_FILE_PERMISSION_DENIED (permission denied)");
  EXPECT_STREQ(cufileop_status_error(static_cast<CUfileOpError>(7)), "unknown cuFile error");
}

TEST(Error, CheckBytesDoneWording)
{
  try {
    KVIKIO_CUFILE_CHECK_BYTES_DONE(-ENOSPC);
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    std::string const what = e.what();
    EXPECT_TRUE(starts_with_location(what, "cuFile error at: ")) << what;
    EXPECT_NE(what.find(": No space left on device"), std::string::npos) << what;
  }
  try {
    KVIKIO_CUFILE_CHECK_BYTES_DONE(-static_cast<long>(CU_FILE_IO_ERROR), std::runtime_error);
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string{e.what()}.find(": CU_FILE_IO_ERROR ("), std::string::npos) << e.what();
  }
}

// The detail functions behind upstream's macros, called as upstream's macros call them.
TEST(Error, UpstreamDetailFunctions)
{
  try {
    kvikio::detail::kvikio_fail<std::out_of_range>(
      [] { return std::string{"too far"}; }, 7, "f.cpp");
    FAIL();
  } catch (std::out_of_range const& e) {
    EXPECT_STREQ(e.what(), "KvikIO failure at: f.cpp:7: too far");
  }
  try {
    kvikio::detail::kvikio_fail<std::runtime_error>([] { return std::string{}; }, 8, "g.cpp");
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_STREQ(e.what(), "KvikIO failure at: g.cpp:8: (no message)");
  }
  EXPECT_NO_THROW(kvikio::detail::cuda_driver_try<std::runtime_error>(CUDA_SUCCESS, 1, "h.cpp"));
  try {
    kvikio::detail::cuda_driver_try<std::logic_error>(CUDA_ERROR_STUB_LIBRARY, 9, "h.cpp");
    FAIL();
  } catch (std::logic_error const& e) {
    EXPECT_EQ(std::string{e.what()}.rfind(
                "CUDA error at: h.cpp:9: CUDA_ERROR_STUB_LIBRARY(The CUDA driver loaded is a stub "
                "library",
                0),
              0U)
      << e.what();
  }
  EXPECT_NO_THROW(kvikio::detail::cufile_try<std::runtime_error>(
    CUfileError_t{CU_FILE_SUCCESS, CUDA_SUCCESS}, 1, "i.cpp"));
  try {
    kvikio::detail::cufile_try<std::runtime_error>(
      CUfileError_t{CU_FILE_INVALID_VALUE, CUDA_SUCCESS}, 10, "i.cpp");
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_STREQ(e.what(), "cuFile error at: i.cpp:10: CU_FILE_INVALID_VALUE (invalid argument)");
  }
  EXPECT_NO_THROW(kvikio::detail::cufile_check_bytes_done<std::runtime_error>(0, 1, "j.cpp"));
  try {
    kvikio::detail::cufile_check_bytes_done<std::runtime_error>(-EBADF, 11, "j.cpp");
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_STREQ(e.what(), "cuFile error at: j.cpp:11: Bad file descriptor");
  }
  EXPECT_NO_THROW(kvikio::detail::check_linux_call(0, 1, "k.cpp"));
  errno = EPERM;
  try {
    kvikio::detail::check_linux_call(-1, 12, "k.cpp", "chmod(x)");
    FAIL();
  } catch (kvikio::GenericSystemError const& e) {
    EXPECT_EQ(e.code().value(), EPERM);
    EXPECT_EQ(std::string{e.what()}.rfind(
                "chmod(x) Linux system/library function call error at: k.cpp:12: ", 0),
              0U)
      << e.what();
  }
  // The pointer form, as for mmap's MAP_FAILED; and no context at all.
  int marker         = 0;
  void* const failed = &marker;
  EXPECT_NO_THROW(kvikio::detail::check_linux_call<void*>(nullptr, 1, "l.cpp", "", failed));
  errno = ENOMEM;
  try {
    kvikio::detail::check_linux_call<void*>(failed, 13, "l.cpp", "", failed);
    FAIL();
  } catch (kvikio::GenericSystemError const& e) {
    EXPECT_EQ(e.code().value(), ENOMEM);
    EXPECT_EQ(
      std::string{e.what()}.rfind("Linux system/library function call error at: l.cpp:13", 0), 0U)
      << e.what();
  }
  errno = EINTR;
  EXPECT_THROW(kvikio::detail::handle_linux_call_error(14, "m.cpp", "x"),
               kvikio::GenericSystemError);
}

}  // namespace
