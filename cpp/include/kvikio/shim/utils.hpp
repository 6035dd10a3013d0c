/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file shim/utils.hpp
 * @brief Loading shared libraries at run time, and the symbol-visibility and stringify macros.
 */

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <vector>

#if (defined(__GNUC__) || defined(__clang__))
/// @brief Marks a symbol as exported from libkvikio.
#define KVIKIO_EXPORT __attribute__((visibility("default")))
/// @brief Marks a symbol as private to libkvikio.
#define KVIKIO_HIDDEN __attribute__((visibility("hidden")))
#else
#define KVIKIO_EXPORT
#define KVIKIO_HIDDEN
#endif

/// @brief Helper of KVIKIO_STRINGIFY: quotes its argument as written.
#define KVIKIO_STRINGIFY_DETAIL(x) #x
/// @brief Quotes its argument after macro expansion: `KVIKIO_STRINGIFY(__LINE__)` is `"42"`.
#define KVIKIO_STRINGIFY(x) KVIKIO_STRINGIFY_DETAIL(x)

namespace kvikio {

/**
 * @brief `dlopen` of a shared library.
 * @param name file name of the library, e.g. `libcufile.so.0`.
 * @param mode the `dlopen` flags.
 * @return the library's handle, never null.
 * @throws std::runtime_error naming the library and `dlerror()` if it cannot be loaded.
 */
void* load_library(std::string const& name, int mode = RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);

/**
 * @brief Looks up `name` in a library loaded by load_library() and stores it in `handle`.
 * @tparam T a function-pointer type.
 * @param handle where the symbol's address is stored.
 * @param lib the library's handle.
 * @param name the symbol.
 * @throws std::runtime_error with `dlerror()`'s text if the library lacks the symbol.
 */
template <typename T>
void get_symbol(T& handle, void* lib, std::string const& name)
{
  ::dlerror();  // a stale error would otherwise be taken for this lookup's
  handle          = reinterpret_cast<T>(::dlsym(lib, name.c_str()));
  char const* err = ::dlerror();
  if (err != nullptr) { throw std::runtime_error(err); }
}

/// @brief Whether this process runs under Windows Subsystem for Linux (no cuFile there).
[[nodiscard]] bool is_running_in_wsl() noexcept;

/// @brief Whether `/run/udev` is readable, which cuFile needs to find devices.
[[nodiscard]] bool run_udev_readable() noexcept;

}  // namespace kvikio
