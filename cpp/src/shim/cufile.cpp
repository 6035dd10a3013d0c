/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/shim/cufile.hpp>

#include <sys/stat.h>

#include <memory>
#include <stdexcept>

#include <kvikio/error.hpp>
#include <kvikio/shim/cuda.hpp>

#include "shim/dynamic_library.hpp"

namespace kvikio {

// Loads libcufile.so.0 once; keeps either the table or the reason there is none.
struct [[gnu::visibility("hidden")]] CuFileLoader
{  // hidden: private to this copy
  std::unique_ptr<cuFileAPI> api;
  std::string unavailable_reason;

  CuFileLoader()
  {
    try {
      detail::DynamicLibrary const lib{"libcufile.so.0"};
      auto table = std::unique_ptr<cuFileAPI>(new cuFileAPI());
      lib.resolve(table->DriverOpen, "cuFileDriverOpen");
      // cufile.h maps cuFileDriverClose to cuFileDriverClose_v2.
      lib.resolve(table->DriverClose, "cuFileDriverClose_v2");
      lib.resolve(table->GetVersion, "cuFileGetVersion");
      lib.resolve(table->HandleRegister, "cuFileHandleRegister");
      lib.resolve(table->HandleDeregister, "cuFileHandleDeregister");
      lib.resolve(table->Read, "cuFileRead");
      lib.resolve(table->Write, "cuFileWrite");
      lib.resolve(table->BufRegister, "cuFileBufRegister");
      lib.resolve(table->BufDeregister, "cuFileBufDeregister");
      lib.resolve(table->DriverGetProperties, "cuFileDriverGetProperties");
      table->DriverSetPollMode =
        lib.find<decltype(table->DriverSetPollMode)>("cuFileDriverSetPollMode");
      table->DriverSetMaxCacheSize =
        lib.find<decltype(table->DriverSetMaxCacheSize)>("cuFileDriverSetMaxCacheSize");
      table->DriverSetMaxPinnedMemSize =
        lib.find<decltype(table->DriverSetMaxPinnedMemSize)>("cuFileDriverSetMaxPinnedMemSize");
      table->ReadAsync      = lib.find<decltype(table->ReadAsync)>("cuFileReadAsync");
      table->WriteAsync     = lib.find<decltype(table->WriteAsync)>("cuFileWriteAsync");
      table->StreamRegister = lib.find<decltype(table->StreamRegister)>("cuFileStreamRegister");
      table->StreamDeregister =
        lib.find<decltype(table->StreamDeregister)>("cuFileStreamDeregister");
      table->BatchIOSetUp  = lib.find<decltype(table->BatchIOSetUp)>("cuFileBatchIOSetUp");
      table->BatchIOSubmit = lib.find<decltype(table->BatchIOSubmit)>("cuFileBatchIOSubmit");
      table->BatchIOGetStatus =
        lib.find<decltype(table->BatchIOGetStatus)>("cuFileBatchIOGetStatus");
      table->BatchIOCancel  = lib.find<decltype(table->BatchIOCancel)>("cuFileBatchIOCancel");
      table->BatchIODestroy = lib.find<decltype(table->BatchIODestroy)>("cuFileBatchIODestroy");
      api                   = std::move(table);
    } catch (std::runtime_error const& e) {
      unavailable_reason = e.what();
    }
  }

  static CuFileLoader const& get()
  {
    static CuFileLoader const loader;
    return loader;
  }
};

cuFileAPI& cuFileAPI::instance()
{
  auto const& loader = CuFileLoader::get();
  if (!loader.api) {
    throw CUfileException{"KvikIO: cuFile is not available: " + loader.unavailable_reason};
  }
  return *loader.api;
}

bool is_cufile_library_available() noexcept { return CuFileLoader::get().api != nullptr; }

int cufile_version() noexcept
{
  if (!is_cufile_library_available()) { return 0; }
  int version{};
  return cuFileAPI::instance().GetVersion(&version).err == CU_FILE_SUCCESS ? version : 0;
}

namespace detail {
std::string cufile_unavailable_reason() { return CuFileLoader::get().unavailable_reason; }
}  // namespace detail

namespace {

struct CufileState {
  bool usable{false};
  bool gds{false};  // nvidia-fs is loaded: cuFile moves data by DMA, not by its own POSIX fallback
  std::string reason;

  CufileState()
  {
    if (!is_cufile_library_available()) {
      reason = detail::cufile_unavailable_reason();
      return;
    }
    if (!is_cuda_available()) {
      reason = "cuFile needs a CUDA driver, and " + detail::cuda_unavailable_reason();
      return;
    }
    auto const opened = cuFileAPI::instance().DriverOpen();
    if (opened.err != CU_FILE_SUCCESS && opened.err != CU_FILE_DRIVER_ALREADY_OPEN) {
      reason =
        "cuFileDriverOpen failed: " + detail::cufile_error_description(opened.err, opened.cu_err);
      return;
    }
    usable = true;  // the driver stays open for the life of the process
    CUfileDrvProps_t props{};
    gds = cuFileAPI::instance().DriverGetProperties(&props).err == CU_FILE_SUCCESS &&
          props.nvfs.major_version > 0;
  }

  static CufileState const& get()
  {
    static CufileState const state;
    return state;
  }
};

}  // namespace

namespace detail {
bool is_cufile_usable() noexcept { return CufileState::get().usable; }
bool is_nvidia_fs_loaded() noexcept
{
  static bool const loaded = [] {
    struct stat st {};
    return ::stat("/sys/module/nvidia_fs", &st) == 0;
  }();
  return loaded;
}

bool is_gds_available() noexcept
{
  // nvidia-fs is asked for first: opening cuFile's driver to read its properties allocates the
  // driver's buffers (tens of MiB resident), which nothing uses without it.
  return is_nvidia_fs_loaded() && CufileState::get().gds;
}
std::string cufile_unusable_reason() { return CufileState::get().reason; }
}  // namespace detail

bool is_cufile_available() noexcept { return detail::is_cufile_usable(); }

}  // namespace kvikio
