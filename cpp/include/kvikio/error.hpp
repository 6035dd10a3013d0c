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

#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <cuda.h>

#include <kvikio/shim/cuda.hpp>
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
  GenericSystemError(std::string const& msg);  // NOLINT(google-explicit-constructor): public API
  /// @brief Uses the current value of `errno`.
  GenericSystemError(char const* msg);  // NOLINT(google-explicit-constructor): public API
  /// @brief Uses the given errno value.
  GenericSystemError(int err, std::string const& msg);
  /// @brief Uses the given errno value.
  GenericSystemError(int err, char const* msg);
};

namespace detail {

/**
 * @brief A read that reached the end of the file before its last byte: a `CUfileException`
 * ("POSIX error on pread: EOF"), which is what callers catch, in a type of its own so that
 * callers can also tell it apart.
 */
struct EndOfFileError : public CUfileException {
  using CUfileException::CUfileException;
};

/// @brief Prefix of `KVIKIO_EXPECT`/`KVIKIO_FAIL` messages: "KvikIO failure at: <file>:<line>: ".
std::string failure_location(char const* file, int line);

/**
 * @brief Describes a CUDA driver result as "CUDA_ERROR_X(description)".
 *
 * Never throws; works without a loaded driver (then only the number is shown).
 */
std::string cuda_error_description(CUresult result) noexcept;

/// @brief "CUDA error at: <file>:<line>: CUDA_ERROR_X(description)".
std::string cuda_error_message(CUresult result, char const* file, int line);

/**
 * @brief The message of a failed cuFile call: a CUDA driver cause as `cuda_error_message()`
 * words it, otherwise "cuFile error at: <file>:<line>: " and the status's text.
 */
std::string cufile_error_message(CUfileError_t error, char const* file, int line);

/// @brief Text of a cuFile status (`CUfileOpError` value) and, if any, its CUDA cause.
std::string cufile_error_description(int cufile_err, CUresult cu_err) noexcept;

/**
 * @brief Throws `GenericSystemError` for `err`: "<msg> Linux system/library function call error
 * at: <file>:<line>", to which `what()` adds the errno's text.
 */
[[noreturn]] void throw_system_error(int err,
                                     char const* file,
                                     int line,
                                     std::string_view msg = {});

/**
 * @brief "cuFile error at: <file>:<line>: " and the text of the error a cuFile read or write
 * reported as a negative byte count `-err`: a cuFile status above `CUFILEOP_BASE_ERR`, else an
 * errno.
 */
std::string bytes_done_error_message(long err, char const* file, int line);

/**
 * @brief Throws `Exception` with "KvikIO failure at: <file>:<line>: " and the message
 * `msg_func()` returns ("(no message)" when empty): what `KVIKIO_FAIL` throws.
 */
template <typename Exception, typename MsgFunc>
[[noreturn]] void kvikio_fail(MsgFunc&& msg_func, int line_number, char const* filename)
{
  std::string const msg = std::forward<MsgFunc>(msg_func)();
  throw Exception{failure_location(filename, line_number) + (msg.empty() ? "(no message)" : msg)};
}

/**
 * @brief Throws `Exception` ("CUDA error at: ...") unless `error` is `CUDA_SUCCESS`.
 */
template <typename Exception>
void cuda_driver_try(CUresult error, int line_number, char const* filename)
{
  if (error != CUDA_SUCCESS) { throw Exception{cuda_error_message(error, filename, line_number)}; }
}

/**
 * @brief Throws `Exception` unless the cuFile call succeeded; a CUDA driver cause is reported as
 * `cuda_driver_try()` reports it.
 */
template <typename Exception>
void cufile_try(CUfileError_t error, int line_number, char const* filename)
{
  if (error.err != CU_FILE_SUCCESS) {
    throw Exception{cufile_error_message(error, filename, line_number)};
  }
}

/**
 * @brief Throws `Exception` ("cuFile error at: ...") for a negative byte count returned by a
 * cuFile read or write: the text of the cuFile status (`-nbytes_done` above `CUFILEOP_BASE_ERR`)
 * or of the errno.
 */
template <typename Exception>
void cufile_check_bytes_done(ssize_t nbytes_done, int line_number, char const* filename)
{
  if (nbytes_done >= 0) { return; }
  throw Exception{bytes_done_error_message(static_cast<long>(-nbytes_done), filename, line_number)};
}

/// @brief Throws `GenericSystemError` for the current errno (see `throw_system_error()`).
[[noreturn]] void handle_linux_call_error(int line_number,
                                          char const* filename,
                                          std::string_view extra_msg);

/// @brief Throws `GenericSystemError` for the current errno if `return_value == error_value`.
inline void check_linux_call(long return_value,
                             int line_number,
                             char const* filename,
                             std::string_view extra_msg = "",
                             long error_value           = -1)
{
  if (return_value == error_value) { handle_linux_call_error(line_number, filename, extra_msg); }
}

/// @brief As above, for results that are not integers (`MAP_FAILED` of `mmap()`).
template <typename T>
void check_linux_call(
  T return_value, int line_number, char const* filename, std::string_view extra_msg, T error_value)
{
  if (return_value == error_value) { handle_linux_call_error(line_number, filename, extra_msg); }
}

}  // namespace detail
}  // namespace kvikio

// Selects a checking macro's form by its number of arguments.
#define KVIKIO_VA_SELECT_3(_1, _2, _3, NAME, ...) NAME
#define KVIKIO_VA_SELECT_2(_1, _2, NAME, ...) NAME

