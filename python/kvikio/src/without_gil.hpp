/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <Python.h>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace kvikio_python {

/// Runs `f` without the GIL and takes the GIL back by a plain call, never in a destructor: in a
/// daemon thread, taking it back while the interpreter finalizes ends the thread by pthread_exit,
/// whose unwinding a destructor (noexcept) would turn into std::terminate of the whole process.
/// `f`'s exception is rethrown once the GIL is held again.
template <typename F>
auto without_gil(F&& f)
{
  using R                    = decltype(f());
  PyThreadState* const state = PyEval_SaveThread();
  std::exception_ptr error;
  if constexpr (std::is_void_v<R>) {
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
    PyEval_RestoreThread(state);
    if (error) { std::rethrow_exception(error); }
  } else {
    std::optional<R> result;
    try {
      result.emplace(f());
    } catch (...) {
      error = std::current_exception();
    }
    PyEval_RestoreThread(state);
    if (error) { std::rethrow_exception(error); }
    return std::move(*result);
  }
}

}  // namespace kvikio_python
