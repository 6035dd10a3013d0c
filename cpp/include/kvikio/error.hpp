/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file error.hpp
 * @brief Exception types and the checking macros used throughout KvikIO.
 *
 * Every message produced by these macros begins with
 * `KvikIO failure at: <file>:<line>: ` so that a user can find the failing check.
 */

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include <cuda.h>

#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/**
 * @brief Error raised by a failing CUDA driver or cuFile call, or by a failed check.
 *
 * It is a `std::runtime_error`, so Python maps it to `RuntimeError`.
 */
struct CUfileException : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/**
 * @brief Error raised by a failing system call; keeps the `errno` it failed with.
 *
 * `code().value()` is the errno and `what()` contains its text.
 */
class GenericSystemError : public std::system_error {
 public:
  /// @brief Uses the current value of `errno`.
  GenericSystemError(std::string const& msg);  // NOLINT(google-explicit-constructor): upstream's
  /// @brief Uses the current value of `errno`.
  GenericSystemError(char const* msg);  // NOLINT(google-explicit-constructor): upstream's
  /// @brief Uses the given errno value.
  GenericSystemError(int err, std::string const& msg);
  /// @brief Uses the given errno value.
  GenericSystemError(int err, char const* msg);
};

namespace detail {

/**
 * @brief A read that reached the end of the file before its last byte; a `CUfileException`,
 * as upstream throws there ("POSIX error on pread: EOF"), of its own type so that callers can
 * tell it apart.
 */
struct EndOfFileError : public CUfileException {
  using CUfileException::CUfileException;
};

/// @brief Prefix of every KvikIO error message: "KvikIO failure at: <file>:<line>: ".
std::string failure_location(char const* file, int line);

/**
 * @brief Describes a CUDA driver result as "CUDA_ERROR_X (description)".
 *
 * Never throws; works without a loaded driver (then only the number is shown).
 */
std::string cuda_error_description(CUresult result) noexcept;

/**
 * @brief Throws the exception for a failed CUDA driver call.
 *
 * A stub driver (`CUDA_ERROR_STUB_LIBRARY`) gets a message saying that the real driver is missing.
 */
template <typename Exception>
[[noreturn]] void throw_cuda_error(CUresult result, char const* call, char const* file, int line)
{
  throw Exception{failure_location(file, line) + cuda_error_description(result) + " in " + call};
}

/// @brief Text of a cuFile error (`CUfileOpError` value) and, if any, its CUDA cause.
std::string cufile_error_description(int cufile_err, CUresult cu_err) noexcept;

/// @brief Throws `GenericSystemError` for `errno` with the call site and an optional message.
[[noreturn]] void throw_system_error(int err,
                                     char const* file,
                                     int line,
                                     std::string const& msg = {});

/// @brief Text of the error a cuFile read or write reported as a negative byte count.
std::string bytes_done_error_description(long err) noexcept;

/**
 * @brief Throws `Exception` for a negative byte count returned by a cuFile read or write: the
 * text of the cuFile error (`-nbytes_done` above `CUFILEOP_BASE_ERR`) or of the errno.
 */
template <typename Exception>
void check_bytes_done(long nbytes_done, char const* file, int line)
{
  if (nbytes_done >= 0) { return; }
  throw Exception{failure_location(file, line) + bytes_done_error_description(-nbytes_done)};
}

}  // namespace detail
}  // namespace kvikio

// Selects a checking macro's form by its number of arguments.
#define KVIKIO_VA_SELECT_3(_1, _2, _3, NAME, ...) NAME
#define KVIKIO_VA_SELECT_2(_1, _2, NAME, ...) NAME

/**
 * @brief Throws `exception_type` (default `kvikio::CUfileException`) with `msg` unless `condition`.
 *
 * Usage: `KVIKIO_EXPECT(n > 0, "size must be positive", std::invalid_argument);`
 */
#define KVIKIO_EXPECT(...) \
  KVIKIO_VA_SELECT_3(__VA_ARGS__, KVIKIO_EXPECT_3, KVIKIO_EXPECT_2, )(__VA_ARGS__)
#define KVIKIO_EXPECT_2(condition, msg) KVIKIO_EXPECT_3(condition, msg, kvikio::CUfileException)
#define KVIKIO_EXPECT_3(condition, msg, exception_type)                                   \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      throw exception_type{kvikio::detail::failure_location(__FILE__, __LINE__) + (msg)}; \
    }                                                                                     \
  } while (0)

/**
 * @brief Throws `exception_type` (default `kvikio::CUfileException`) with `msg`.
 */
