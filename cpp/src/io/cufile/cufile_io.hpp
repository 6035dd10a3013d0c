/*
 * SPDX-License-Identifier: Apache-2.0
 */
#pragma once

/**
 * @file io/cufile/cufile_io.hpp
 * @brief Device memory through `cuFileRead`/`cuFileWrite` of a file's registered handle
 * (LocalFile::cufile), one request per range: with GPUDirect Storage the DMA needs no staging.
 */

#include <cstddef>

#include "io/mover/mover.hpp"

namespace kvikio::detail {

/**
 * @brief Reads (`read`) or writes exactly `size` bytes at `file_offset` of `file` into or from
 * `base + base_offset` (`base`: the allocation cuFile knows, in the current context).
 * @throws kvikio::detail::EndOfFileError for a short transfer; kvikio::CUfileException for a
 * cuFile error; kvikio::GenericSystemError for a system one.
 */
std::size_t cufile_transfer(bool read,
                            LocalFile const& file,
                            void* base,
                            std::size_t base_offset,
                            std::size_t size,
                            std::size_t file_offset);

}  // namespace kvikio::detail
