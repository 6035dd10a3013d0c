/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

#include <pybind11/pybind11.h>

/**
 * @brief Adds `kvikio._lib.statistics` to `m`: the C++ Summary and SummaryMonitor of
 * <kvikio/statistics/summary.hpp>, which kvikio/statistics.py wraps as `kvikio.Summary` and
 * `kvikio.SummaryMonitor`.
 */
void bind_statistics(pybind11::module_& m);
