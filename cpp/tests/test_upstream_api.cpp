/*
 * SPDX-License-Identifier: Apache-2.0
 */

// A program written against upstream KvikIO's installed headers, name by name: every public
// function, class, enum value, macro and setting is called or has its address taken here, spelt
// as upstream spells it. That it compiles is the first half of the test; the cases below check
// that each behaves as upstream documents. Device-memory behaviour is covered by the component
// suites; this file needs no GPU.

#include <kvikio/batch.hpp>
#include <kvikio/bounce_buffer.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/compat_mode.hpp>
#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/cufile/config.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/detail/url.hpp>
#include <kvikio/detail/utils.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/http_status_codes.hpp>
#include <kvikio/logger.hpp>
#include <kvikio/logger_macros.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/shim/cuda.hpp>
#include <kvikio/shim/cufile.hpp>
#include <kvikio/shim/libcurl.hpp>
#include <kvikio/shim/utils.hpp>
#include <kvikio/stream.hpp>
#include <kvikio/threadpool_wrapper.hpp>
#include <kvikio/utils.hpp>
#include <kvikio/version_config.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

// Upstream's feature macros, exported by the CMake target as upstream's are.
#if !defined(KVIKIO_CUFILE_FOUND) || !defined(KVIKIO_CUFILE_VERSION_API_FOUND) || \
  !defined(KVIKIO_LIBCURL_FOUND)
#error "kvikio::kvikio must define upstream's feature macros"
#endif

#include "common/env_guard.hpp"
#include "common/temp_dir.hpp"

