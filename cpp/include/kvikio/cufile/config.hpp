/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file cufile/config.hpp
 * @brief Where cuFile's configuration file is.
 */

#include <kvikio/utils.hpp>
#include <string>

namespace kvikio {

/**
 * @brief The path of cuFile's configuration file: `CUFILE_ENV_PATH_JSON` if that file exists,
 * else `/etc/cufile.json` if it exists, else "" (decided once per process).
 */
[[nodiscard]] std::string const& config_path();

}  // namespace kvikio
