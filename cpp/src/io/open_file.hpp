/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * Opening a local file the way every handle of io/ does (FileHandle, MmapHandle, open_fd).
 */
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace kvikio::detail {

/**
 * @brief Refuses a path with an embedded NUL byte, which the kernel would cut there (and so
 * name another file). @throws std::invalid_argument beginning with `what`, the path shown
 * with the NUL spelled `\0`.
 */
void check_path(std::string const& file_path, std::string_view what);

/**
 * @brief `open(2)` of a regular file or block device, never waiting (a FIFO is refused, not
 * waited on). @param flags the caller's flag string, for messages.
 * @throws std::invalid_argument for a NUL in the path; kvikio::GenericSystemError "Unable to
 * open file" with errno (EISDIR for a directory, ESPIPE for a FIFO, socket or character device).
 */
int open_regular_file(std::string const& file_path,
                      int oflags,
                      mode_t mode,
                      std::string const& flags);

/**
 * @brief A second descriptor, with `oflags`, of the very file `fd` is open on (through
 * `/proc/self/fd`), whatever `file_path` names by now: a file replaced by a rename between two
 * opens of its path would leave a handle on two files. Without `/proc`, `file_path` is opened
 * and must still name that file.
 * @throws kvikio::GenericSystemError if the open fails; std::runtime_error naming the path if
 * it names another file than `fd`'s.
 */
int reopen_regular_file(int fd, std::string const& file_path, int oflags, std::string const& flags);

}  // namespace kvikio::detail