namespace {

// Every free function of upstream's public headers, by address, with upstream's exact type: a
// differing parameter or return type fails to compile here.
[[maybe_unused]] void take_addresses()
{
  // file_utils.hpp
  [[maybe_unused]] int (*p_open_fd_parse_flags)(std::string const&, bool) =
    &kvikio::open_fd_parse_flags;
  [[maybe_unused]] int (*p_open_fd)(std::string const&, std::string const&, bool, mode_t) =
    &kvikio::open_fd;
  [[maybe_unused]] int (*p_open_flags)(int)                       = &kvikio::open_flags;
  [[maybe_unused]] std::size_t (*p_size_path)(std::string const&) = &kvikio::get_file_size;
  [[maybe_unused]] std::size_t (*p_size_fd)(int)                  = &kvikio::get_file_size;
  [[maybe_unused]] std::pair<std::size_t, std::size_t> (*p_pci_path)(
    std::string const&, std::size_t, std::size_t) = &kvikio::get_page_cache_info;
  [[maybe_unused]] std::pair<std::size_t, std::size_t> (*p_pci_fd)(int, std::size_t, std::size_t) =
    &kvikio::get_page_cache_info;
  [[maybe_unused]] void (*p_drop_fd)(int, std::size_t, std::size_t, bool) =
    &kvikio::drop_file_page_cache;
  [[maybe_unused]] void (*p_drop_path)(std::string const&, std::size_t, std::size_t, bool) =
    &kvikio::drop_file_page_cache;
  [[maybe_unused]] bool (*p_drop_system)(bool, bool) = &kvikio::drop_system_page_cache;
  [[maybe_unused]] kvikio::BlockDeviceInfo (*p_block)(std::string const&) =
    &kvikio::get_block_device_info;

  // utils.hpp
  [[maybe_unused]] std::size_t (*p_page_size)()           = &kvikio::get_page_size;
  [[maybe_unused]] off_t (*p_size2off)(std::size_t)       = &kvikio::convert_size2off;
  [[maybe_unused]] ssize_t (*p_size2ssize)(std::size_t)   = &kvikio::convert_size2ssize;
  [[maybe_unused]] CUdeviceptr (*p_void2dev)(void const*) = &kvikio::convert_void2deviceptr;
  [[maybe_unused]] bool (*p_is_host)(void const*)         = &kvikio::is_host_memory;
  [[maybe_unused]] int (*p_ordinal)(CUdeviceptr) = &kvikio::get_device_ordinal_from_pointer;
  [[maybe_unused]] CUcontext (*p_primary)(int)   = &kvikio::get_primary_cuda_context;
  [[maybe_unused]] std::optional<CUcontext> (*p_assoc)(CUdeviceptr) =
    &kvikio::get_context_associated_pointer;
  [[maybe_unused]] bool (*p_can_access)(CUdeviceptr) = &kvikio::current_context_can_access_pointer;
  [[maybe_unused]] CUcontext (*p_ctx)(void const*)   = &kvikio::get_context_from_pointer;
  [[maybe_unused]] std::tuple<void*, std::size_t, std::size_t> (*p_alloc)(void const*, CUcontext*) =
    &kvikio::get_alloc_info;
  [[maybe_unused]] std::future<int> (*p_ready)(int&&) = &kvikio::make_ready_future<int>;
  [[maybe_unused]] bool (*p_done)(std::future<int> const&) =
    &kvikio::is_future_done<std::future<int>>;

  // buffer.hpp, stream.hpp
  [[maybe_unused]] void (*p_breg)(void const*, std::size_t, int, std::vector<int> const&) =
    &kvikio::buffer_register;
  [[maybe_unused]] void (*p_bdereg)(void const*) = &kvikio::buffer_deregister;
  [[maybe_unused]] void (*p_mreg)(void const*, int, std::vector<int> const&) =
    &kvikio::memory_register;
  [[maybe_unused]] void (*p_mdereg)(void const*)      = &kvikio::memory_deregister;
  [[maybe_unused]] void (*p_sreg)(CUstream, unsigned) = &kvikio::stream_register;
  [[maybe_unused]] void (*p_sdereg)(CUstream)         = &kvikio::stream_deregister;

  // remote_handle.hpp, cufile/config.hpp, http_status_codes.hpp, compat_mode.hpp
  [[maybe_unused]] kvikio::RemoteEndpointType (*p_infer)(std::string const&) =
    &kvikio::infer_remote_endpoint_type;
  [[maybe_unused]] std::string const& (*p_config_path)() = &kvikio::config_path;
  [[maybe_unused]] kvikio::CompatMode (*p_compat)(std::string_view) =
    &kvikio::detail::parse_compat_mode_str;

  // shim/*.hpp
  [[maybe_unused]] void* (*p_load)(std::string const&, int) = &kvikio::load_library;
  [[maybe_unused]] bool (*p_wsl)()                          = &kvikio::is_running_in_wsl;
  [[maybe_unused]] bool (*p_udev)()                         = &kvikio::run_udev_readable;
  [[maybe_unused]] bool (*p_cuda)()                         = &kvikio::is_cuda_available;
  [[maybe_unused]] bool (*p_cufile)()                       = &kvikio::is_cufile_available;
  [[maybe_unused]] bool (*p_cufile_lib)()                   = &kvikio::is_cufile_library_available;
  [[maybe_unused]] int (*p_cufile_version)()                = &kvikio::cufile_version;

  // detail/utils.hpp
  [[maybe_unused]] std::string (*p_norm)(std::string_view) = &kvikio::detail::normalize_env_value;
  [[maybe_unused]] std::size_t (*p_up)(std::size_t, std::size_t)   = &kvikio::detail::align_up;
  [[maybe_unused]] void* (*p_up_ptr)(void*, std::size_t)           = &kvikio::detail::align_up;
  [[maybe_unused]] std::size_t (*p_down)(std::size_t, std::size_t) = &kvikio::detail::align_down;
  [[maybe_unused]] void* (*p_down_ptr)(void*, std::size_t)         = &kvikio::detail::align_down;
  [[maybe_unused]] bool (*p_aligned)(std::size_t, std::size_t)     = &kvikio::detail::is_aligned;
  [[maybe_unused]] bool (*p_aligned_ptr)(void*, std::size_t)       = &kvikio::detail::is_aligned;
}

// Every static member of kvikio::defaults, with upstream's types.
[[maybe_unused]] void take_defaults_addresses()
{
  using kvikio::defaults;
  [[maybe_unused]] kvikio::CompatMode (*a)()     = &defaults::compat_mode;
  [[maybe_unused]] void (*b)(kvikio::CompatMode) = &defaults::set_compat_mode;
  [[maybe_unused]] kvikio::CompatMode (*c)(kvikio::CompatMode) =
    &defaults::infer_compat_mode_if_auto;
  [[maybe_unused]] bool (*d)(kvikio::CompatMode)   = &defaults::is_compat_mode_preferred;
  [[maybe_unused]] bool (*e)()                     = &defaults::is_compat_mode_preferred;
  [[maybe_unused]] kvikio::ThreadPool& (*f)()      = &defaults::thread_pool;
  [[maybe_unused]] unsigned int (*g)()             = &defaults::thread_pool_nthreads;
  [[maybe_unused]] void (*h)(unsigned int)         = &defaults::set_thread_pool_nthreads;
  [[maybe_unused]] unsigned int (*i)()             = &defaults::num_threads;
  [[maybe_unused]] void (*j)(unsigned int)         = &defaults::set_num_threads;
  [[maybe_unused]] std::size_t (*k)()              = &defaults::task_size;
  [[maybe_unused]] void (*l)(std::size_t)          = &defaults::set_task_size;
  [[maybe_unused]] std::size_t (*m)()              = &defaults::gds_threshold;
  [[maybe_unused]] void (*n)(std::size_t)          = &defaults::set_gds_threshold;
  [[maybe_unused]] std::size_t (*o)()              = &defaults::bounce_buffer_size;
  [[maybe_unused]] void (*p)(std::size_t)          = &defaults::set_bounce_buffer_size;
  [[maybe_unused]] std::size_t (*q)()              = &defaults::http_max_attempts;
  [[maybe_unused]] void (*r)(std::size_t)          = &defaults::set_http_max_attempts;
  [[maybe_unused]] long (*s)()                     = &defaults::http_timeout;
  [[maybe_unused]] void (*t)(long)                 = &defaults::set_http_timeout;
  [[maybe_unused]] std::vector<int> const& (*u)()  = &defaults::http_status_codes;
  [[maybe_unused]] void (*v)(std::vector<int>)     = &defaults::set_http_status_codes;
  [[maybe_unused]] bool (*w)()                     = &defaults::auto_direct_io_read;
  [[maybe_unused]] void (*x)(bool)                 = &defaults::set_auto_direct_io_read;
  [[maybe_unused]] bool (*y)()                     = &defaults::auto_direct_io_read_overread;
  [[maybe_unused]] void (*z)(bool)                 = &defaults::set_auto_direct_io_read_overread;
  [[maybe_unused]] bool (*a2)()                    = &defaults::auto_direct_io_write;
  [[maybe_unused]] void (*b2)(bool)                = &defaults::set_auto_direct_io_write;
  [[maybe_unused]] bool (*c2)()                    = &defaults::thread_pool_per_block_device;
  [[maybe_unused]] void (*d2)(bool)                = &defaults::set_thread_pool_per_block_device;
  [[maybe_unused]] kvikio::RemoteIOBackend (*e2)() = &defaults::remote_io_backend;
  [[maybe_unused]] unsigned int (*f2)()            = &defaults::remote_io_num_reactors;
  [[maybe_unused]] kvikio::RemoteReactorDispatch (*g2)() = &defaults::remote_io_reactor_dispatch;
  [[maybe_unused]] std::size_t (*h2)() = &defaults::remote_io_max_concurrent_requests;
}

// The thread pool's calls that upstream's users make (it is BS::thread_pool there).
[[maybe_unused]] void use_thread_pool(kvikio::ThreadPool& pool)
{
  pool.detach_task([] {});
  [[maybe_unused]] auto f = pool.submit_task([] { return 1; });
  pool.wait();
  pool.reset(2);
  [[maybe_unused]] auto n = pool.get_thread_count() + pool.get_tasks_queued() +
                            pool.get_tasks_running() + pool.get_tasks_total();
}

// Member functions with upstream's exact signatures.
[[maybe_unused]] void take_member_addresses()
{
  using kvikio::FileHandle;
  [[maybe_unused]] std::size_t (FileHandle::*fh_read)(
    void*, std::size_t, std::size_t, std::size_t, bool) = &FileHandle::read;
  [[maybe_unused]] std::future<std::size_t> (FileHandle::*fh_pread)(
    void*, std::size_t, std::size_t, std::size_t, std::size_t, bool, kvikio::ThreadPool*) =
    &FileHandle::pread;
  [[maybe_unused]] std::future<std::size_t> (FileHandle::*fh_pwrite)(
    void const*, std::size_t, std::size_t, std::size_t, std::size_t, bool, kvikio::ThreadPool*) =
    &FileHandle::pwrite;
  [[maybe_unused]] void (FileHandle::*fh_ra)(
    void*, std::size_t*, off_t*, off_t*, ssize_t*, CUstream) = &FileHandle::read_async;
  [[maybe_unused]] void (FileHandle::*fh_wa)(
    void*, std::size_t*, off_t*, off_t*, ssize_t*, CUstream) = &FileHandle::write_async;
  [[maybe_unused]] CUfileHandle_t (FileHandle::*fh_handle)() = &FileHandle::handle;
  [[maybe_unused]] int (FileHandle::*fh_flags)(bool) const   = &FileHandle::fd_open_flags;

  using kvikio::MmapHandle;
  [[maybe_unused]] std::size_t (MmapHandle::*mm_read)(
    void*, std::optional<std::size_t>, std::size_t) = &MmapHandle::read;
  [[maybe_unused]] std::future<std::size_t> (MmapHandle::*mm_pread)(
    void*, std::optional<std::size_t>, std::size_t, std::size_t, kvikio::ThreadPool*) =
    &MmapHandle::pread;

  using kvikio::RemoteHandle;
  [[maybe_unused]] RemoteHandle (*rh_open)(std::string const&,
                                           kvikio::RemoteEndpointType,
                                           std::optional<std::vector<kvikio::RemoteEndpointType>>,
                                           std::optional<std::size_t>) = &RemoteHandle::open;
  [[maybe_unused]] std::size_t (RemoteHandle::*rh_read)(void*, std::size_t, std::size_t) =
    &RemoteHandle::read;
  [[maybe_unused]] std::future<std::size_t> (RemoteHandle::*rh_pread)(
    void*, std::size_t, std::size_t, std::size_t, kvikio::ThreadPool*) = &RemoteHandle::pread;
  [[maybe_unused]] std::pair<std::string, std::string> (*s3_parse)(std::string const&) =
    &kvikio::S3Endpoint::parse_s3_url;
  [[maybe_unused]] std::string (*s3_url)(
    std::string, std::string, std::optional<std::string>, std::optional<std::string>) =
    &kvikio::S3Endpoint::url_from_bucket_and_object;
  [[maybe_unused]] bool (*v1)(std::string const&) = &kvikio::HttpEndpoint::is_url_valid;
  [[maybe_unused]] bool (*v2)(std::string const&) = &kvikio::S3Endpoint::is_url_valid;
  [[maybe_unused]] bool (*v3)(std::string const&) = &kvikio::S3PublicEndpoint::is_url_valid;
  [[maybe_unused]] bool (*v4)(std::string const&) =
    &kvikio::S3EndpointWithPresignedUrl::is_url_valid;
  [[maybe_unused]] bool (*v5)(std::string const&) = &kvikio::WebHdfsEndpoint::is_url_valid;

  using kvikio::CompatModeManager;
  [[maybe_unused]] void (CompatModeManager::*cm_validate)() const =
    &CompatModeManager::validate_compat_mode_for_async;

  [[maybe_unused]] std::tuple<void*, std::size_t*, off_t*, off_t*, ssize_t*, CUstream> (
    kvikio::StreamFuture::*sf_args)() const = &kvikio::StreamFuture::get_args;
  [[maybe_unused]] std::size_t (kvikio::StreamFuture::*sf_done)() =
    &kvikio::StreamFuture::check_bytes_done;

  using kvikio::BatchHandle;
  [[maybe_unused]] void (BatchHandle::*bh_submit)(std::vector<kvikio::BatchOp> const&) =
    &BatchHandle::submit;
  [[maybe_unused]] std::vector<CUfileIOEvents_t> (BatchHandle::*bh_status)(
    unsigned, unsigned, struct timespec*)           = &BatchHandle::status;
  [[maybe_unused]] void (BatchHandle::*bh_cancel)() = &BatchHandle::cancel;

  using kvikio::DriverProperties;
  [[maybe_unused]] bool (DriverProperties::*dp1)() = &DriverProperties::is_gds_available;
  [[maybe_unused]] unsigned int (DriverProperties::*dp2)() =
    &DriverProperties::get_nvfs_major_version;
  [[maybe_unused]] unsigned int (DriverProperties::*dp3)() =
    &DriverProperties::get_nvfs_minor_version;
  [[maybe_unused]] bool (DriverProperties::*dp4)() = &DriverProperties::get_nvfs_allow_compat_mode;
  [[maybe_unused]] bool (DriverProperties::*dp5)() = &DriverProperties::get_nvfs_poll_mode;
  [[maybe_unused]] std::size_t (DriverProperties::*dp6)() =
    &DriverProperties::get_nvfs_poll_thresh_size;
  [[maybe_unused]] void (DriverProperties::*dp7)(bool) = &DriverProperties::set_nvfs_poll_mode;
  [[maybe_unused]] void (DriverProperties::*dp8)(std::size_t) =
    &DriverProperties::set_nvfs_poll_thresh_size;
  [[maybe_unused]] std::vector<CUfileDriverControlFlags> (DriverProperties::*dp9)() =
    &DriverProperties::get_nvfs_statusflags;
  [[maybe_unused]] std::size_t (DriverProperties::*dp10)() =
    &DriverProperties::get_max_device_cache_size;
  [[maybe_unused]] void (DriverProperties::*dp11)(std::size_t) =
    &DriverProperties::set_max_device_cache_size;
  [[maybe_unused]] std::size_t (DriverProperties::*dp12)() =
    &DriverProperties::get_per_buffer_cache_size;
  [[maybe_unused]] std::size_t (DriverProperties::*dp13)() =
    &DriverProperties::get_max_pinned_memory_size;
  [[maybe_unused]] void (DriverProperties::*dp14)(std::size_t) =
    &DriverProperties::set_max_pinned_memory_size;
  [[maybe_unused]] std::size_t (DriverProperties::*dp15)() =
    &DriverProperties::get_max_batch_io_size;

  [[maybe_unused]] void (kvikio::cuFileAPI::*cf_open)()  = &kvikio::cuFileAPI::driver_open;
  [[maybe_unused]] void (kvikio::cuFileAPI::*cf_close)() = &kvikio::cuFileAPI::driver_close;
  [[maybe_unused]] kvikio::cuFileAPI& (*cf_inst)()       = &kvikio::cuFileAPI::instance;
  [[maybe_unused]] kvikio::cudaAPI& (*cu_inst)()         = &kvikio::cudaAPI::instance;
  [[maybe_unused]] CUresult (*cu_memcpy)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) =
    &kvikio::cudaAPI::cuda_memcpy_async;
  [[maybe_unused]] int kvikio::cudaAPI::*cu_version          = &kvikio::cudaAPI::driver_version;
  [[maybe_unused]] auto cu_async                             = &kvikio::cudaAPI::MemcpyAsync;
  [[maybe_unused]] auto cu_batch                             = &kvikio::cudaAPI::MemcpyBatchAsync;
  [[maybe_unused]] char const* (*cufile_text)(CUfileOpError) = &cufileop_status_error;

