/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file logger_macros.hpp
 * @brief The `KVIKIO_LOG_*` macros: this header includes logger.hpp, which defines them.
 */

#include <kvikio/logger.hpp>