/**
 * @brief Throws `exception_type` (default `kvikio::CUfileException`) with `msg` unless `condition`.
 *
 * The message starts "KvikIO failure at: <file>:<line>: ".
 * Usage: `KVIKIO_EXPECT(n > 0, "size must be positive", std::invalid_argument);`
 */
#define KVIKIO_EXPECT(...) \
  KVIKIO_VA_SELECT_3(__VA_ARGS__, KVIKIO_EXPECT_3, KVIKIO_EXPECT_2, )(__VA_ARGS__)
#define KVIKIO_EXPECT_2(condition, msg) KVIKIO_EXPECT_3(condition, msg, kvikio::CUfileException)
#define KVIKIO_EXPECT_3(condition, msg, exception_type)                         \
  do {                                                                          \
    if (!(condition)) {                                                         \
      kvikio::detail::kvikio_fail<exception_type>(                              \
        [&]() -> std::string { return std::string{msg}; }, __LINE__, __FILE__); \
    }                                                                           \
  } while (0)

/**
 * @brief Throws `exception_type` (default `kvikio::CUfileException`) with `msg`.
 */
#define KVIKIO_FAIL(...) KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_FAIL_2, KVIKIO_FAIL_1)(__VA_ARGS__)
#define KVIKIO_FAIL_1(msg) KVIKIO_FAIL_2(msg, kvikio::CUfileException)
#define KVIKIO_FAIL_2(msg, exception_type)     \
  kvikio::detail::kvikio_fail<exception_type>( \
    [&]() -> std::string { return std::string{msg}; }, __LINE__, __FILE__)

/**
 * @brief Evaluates a CUDA driver call and throws `exception_type` (default
 * `kvikio::CUfileException`) unless it returned `CUDA_SUCCESS`: "CUDA error at: <file>:<line>:
 * CUDA_ERROR_X(description)", then " in <call>".
 */
#define KVIKIO_CUDA_DRIVER_TRY(...) \
  KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_CUDA_DRIVER_TRY_2, KVIKIO_CUDA_DRIVER_TRY_1)(__VA_ARGS__)
#define KVIKIO_CUDA_DRIVER_TRY_1(call) KVIKIO_CUDA_DRIVER_TRY_2(call, kvikio::CUfileException)
#define KVIKIO_CUDA_DRIVER_TRY_2(call, exception_type)                                             \
  do {                                                                                             \
    CUresult const kvikio_cu_result_ = (call);                                                     \
    if (kvikio_cu_result_ != CUDA_SUCCESS) {                                                       \
      throw exception_type{                                                                        \
        kvikio::detail::cuda_error_message(kvikio_cu_result_, __FILE__, __LINE__) + " in " #call}; \
    }                                                                                              \
  } while (0)

/**
 * @brief Evaluates a cuFile call returning `CUfileError_t` and throws `exception_type` (default
 * `kvikio::CUfileException`) unless it succeeded: "cuFile error at: <file>:<line>: " and the
 * status's text (or the CUDA error, as `KVIKIO_CUDA_DRIVER_TRY` words it), then " in <call>".
 */
#define KVIKIO_CUFILE_TRY(...) \
  KVIKIO_VA_SELECT_2(__VA_ARGS__, KVIKIO_CUFILE_TRY_2, KVIKIO_CUFILE_TRY_1)(__VA_ARGS__)
#define KVIKIO_CUFILE_TRY_1(call) KVIKIO_CUFILE_TRY_2(call, kvikio::CUfileException)
#define KVIKIO_CUFILE_TRY_2(call, exception_type)                                         \
  do {                                                                                    \
    CUfileError_t const kvikio_cufile_result_ = (call);                                   \
    if (kvikio_cufile_result_.err != CU_FILE_SUCCESS) {                                   \
      throw exception_type{                                                               \
        kvikio::detail::cufile_error_message(kvikio_cufile_result_, __FILE__, __LINE__) + \
        " in " #call};                                                                    \
    }                                                                                     \
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
  kvikio::detail::cufile_check_bytes_done<exception_type>(            \
    static_cast<ssize_t>(nbytes_done), __LINE__, __FILE__)

/**
 * @brief Throws `kvikio::GenericSystemError` with the current errno if `return_value` equals the
 * error value (-1 unless a third argument gives another).
 *
 * An optional second argument starts the message (for example the call and its path); then
 * "Linux system/library function call error at: <file>:<line>" and the errno's text.
 */
#define KVIKIO_SYSCALL_CHECK(...)                                                        \
  KVIKIO_VA_SELECT_3(                                                                    \
    __VA_ARGS__, KVIKIO_SYSCALL_CHECK_3, KVIKIO_SYSCALL_CHECK_2, KVIKIO_SYSCALL_CHECK_1) \
  (__VA_ARGS__)
#define KVIKIO_SYSCALL_CHECK_1(return_value) \
  kvikio::detail::check_linux_call(return_value, __LINE__, __FILE__)
#define KVIKIO_SYSCALL_CHECK_2(return_value, msg) \
  kvikio::detail::check_linux_call(return_value, __LINE__, __FILE__, msg)
#define KVIKIO_SYSCALL_CHECK_3(return_value, msg, error_value) \
  kvikio::detail::check_linux_call(return_value, __LINE__, __FILE__, msg, error_value)