  // error.hpp's detail functions behind upstream's macros
  [[maybe_unused]] void (*p_cuda_try)(CUresult, int, char const*) =
    &kvikio::detail::cuda_driver_try<kvikio::CUfileException>;
  [[maybe_unused]] void (*p_cufile_try)(CUfileError_t, int, char const*) =
    &kvikio::detail::cufile_try<kvikio::CUfileException>;
  [[maybe_unused]] void (*p_bytes_done)(ssize_t, int, char const*) =
    &kvikio::detail::cufile_check_bytes_done<kvikio::CUfileException>;
  [[maybe_unused]] void (*p_linux)(long, int, char const*, std::string_view, long) =
    &kvikio::detail::check_linux_call;
  [[maybe_unused]] void (*p_linux_error)(int, char const*, std::string_view) =
    &kvikio::detail::handle_linux_call_error;

  // shim/libcurl.hpp
  [[maybe_unused]] kvikio::LibCurl& (*p_libcurl)() = &kvikio::LibCurl::instance;
  [[maybe_unused]] kvikio::LibCurl::UniqueHandlePtr (kvikio::LibCurl::*p_free)() =
    &kvikio::LibCurl::get_free_handle;
  [[maybe_unused]] kvikio::LibCurl::UniqueHandlePtr (kvikio::LibCurl::*p_get)() =
    &kvikio::LibCurl::get_handle;
  [[maybe_unused]] void (kvikio::LibCurl::*p_retain)(kvikio::LibCurl::UniqueHandlePtr) =
    &kvikio::LibCurl::retain_handle;
  static_assert(std::is_constructible_v<kvikio::CurlHandle,
                                        kvikio::LibCurl::UniqueHandlePtr,
                                        std::string,
                                        std::string>);
  [[maybe_unused]] void (kvikio::CurlHandle::*p_perform)() = &kvikio::CurlHandle::perform;
}

}  // namespace

