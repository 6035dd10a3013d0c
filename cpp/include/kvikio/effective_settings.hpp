/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file effective_settings.hpp
 * @brief What the library does with its settings: each setting's configured value beside the
 * value it acts on (compat mode `AUTO` resolved, the local backend `auto` chose, the staging
 * size in use), with the reason where they differ.
 */

#include <string>
#include <vector>

namespace kvikio {

/// @brief One setting of `kvikio::defaults`: what it is set to and what the library acts on.
struct EffectiveSetting {
  std::string name;        ///< the name `kvikio.defaults.get()` takes, e.g. "compat_mode"
  std::string variable;    ///< its environment variable, e.g. "KVIKIO_COMPAT_MODE"
  std::string configured;  ///< the value now, spelled as the variable takes it, e.g. "AUTO"
  std::string effective;   ///< what the library acts on, e.g. "ON" (POSIX); else `configured`
  std::string why;         ///< why `effective` is what it is, where it differs ("" otherwise)
};

/**
 * @brief Every setting of `kvikio::defaults`, configured and effective, in the order of
 * docs/settings.md's table.
 *
 * Resolving asks what the machine has as opening a file would (GPUDirect Storage, io_uring;
 * cuFile's driver is opened only where nvidia-fs is loaded). Compat mode `AUTO` becomes `ON` or
 * `OFF`; `local_io_backend` is the backend of a large read into host memory by the global pool
 * (`auto` sends writes and reads of one piece through POSIX); `bounce_buffer_size` is the size
 * of the staging slots in use (never below one page's worth of pieces).
 */
[[nodiscard]] std::vector<EffectiveSetting> effective_settings();

/**
 * @brief effective_settings() as text, one setting per line:
 * `name = effective` and, where it differs, `  (configured: value; why)`.
 */
[[nodiscard]] std::string effective_settings_report();

}  // namespace kvikio
