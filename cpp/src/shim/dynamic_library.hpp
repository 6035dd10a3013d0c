/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <string>

namespace kvikio::detail {

/**
 * @brief A shared library opened with `dlopen` whose symbols are looked up by name.
 *
 * The handle is never closed: the driver tables built from it live until the process exits,
 * and unloading a CUDA driver while other libraries hold its resources is unsafe.
 */
class DynamicLibrary {
 public:
  /**
   * @brief Opens `name` (searched as `dlopen` does: LD_LIBRARY_PATH, then the loader cache).
   * @throws std::runtime_error with `dlerror()`'s text if it cannot be opened.
   */
  explicit DynamicLibrary(std::string name);

  /**
   * @brief Resolves `symbol` into `function`.
   * @throws std::runtime_error naming the symbol and the library if it is missing.
   */
  template <typename F>
  void resolve(F& function, char const* symbol) const
  {
    function = reinterpret_cast<F>(lookup(symbol));
  }

  /// @brief The address of `symbol` as an `F`, or null if the library lacks it.
  template <typename F>
  [[nodiscard]] F find(char const* symbol) const noexcept
  {
    return reinterpret_cast<F>(try_lookup(symbol));
  }

  [[nodiscard]] std::string const& name() const noexcept { return name_; }

 private:
  [[nodiscard]] void* lookup(char const* symbol) const;
  [[nodiscard]] void* try_lookup(char const* symbol) const noexcept;

  std::string name_;
  void* handle_{nullptr};
};

}  // namespace kvikio::detail
