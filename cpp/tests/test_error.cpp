/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Exception types and checking macros: type, message prefix, errno.
 */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include <kvikio/error.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace {

bool starts_with_location(std::string const& what)
{
  return what.rfind("KvikIO failure at: ", 0) == 0 &&
         what.find("test_error.cpp:") != std::string::npos;
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
    std::string const what = e.what();
    EXPECT_TRUE(starts_with_location(what)) << what;
    EXPECT_NE(what.find("/nonexistent-dir/kvikio-test-file"), std::string::npos) << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
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
    EXPECT_TRUE(starts_with_location(what)) << what;
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
    std::string const what = e.what();
    EXPECT_NE(what.find("5011"), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA driver error"), std::string::npos) << what;
  }
}

}  // namespace