#define KVIKIO_FAIL(...) KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_FAIL_2, KVIKIO_FAIL_1)(__VA_ARGS__)
#define KVIKIO_FAIL_1(msg) KVIKIO_FAIL_2(msg, kvikio::CUfileException)
#define KVIKIO_FAIL_2(msg, exception_type) \
  throw exception_type { kvikio::detail::failure_location(__FILE__, __LINE__) + (msg) }

/**
 * @brief Evaluates a CUDA driver call and throws `exception_type` (default
 * `kvikio::CUfileException`) naming the error and the call unless it returned `CUDA_SUCCESS`.
 */
#define KVIKIO_CUDA_DRIVER_TRY(...) \
  KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_CUDA_DRIVER_TRY_2, KVIKIO_CUDA_DRIVER_TRY_1)(__VA_ARGS__)
#define KVIKIO_CUDA_DRIVER_TRY_1(call) KVIKIO_CUDA_DRIVER_TRY_2(call, kvikio::CUfileException)
#define KVIKIO_CUDA_DRIVER_TRY_2(call, exception_type)  \
  do {                                                  \
    CUresult const kvikio_cu_result_ = (call);          \
    if (kvikio_cu_result_ != CUDA_SUCCESS) {            \
      kvikio::detail::throw_cuda_error<exception_type>( \
        kvikio_cu_result_, #call, __FILE__, __LINE__);  \
    }                                                   \
  } while (0)

/**
 * @brief Evaluates a cuFile call returning `CUfileError_t` and throws `exception_type` (default
 * `kvikio::CUfileException`) naming the cuFile error (and its CUDA cause) unless it succeeded.
 */
#define KVIKIO_CUFILE_TRY(...) \
  KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_CUFILE_TRY_2, KVIKIO_CUFILE_TRY_1)(__VA_ARGS__)
#define KVIKIO_CUFILE_TRY_1(call) KVIKIO_CUFILE_TRY_2(call, kvikio::CUfileException)
#define KVIKIO_CUFILE_TRY_2(call, exception_type)                                       \
  do {                                                                                  \
    auto const kvikio_cufile_result_ = (call);                                          \
    if (kvikio_cufile_result_.err != 0) {                                               \
      throw exception_type{kvikio::detail::failure_location(__FILE__, __LINE__) +       \
                           kvikio::detail::cufile_error_description(                    \
                             kvikio_cufile_result_.err, kvikio_cufile_result_.cu_err) + \
                           " in " #call};                                               \
    }                                                                                   \
  } while (0)

/**
 * @brief Throws `exception_type` (default `kvikio::CUfileException`) if the byte count a cuFile
 * read or write returned is negative (an error), naming the error.
 */
#define KVIKIO_CUFILE_CHECK_BYTES_DONE(...)                                          \
  KVIKIO_VA_SELECT_2(                                                                \
    __VA_ARGS__, KVIKIO_CUFILE_CHECK_BYTES_DONE_2, KVIKIO_CUFILE_CHECK_BYTES_DONE_1) \
  (__VA_ARGS__)
#define KVIKIO_CUFILE_CHECK_BYTES_DONE_1(nbytes_done) \
  KVIKIO_CUFILE_CHECK_BYTES_DONE_2(nbytes_done, kvikio::CUfileException)
#define KVIKIO_CUFILE_CHECK_BYTES_DONE_2(nbytes_done, exception_type) \
  kvikio::detail::check_bytes_done<exception_type>(                   \
    static_cast<long>(nbytes_done), __FILE__, __LINE__)

/**
 * @brief Throws `kvikio::GenericSystemError` with the current errno if `return_value` equals the
 * error value (-1 unless a third argument gives another).
 *
 * An optional second argument adds context to the message (for example the path).
 */
#define KVIKIO_SYSCALL_CHECK(...)                                                        \
  KVIKIO_VA_SELECT_3(                                                                    \
    __VA_ARGS__, KVIKIO_SYSCALL_CHECK_3, KVIKIO_SYSCALL_CHECK_2, KVIKIO_SYSCALL_CHECK_1) \
  (__VA_ARGS__)
#define KVIKIO_SYSCALL_CHECK_1(return_value) KVIKIO_SYSCALL_CHECK_3(return_value, std::string{}, -1)
#define KVIKIO_SYSCALL_CHECK_2(return_value, msg) KVIKIO_SYSCALL_CHECK_3(return_value, msg, -1)
#define KVIKIO_SYSCALL_CHECK_3(return_value, msg, error_value)              \
  do {                                                                      \
    if ((return_value) == (error_value)) {                                  \
      kvikio::detail::throw_system_error(errno, __FILE__, __LINE__, (msg)); \
    }                                                                       \
  } while (0)
