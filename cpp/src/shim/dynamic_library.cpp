/*
 * SPDX-License-Identifier: Apache-2.0
 */
#include "dynamic_library.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace kvikio::detail {

DynamicLibrary::DynamicLibrary(std::string name) : name_{std::move(name)}
{
  // RTLD_NODELETE: tables of function pointers into the library outlive this object.
  handle_ = ::dlopen(name_.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
  if (handle_ == nullptr) {
    char const* err = ::dlerror();
    throw std::runtime_error("cannot load " + name_ + ": " + (err != nullptr ? err : "unknown"));
  }
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