// The bounce-buffer allocators and pools, as upstream names them (instantiated, not run).
template <typename Pool>
void use_pool()
{
  Pool& pool                                                      = Pool::instance();
  [[maybe_unused]] typename Pool::Buffer (Pool::*get)()           = &Pool::get;
  [[maybe_unused]] std::size_t (Pool::*free_count)() const        = &Pool::num_free_buffers;
  [[maybe_unused]] std::size_t (Pool::*size)() const              = &Pool::buffer_size;
  [[maybe_unused]] std::size_t (Pool::*clear)()                   = &Pool::clear;
  [[maybe_unused]] void (Pool::*put)(void*, std::size_t) noexcept = &Pool::put;
  [[maybe_unused]] void* (Pool::Buffer::*at)(std::ptrdiff_t) const noexcept = &Pool::Buffer::get;
  (void)pool;
}
template void use_pool<kvikio::PageAlignedBounceBufferPool>();
template void use_pool<kvikio::CudaPinnedBounceBufferPool>();
template void use_pool<kvikio::CudaPageAlignedPinnedBounceBufferPool>();

namespace {

// An endpoint of a user's own, written against upstream's RemoteEndpoint and CurlHandle.
class UserEndpoint : public kvikio::RemoteEndpoint {
 public:
  // Upstream's protected member, seen from a subclass.
  [[nodiscard]] kvikio::RemoteEndpointType type_member() const { return _remote_endpoint_type; }
  explicit UserEndpoint(std::string url)
    : RemoteEndpoint{kvikio::RemoteEndpointType::HTTP}, url_{std::move(url)}
  {
  }
  void setopt(kvikio::CurlHandle& curl) override { curl.setopt(CURLOPT_URL, url_.c_str()); }
  [[nodiscard]] std::string str() const override { return url_; }
  std::size_t get_file_size() override
  {
    auto curl = create_curl_handle();
    setopt(curl);
    curl.setopt(CURLOPT_NOBODY, 1L);
    curl.perform();
    curl_off_t length{};
    curl.getinfo(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    return static_cast<std::size_t>(length);
  }
  void setup_range_request(kvikio::CurlHandle& curl,
                           std::size_t file_offset,
                           std::size_t size) override
  {
    std::string const range =
      std::to_string(file_offset) + "-" + std::to_string(file_offset + size - 1);
    curl.setopt(CURLOPT_RANGE, range.c_str());
  }

 private:
  std::string url_;
};

std::string write_pattern_file(std::string const& path, std::size_t nbytes)
{
  std::string data(nbytes, '\0');
  for (std::size_t i = 0; i < nbytes; ++i) {
    data[i] = static_cast<char>((i * 131 + 7) % 251);
  }
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(nbytes));
  return data;
}

}  // namespace

