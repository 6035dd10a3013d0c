/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file logger.hpp
 * @brief KvikIO's log macros, `KVIKIO_LOG_TRACE` ... `KVIKIO_LOG_CRITICAL`.
 *
 * Each takes a message: a format string with `{}` placeholders and its arguments, or pieces to
 * concatenate. Lines go to stderr or `KVIKIO_LOG_FILE` at `KVIKIO_LOG_LEVEL` or above
 * (docs/settings.md).
 */

#include <kvikio/detail/logger.hpp>
#include <kvikio/shim/utils.hpp>
