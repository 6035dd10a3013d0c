# SPDX-License-Identifier: Apache-2.0
"""Memory-mapped reads: :class:`Mmap` copies a mapped file range into host or device memory."""

from __future__ import annotations

import os
import stat
from typing import Optional

from kvikio import _lib
from kvikio._buffers import as_buffer, size_of, unsigned
from kvikio.cufile import IOFuture, complete


class Mmap:
    """A read-only mapping of ``file_path`` (``flags`` must be ``"r"``), from
    ``initial_map_offset`` for ``initial_map_size`` bytes (default: to the end). ``mode``
    (permissions) and ``map_flags`` (``mmap`` flags, default ``MAP_PRIVATE``) as upstream's.

    After ``close()``, ``closed()`` is true, the sizes are 0 and reads raise RuntimeError.
    """

    def __init__(self, file_path: os.PathLike, flags: str = "r",
                 initial_map_size: Optional[int] = None, initial_map_offset: int = 0,
                 mode: int = stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH,
                 map_flags: Optional[int] = None):
        self._handle = _lib.MmapHandle(os.fspath(file_path), flags, initial_map_size,
                                       initial_map_offset, mode, map_flags)

    def initial_map_size(self) -> int:
        return self._handle.initial_map_size()

    def initial_map_offset(self) -> int:
        return self._handle.initial_map_offset()

    def file_size(self) -> int:
        return self._handle.file_size()

    def nbytes(self) -> int:
        return self._handle.nbytes()

    def closed(self) -> bool:
        return self._handle.closed()

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "Mmap":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def read(self, buf, size: int | None = None, offset: int = 0) -> int:
        return complete(self.pread(buf, size, offset))

    def pread(self, buf, size: int | None = None, offset: int = 0,
              task_size: int | None = None) -> IOFuture:
        b = as_buffer(buf, writable=True)
        ts = _lib.defaults.task_size() if task_size is None else unsigned("pread", "task_size",
                                                                          task_size)
        off = unsigned("pread", "offset", offset)
        return IOFuture(self._handle.pread(b.ptr, size_of(b, size, "pread"), off, ts), b)