TEST(UpstreamApi, VersionMacrosAndStringify)
{
  static_assert(KVIKIO_VERSION_MAJOR >= 0 && KVIKIO_VERSION_MINOR >= 0 &&
                KVIKIO_VERSION_PATCH >= 0);
  EXPECT_STREQ(KVIKIO_STRINGIFY(KVIKIO_VERSION_MAJOR),
               std::to_string(KVIKIO_VERSION_MAJOR).c_str());
  EXPECT_STREQ(KVIKIO_STRINGIFY(abc), "abc");
}

TEST(UpstreamApi, ErrorMacros)
{
  EXPECT_THROW(KVIKIO_EXPECT(false, "plain"), kvikio::CUfileException);
  EXPECT_THROW(KVIKIO_EXPECT(false, "typed", std::invalid_argument), std::invalid_argument);
  EXPECT_NO_THROW(KVIKIO_EXPECT(true, "never"));
  EXPECT_THROW(KVIKIO_FAIL("failed"), kvikio::CUfileException);
  EXPECT_THROW(KVIKIO_FAIL("failed", std::out_of_range), std::out_of_range);
  try {
    KVIKIO_FAIL("the message", std::runtime_error);
  } catch (std::runtime_error const& e) {
    EXPECT_EQ(std::string(e.what()).rfind("KvikIO failure at: ", 0), 0U) << e.what();
    EXPECT_NE(std::string(e.what()).find("the message"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(KVIKIO_SYSCALL_CHECK(0));
  errno = ENOENT;
  EXPECT_THROW(KVIKIO_SYSCALL_CHECK(-1), kvikio::GenericSystemError);
  EXPECT_THROW(KVIKIO_SYSCALL_CHECK(-1, "context"), kvikio::GenericSystemError);
  EXPECT_NO_THROW(KVIKIO_SYSCALL_CHECK(-1, "context", 42));
  errno = EBADF;
  EXPECT_THROW(KVIKIO_SYSCALL_CHECK(42, "context", 42), kvikio::GenericSystemError);
  EXPECT_NO_THROW(KVIKIO_CUFILE_CHECK_BYTES_DONE(5));
  EXPECT_THROW(KVIKIO_CUFILE_CHECK_BYTES_DONE(-EIO), kvikio::CUfileException);
  EXPECT_THROW(KVIKIO_CUFILE_CHECK_BYTES_DONE(-EIO, std::runtime_error), std::runtime_error);
  CUfileError_t ok{};
  EXPECT_NO_THROW(KVIKIO_CUFILE_TRY(ok));
  EXPECT_NO_THROW(KVIKIO_CUDA_DRIVER_TRY(CUDA_SUCCESS));
  EXPECT_THROW(KVIKIO_CUDA_DRIVER_TRY(CUDA_ERROR_INVALID_VALUE, std::runtime_error),
               std::runtime_error);
  kvikio::GenericSystemError const e1(EACCES, "denied");
  kvikio::GenericSystemError const e2(EACCES, std::string("denied"));
  kvikio::GenericSystemError const e3("plain");
  EXPECT_EQ(e1.code().value(), EACCES);
  EXPECT_EQ(e2.code().value(), EACCES);
  [[maybe_unused]] kvikio::GenericSystemError copy = e3;
  KVIKIO_LOG_TRACE("trace {}", 1);
  KVIKIO_LOG_DEBUG("debug");
  KVIKIO_LOG_INFO("info");
  KVIKIO_LOG_WARN("warn");
  KVIKIO_LOG_ERROR("error");
  KVIKIO_LOG_CRITICAL("critical");
}

TEST(UpstreamApi, Utils)
{
  EXPECT_EQ(kvikio::get_page_size(), static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(kvikio::convert_size2off(12), off_t{12});
  EXPECT_EQ(kvikio::convert_size2ssize(12), ssize_t{12});
  EXPECT_THROW((void)kvikio::convert_size2off(std::numeric_limits<std::size_t>::max()),
               kvikio::CUfileException);
  EXPECT_THROW((void)kvikio::convert_size2ssize(std::numeric_limits<std::size_t>::max()),
               kvikio::CUfileException);
  static_assert(std::is_same_v<decltype(kvikio::convert_to_64bit(1)), std::int64_t>);
  static_assert(
    std::is_same_v<decltype(kvikio::convert_to_64bit(std::uint64_t{1})), std::uint64_t>);
  static_assert(std::is_same_v<decltype(kvikio::convert_to_64bit(1.5F)), double>);
  EXPECT_EQ(kvikio::convert_to_64bit(-3), -3);
  auto ready = kvikio::make_ready_future(std::size_t{7});
  EXPECT_TRUE(kvikio::is_future_done(ready));
  EXPECT_EQ(ready.get(), 7U);
  std::future<int> invalid;
  EXPECT_THROW((void)kvikio::is_future_done(invalid), std::invalid_argument);
  EXPECT_TRUE(kvikio::is_host_memory(&ready));
}

TEST(UpstreamApi, DetailUtils)
{
  EXPECT_EQ(kvikio::detail::normalize_env_value("  On \t"), "on");
  EXPECT_EQ(kvikio::detail::align_up(4097, 4096), 8192U);
  EXPECT_EQ(kvikio::detail::align_down(4097, 4096), 4096U);
  EXPECT_TRUE(kvikio::detail::is_aligned(8192, 4096));
  EXPECT_FALSE(kvikio::detail::is_aligned(8193, 4096));
  alignas(64) char buffer[128];
  EXPECT_EQ(kvikio::detail::align_up(static_cast<void*>(buffer + 1), 64),
            static_cast<void*>(buffer + 64));
  EXPECT_EQ(kvikio::detail::align_down(static_cast<void*>(buffer + 63), 64),
            static_cast<void*>(buffer));
  EXPECT_TRUE(kvikio::detail::is_aligned(static_cast<void*>(buffer), 64));
  int ran = 0;
  {
    kvikio::detail::ScopeExit guard([&] { ++ran; });
  }
  EXPECT_EQ(ran, 1);
}

TEST(UpstreamApi, DefaultsRemoteBackendAndDispatch)
{
  using kvikio::defaults;
  EXPECT_EQ(defaults::remote_io_backend(), kvikio::RemoteIOBackend::EASY_THREADPOOL);
  EXPECT_EQ(defaults::remote_io_reactor_dispatch(), kvikio::RemoteReactorDispatch::PER_CHUNK);
  defaults::set_remote_io_backend(kvikio::RemoteIOBackend::MULTI_POLL);
  EXPECT_EQ(defaults::remote_io_backend(), kvikio::RemoteIOBackend::MULTI_POLL);
  defaults::set_remote_io_reactor_dispatch(kvikio::RemoteReactorDispatch::PER_PREAD);
  EXPECT_EQ(defaults::remote_io_reactor_dispatch(), kvikio::RemoteReactorDispatch::PER_PREAD);
  EXPECT_EQ(defaults::remote_io_num_reactors(), 1U);
  EXPECT_EQ(defaults::remote_io_max_concurrent_requests(), 0U);
  EXPECT_EQ(defaults::http_status_codes(), (std::vector<int>{429, 500, 502, 503, 504}));
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_TEST_SURELY_UNSET", 42), 42);
  EXPECT_EQ(kvikio::getenv_or<std::size_t>("KVIKIO_TEST_SURELY_UNSET", 7), 7U);
  EXPECT_EQ(kvikio::getenv_or<std::string>("KVIKIO_TEST_SURELY_UNSET", "x"), "x");
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_TEST_SURELY_UNSET", 2.5), 2.5);
  {
    kvikio::test::EnvGuard guard{{"KVIKIO_TEST_BACKEND", "multi_poll"}, {"KVIKIO_TEST_D", "1.5"}};
    EXPECT_EQ(kvikio::getenv_or("KVIKIO_TEST_BACKEND", kvikio::RemoteIOBackend::EASY_THREADPOOL),
              kvikio::RemoteIOBackend::MULTI_POLL);
    EXPECT_EQ(kvikio::getenv_or("KVIKIO_TEST_D", 0.0), 1.5);
    EXPECT_THROW((void)kvikio::getenv_or("KVIKIO_TEST_BACKEND", 0.0), std::invalid_argument);
  }
  EXPECT_EQ(kvikio::detail::parse_http_status_codes("X", "500, 503"), (std::vector<int>{500, 503}));
  EXPECT_THROW((void)kvikio::detail::parse_http_status_codes("X", "5000"), std::invalid_argument);
  EXPECT_EQ(kvikio::detail::parse_compat_mode_str("ON"), kvikio::CompatMode::ON);
}

TEST(UpstreamApi, ReactorDispatchFromEnvironment)
{
  kvikio::test::EnvGuard guard{{"KVIKIO_REMOTE_IO_REACTOR_DISPATCH", "per_pread"}};
  EXPECT_EQ(kvikio::defaults::remote_io_reactor_dispatch(),
            kvikio::RemoteReactorDispatch::PER_PREAD);
}

TEST(UpstreamApi, ReactorDispatchBadValueNamesIt)
{
  kvikio::test::EnvGuard guard{{"KVIKIO_REMOTE_IO_REACTOR_DISPATCH", "sideways"}};
  try {
    (void)kvikio::defaults::remote_io_reactor_dispatch();
    FAIL() << "no exception";
  } catch (std::invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("KVIKIO_REMOTE_IO_REACTOR_DISPATCH"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("sideways"), std::string::npos);
  }
}

TEST(UpstreamApi, ConfigPathIsTheFileThatExists)
{
  kvikio::test::TempDir dir;
  auto const json = dir.file("cufile.json");
  kvikio::test::write_file(json, {'{', '}'});
  kvikio::test::EnvGuard guard{{"CUFILE_ENV_PATH_JSON", json}};
  EXPECT_EQ(kvikio::config_path(), json);  // read once per process: the first call decides
}

TEST(UpstreamApi, ConfigPathOfAMissingFile)
{
  kvikio::test::EnvGuard guard{{"CUFILE_ENV_PATH_JSON", "/nonexistent/cufile.json"}};
  bool const system_file = ::access("/etc/cufile.json", F_OK) == 0;
  EXPECT_EQ(kvikio::config_path(), system_file ? "/etc/cufile.json" : "");
}

TEST(UpstreamApi, MmapHandleDefaultAndClosed)
{
  kvikio::MmapHandle empty;
  EXPECT_TRUE(empty.closed());
  EXPECT_EQ(empty.nbytes(), 0U);
  EXPECT_EQ(empty.file_size(), 0U);
  EXPECT_EQ(empty.initial_map_size(), 0U);
  EXPECT_EQ(empty.initial_map_offset(), 0U);
  char buf[4];
  try {
    (void)empty.read(buf, 4, 0);
    FAIL() << "no exception";
  } catch (std::runtime_error const& e) {
    EXPECT_NE(std::string(e.what()).find("Cannot read from a closed MmapHandle"), std::string::npos)
      << e.what();
  }
  EXPECT_THROW((void)empty.pread(buf, 4, 0), std::runtime_error);
}

TEST(UpstreamApi, UrlParserBuilderEncoder)
{
  using kvikio::detail::UrlBuilder;
  using kvikio::detail::UrlEncoder;
  using kvikio::detail::UrlParser;
  auto const c = UrlParser::parse("https://example.com:8080/a/b?x=1#frag");
  EXPECT_EQ(c.scheme, "https");
  EXPECT_EQ(c.host, "example.com");
  EXPECT_EQ(c.port, "8080");
  EXPECT_EQ(c.path, "/a/b");
  EXPECT_EQ(c.query, "x=1");
  EXPECT_EQ(c.fragment, "frag");
  auto const plain = UrlParser::parse("http://example.com/x");
  EXPECT_FALSE(plain.port.has_value());
  EXPECT_FALSE(plain.query.has_value());
  EXPECT_THROW((void)UrlParser::parse("not a url"), std::runtime_error);
  EXPECT_EQ(UrlParser::extract_component("http://h/p?q=2", CURLUPART_QUERY), "q=2");
  EXPECT_EQ(UrlParser::extract_component(
              "http://h/p", CURLUPART_QUERY, std::nullopt, std::nullopt, CURLUE_NO_QUERY),
            std::nullopt);
  kvikio::detail::CurlUrlHandle handle;
  EXPECT_NE(handle.get(), nullptr);

  EXPECT_EQ(UrlBuilder("http://h/p").set_path("/other").set_query("k=v").build(),
            "http://h/other?k=v");
  EXPECT_EQ(UrlBuilder(c).set_port(std::nullopt).set_fragment(std::nullopt).build(),
            "https://example.com/a/b?x=1");
  EXPECT_EQ(UrlBuilder().set_scheme("http").set_host("h").set_path("/x").build(), "http://h/x");
  EXPECT_EQ(UrlBuilder::build_manually(c), "https://example.com:8080/a/b?x=1#frag");

  EXPECT_EQ(UrlEncoder::encode_path("/a b/c(1)"), "/a%20b/c%281%29");
  EXPECT_EQ(UrlEncoder::encode_path("/keep-me_~.", "e"), "/k%65%65p-m%65_~.");
  // UTF-8 is not in the default set: it passes through unchanged; control bytes do not.
  EXPECT_EQ(UrlEncoder::encode_path("/caf\xC3\xA9 x\x01"), "/caf\xC3\xA9%20x%01");
  // A byte beyond ASCII that the set names is dropped, as upstream's table does.
  EXPECT_EQ(UrlEncoder::encode_path("/\xC3\xA9", "\xC3"), "/\xA9");
}

TEST(UpstreamApi, RemoteEnumsAndInference)
{
  EXPECT_EQ(kvikio::infer_remote_endpoint_type("s3://bucket/key"), kvikio::RemoteEndpointType::S3);
  EXPECT_EQ(kvikio::infer_remote_endpoint_type("http://host/file"),
            kvikio::RemoteEndpointType::HTTP);
  for (auto v : {kvikio::RemoteEndpointType::AUTO,
                 kvikio::RemoteEndpointType::S3,
                 kvikio::RemoteEndpointType::S3_PUBLIC,
                 kvikio::RemoteEndpointType::S3_PRESIGNED_URL,
                 kvikio::RemoteEndpointType::WEBHDFS,
                 kvikio::RemoteEndpointType::HTTP}) {
    (void)v;
  }
  static_assert(static_cast<int>(kvikio::RemoteIOBackend::EASY_THREADPOOL) == 0);
  static_assert(static_cast<int>(kvikio::RemoteIOBackend::MULTI_POLL) == 1);
  static_assert(static_cast<int>(kvikio::RemoteReactorDispatch::PER_CHUNK) == 0);
  static_assert(static_cast<int>(kvikio::RemoteReactorDispatch::PER_PREAD) == 1);
}

TEST(UpstreamApi, UserEndpointAndCurlHandle)
{
  UserEndpoint endpoint{"http://127.0.0.1:1/nothing"};
  EXPECT_EQ(endpoint.str(), "http://127.0.0.1:1/nothing");
  EXPECT_EQ(endpoint.remote_endpoint_type(), kvikio::RemoteEndpointType::HTTP);
  EXPECT_EQ(endpoint.type_member(), kvikio::RemoteEndpointType::HTTP);
  auto curl = create_curl_handle();
  EXPECT_NE(curl.handle(), nullptr);
  long code = -1;
  curl.getinfo(CURLINFO_RESPONSE_CODE, &code);
  EXPECT_EQ(code, 0);  // nothing performed yet
  EXPECT_THROW(curl.setopt(static_cast<CURLoption>(999999), 1L), std::runtime_error);
  // perform() throws libcurl's error, as upstream's does: nothing listens on port 1.
  endpoint.setopt(curl);
  try {
    curl.perform();
    FAIL() << "a refused connection did not throw";
  } catch (std::runtime_error const& e) {
    EXPECT_EQ(std::string{e.what()}.rfind("curl_easy_perform() error (", 0), 0U) << e.what();
    EXPECT_NE(std::string{e.what()}.find("test_upstream_api.cpp:"), std::string::npos) << e.what();
  }
}

TEST(UpstreamApi, LibCurlPoolsHandles)
{
  auto& pool = kvikio::LibCurl::instance();
  EXPECT_EQ(&pool, &kvikio::LibCurl::instance());
  // Take every free handle, so that what follows sees only its own.
  std::vector<kvikio::LibCurl::UniqueHandlePtr> drained;
  while (auto h = pool.get_free_handle()) {
    drained.push_back(std::move(h));
  }
  EXPECT_EQ(pool.get_free_handle(), nullptr);
  kvikio::LibCurl::UniqueHandlePtr fresh = pool.get_handle();
  ASSERT_NE(fresh, nullptr);
  CURL* const raw = fresh.get();
  ASSERT_EQ(curl_easy_setopt(raw, CURLOPT_URL, "http://127.0.0.1:1/x"), CURLE_OK);
  pool.retain_handle(std::move(fresh));
  auto again = pool.get_free_handle();
  EXPECT_EQ(again.get(), raw);  // the same handle, back from the pool
  char* url = nullptr;
  ASSERT_EQ(curl_easy_getinfo(again.get(), CURLINFO_EFFECTIVE_URL, &url), CURLE_OK);
  EXPECT_TRUE(url == nullptr || std::string{url}.empty()) << "options were not reset: " << url;
  // A CurlHandle made from it returns it when destroyed.
  {
    kvikio::CurlHandle curl{std::move(again), "here.cpp", "1"};
    EXPECT_EQ(curl.handle(), raw);
  }
  auto back = pool.get_free_handle();
  EXPECT_EQ(back.get(), raw);
  pool.retain_handle(std::move(back));
  for (auto& h : drained) {
    pool.retain_handle(std::move(h));
  }
  EXPECT_THROW(kvikio::CurlHandle(
                 kvikio::LibCurl::UniqueHandlePtr{nullptr, curl_easy_cleanup}, "here.cpp", "2"),
               std::invalid_argument);
}

TEST(UpstreamApi, FileHandleErrorsStartWithUpstreamWording)
{
  kvikio::test::TempDir dir;
  auto const path = dir.file("f");
  write_pattern_file(path, 100);
  auto expect_message = [](auto&& fn, std::string const& wording) {
    try {
      fn();
      ADD_FAILURE() << "no exception for: " << wording;
    } catch (std::exception const& e) {
      EXPECT_NE(std::string(e.what()).find(wording), std::string::npos) << e.what();
    }
  };
  expect_message([&] { kvikio::FileHandle f(path, "x"); }, "Unknown file open flag");
  expect_message([&] { kvikio::FileHandle f(path, "a"); }, "Open flag 'a' isn't supported");
  EXPECT_THROW(kvikio::FileHandle(path, ""), std::invalid_argument);
  expect_message([&] { kvikio::FileHandle f(dir.file("missing"), "r"); }, "Unable to open file");
  EXPECT_THROW(kvikio::FileHandle(dir.file("missing"), "r"), kvikio::GenericSystemError);
  kvikio::FileHandle write_only(path, "w", kvikio::FileHandle::m644, kvikio::CompatMode::ON);
  char buf[8];
  expect_message([&] { write_only.pread(buf, 8, 0).get(); }, "Operation not permitted");
  write_pattern_file(path, 100);
  kvikio::MmapHandle mapped(path);
  expect_message([&] { (void)mapped.read(buf, 8, 101); }, "Offset is past the end of file");
  expect_message([&] { (void)mapped.read(buf, 8, 96); }, "Read is out of bound");
  EXPECT_EQ(mapped.read(buf, std::nullopt, 100), 0U);  // at the end: nothing to read
  expect_message([&] { kvikio::MmapHandle m(path, "r", 0); },
                 "Mapped region should not be zero byte");
  expect_message([&] { kvikio::MmapHandle m(path, "r", 101); },
                 "Mapped region is past the end of file");
  expect_message([&] { kvikio::MmapHandle m(path, "w"); },
                 "File-backed mmap write is not supported yet");
  expect_message([&] { kvikio::MmapHandle m(path, "r", std::nullopt, 200); },
                 "Offset must be less than the file size");
}
