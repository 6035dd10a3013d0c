/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "shim/dynamic_library.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <utility>

#include <kvikio/shim/utils.hpp>

namespace kvikio::detail {

// RTLD_NODELETE (load_library's default): tables of function pointers into the library outlive
// this object.
DynamicLibrary::DynamicLibrary(std::string name)
  : name_{std::move(name)}, handle_{load_library(name_)}
{
}

void* DynamicLibrary::lookup(char const* symbol) const
{
  ::dlerror();  // clear a stale error so that the check below is about this lookup
  void* address = ::dlsym(handle_, symbol);
  if (address == nullptr) {
    char const* err = ::dlerror();
    throw std::runtime_error(name_ + " has no entry point " + symbol + ": " +
                             (err != nullptr ? err : "symbol is null"));
  }
  return address;
}

void* DynamicLibrary::try_lookup(char const* symbol) const noexcept
{
  return ::dlsym(handle_, symbol);
}

}  // namespace kvikio::detail
