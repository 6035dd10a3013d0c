/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * A process in which dlopen cannot find the CUDA driver: host-memory work goes on, and GPU
 * operations fail saying that no driver was found. The library name is replaced before anything
 * looks for the driver, so this holds on GPU machines too.
 */
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/utils.hpp>

namespace {

constexpr char const* absent_library = "libcuda-kvikio-test-absent.so.1";

class HideDriver : public ::testing::Environment {
 public:
  void SetUp() override { kvikio::detail::set_cuda_driver_library_name(absent_library); }
};
[[maybe_unused]] auto* const hide_driver = ::testing::AddGlobalTestEnvironment(new HideDriver);

void expect_no_driver_error(std::string const& what)
{
  EXPECT_NE(what.find("needs a GPU"), std::string::npos) << what;
  EXPECT_NE(what.find("no CUDA driver found"), std::string::npos) << what;
  EXPECT_NE(what.find(absent_library), std::string::npos) << what;
}

TEST(NoCudaDriver, DriverIsReportedMissing)
{
  EXPECT_FALSE(kvikio::is_cuda_available());
  EXPECT_NE(kvikio::detail::cuda_unavailable_reason().find(absent_library), std::string::npos);
  try {
    (void)kvikio::cudaAPI::instance();
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    expect_no_driver_error(e.what());
  }
}

TEST(NoCudaDriver, EveryPointerIsHostMemory)
{
  std::vector<char> buf(100);
  EXPECT_TRUE(kvikio::is_host_memory(buf.data()));
  EXPECT_TRUE(kvikio::is_host_memory(reinterpret_cast<void*>(0x7f0000000000)));
}

TEST(NoCudaDriver, GpuOperationsThrowClearly)
{
  std::vector<char> buf(100);
  try {
    (void)kvikio::get_context_from_pointer(buf.data());
    FAIL();
  } catch (kvikio::CUfileException const& e) {
    expect_no_driver_error(e.what());
  }
  EXPECT_THROW(kvikio::PushAndPopContext{buf.data()}, kvikio::CUfileException);
  EXPECT_THROW((void)kvikio::get_primary_cuda_context(0), kvikio::CUfileException);
}

TEST(NoCudaDriver, HostSideWorkGoesOn)
{
  EXPECT_EQ(kvikio::defaults::thread_pool().submit_task([] { return 6 * 7; }).get(), 42);
  // Error text without a driver falls back to the number.
  try {
    KVIKIO_CUDA_DRIVER_TRY(CUDA_ERROR_INVALID_VALUE);
  } catch (kvikio::CUfileException const& e) {
    EXPECT_NE(std::string{e.what()}.find("CUresult 1"), std::string::npos) << e.what();
  }
}

TEST(NoCudaDriver, LibraryNameIsFixedOnceLookedFor)
{
  (void)kvikio::is_cuda_available();
  EXPECT_THROW(kvikio::detail::set_cuda_driver_library_name("libcuda.so.1"), std::logic_error);
}

}  // namespace
