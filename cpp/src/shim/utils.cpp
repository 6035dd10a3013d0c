/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include <kvikio/shim/utils.hpp>

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <stdexcept>
#include <string>

namespace kvikio {

void* load_library(std::string const& name, int mode)
{
  void* handle = ::dlopen(name.c_str(), mode);
  if (handle == nullptr) {
    char const* err = ::dlerror();
    throw std::runtime_error("cannot load " + name + ": " + (err != nullptr ? err : "unknown"));
  }
  return handle;
}

bool is_running_in_wsl() noexcept
{
  struct utsname info {};
  if (::uname(&info) != 0) { return false; }
  // WSL kernels name themselves in their release string ("...-microsoft-standard-WSL2").
  std::string release{info.release};
  for (auto& c : release) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return release.find("microsoft") != std::string::npos || release.find("wsl") != std::string::npos;
}

bool run_udev_readable() noexcept { return ::access("/run/udev", R_OK) == 0; }

}  // namespace kvikio
