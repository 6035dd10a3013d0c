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
        """Maps ``file_path`` for reading.

        Parameters
        ----------
        file_path
            The file.
        flags
            ``"r"`` (the mapping is read-only).
        initial_map_size, initial_map_offset
            The part of the file mapped now; ``None``: from the offset to the end. Reads
            outside it map what they need.
        mode
            Permissions, used as upstream's (the file is not created).
        map_flags
            ``mmap`` flags: ``MAP_SHARED`` or ``MAP_PRIVATE`` (default), with any of
            ``MAP_POPULATE``, ``MAP_NORESERVE``, ``MAP_LOCKED``, ``MAP_NONBLOCK``.

        Raises
        ------
        OSError
            The file cannot be opened or mapped, or ``map_flags`` has another flag (EINVAL).
        IndexError
            ``initial_map_offset`` or ``initial_map_size`` reaches past the end of the file
            (upstream's ``std::out_of_range``).
        """
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
        """Copies ``size`` bytes of the file from ``offset`` into ``buf`` (host or device
        memory; ``None``: all of ``buf``) and returns the bytes read; ``pread(...).get()``."""
        return complete(self.pread(buf, size, offset))

    def pread(self, buf, size: int | None = None, offset: int = 0,
              task_size: int | None = None) -> IOFuture:
        """As :meth:`read`, in parallel tasks of ``task_size`` on the thread pool; returns at
        once an :class:`IOFuture` whose ``get()`` returns the bytes read."""
        b = as_buffer(buf, writable=True)
        ts = _lib.defaults.task_size() if task_size is None else unsigned("pread", "task_size",
                                                                          task_size)
        off = unsigned("pread", "offset", offset)
        return IOFuture(self._handle.pread(b.ptr, size_of(b, size, "pread"), off, ts), b)
