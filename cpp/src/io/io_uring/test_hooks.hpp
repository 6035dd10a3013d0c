/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file io/io_uring/test_hooks.hpp
 * @brief What only tests call: a refused io_uring_setup and injected completions, so that the
 * fallbacks and retries of the io_uring mover can be checked on any kernel.
 */

namespace kvikio::detail {

/**
 * @brief Makes the probe and the rings of threads that have none yet fail with `errno_value`
 * as `io_uring_setup` would (0: the real call); `forget_probe`: probe again.
 */
void override_io_uring_setup(int errno_value, bool forget_probe = true) noexcept;

/**
 * @brief A completion to inject in place of what the kernel reported, for every
 * `every`-th request of the process from now on (0: none). The kernel did move the bytes; the
 * engine is told otherwise, as it would be by a real short transfer, an interrupted request or a
 * failed one.
 */
struct IoUringFault {
  enum class Kind { none, short_transfer, eintr, eagain, cancelled, error };
  Kind kind{Kind::none};
  unsigned every{0};
  int error{0};  ///< for Kind::error: the errno the request fails with
};
void inject_io_uring_fault(IoUringFault fault) noexcept;

}  // namespace kvikio::detail
