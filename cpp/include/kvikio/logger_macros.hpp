/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file logger_macros.hpp
 * @brief Upstream's header of the `KVIKIO_LOG_*` macros; here they are those of logger.hpp.
 */

#include <kvikio/logger.hpp>
