# SPDX-License-Identifier: Apache-2.0
"""Local files: :class:`CuFile`, with the futures it returns."""

from __future__ import annotations

import os
from typing import Any

from kvikio import _lib
from kvikio._buffers import as_buffer, size_of, stream_handle


class IOFuture:
    """The result of a parallel read or write: ``get()`` waits (without the GIL) and returns
    the bytes moved; it may be called again, from any thread."""

    def __init__(self, future: _lib.Future, keepalive: Any = None):
        self._future = future
        self._keepalive = keepalive  # the buffer must outlive the operation

    def get(self) -> int:
        return self._future.get()

    def done(self) -> bool:
        return self._future.done()


class IOFutureStream:
    """A stream-ordered operation: it happens on its stream; ``check_bytes_done()``
    synchronises the stream and returns the bytes moved (or raises the operation's error)."""

    def __init__(self, future: _lib.StreamFuture, keepalive: Any = None):
        self._future = future
        self._keepalive = keepalive

    def check_bytes_done(self) -> int:
        return self._future.check_bytes_done()


class CuFile:
    """A file opened for I/O into host or device memory.

    ``flags``: ``"r"``, ``"r+"``, ``"w"`` (create, truncate) or ``"w+"``.
    """

    def __init__(self, file: str | os.PathLike, flags: str = "r"):
        self._handle = _lib.FileHandle(os.fspath(file), flags)

    def close(self) -> None:
        self._handle.close()

    @property
    def closed(self) -> bool:
        return self._handle.closed()

    def fileno(self) -> int:
        return self._handle.fd()

    def open_flags(self) -> int:
        return self._handle.fd_open_flags()

    def nbytes(self) -> int:
        return self._handle.nbytes()

    def is_direct_io_supported(self) -> bool:
        return self._handle.is_direct_io_supported()

    def __enter__(self) -> "CuFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def pread(self, buf, size: int | None = None, file_offset: int = 0,
              task_size: int | None = None) -> IOFuture:
        """Reads into ``buf`` in parallel tasks; returns at once."""
        b = as_buffer(buf, writable=True)
        n = size_of(b, size, "pread")
        ts = task_size if task_size is not None else _lib.defaults.task_size()
        return IOFuture(self._handle.pread(b.ptr, n, file_offset, ts), b)

    def pwrite(self, buf, size: int | None = None, file_offset: int = 0,
               task_size: int | None = None) -> IOFuture:
        """Writes ``buf`` in parallel tasks; returns at once."""
        b = as_buffer(buf, writable=False)
        n = size_of(b, size, "pwrite")
        ts = task_size if task_size is not None else _lib.defaults.task_size()
        return IOFuture(self._handle.pwrite(b.ptr, n, file_offset, ts), b)

    def read(self, buf, size: int | None = None, file_offset: int = 0,
             task_size: int | None = None) -> int:
        return self.pread(buf, size, file_offset, task_size).get()

    def write(self, buf, size: int | None = None, file_offset: int = 0,
              task_size: int | None = None) -> int:
        return self.pwrite(buf, size, file_offset, task_size).get()

    def _async(self, op, buf, stream, size, file_offset, dev_offset, writable) -> IOFutureStream:
        b = as_buffer(buf, writable=writable)
        if not b.is_device:
            raise ValueError("stream-ordered I/O needs device memory (__cuda_array_interface__)")
        n = size_of(b, size, "read_async" if writable else "write_async")
        if dev_offset < 0 or dev_offset + n > b.nbytes:
            raise ValueError(f"dev_offset {dev_offset} + size {n} exceed {b.nbytes} bytes")
        return IOFutureStream(op(b.ptr, n, file_offset, dev_offset, stream_handle(stream)), b)

    def read_async(self, buf, stream, size: int | None = None, file_offset: int = 0,
                   dev_offset: int = 0) -> IOFutureStream:
        """Reads into device memory in the order of ``stream``; returns at once, without
        waiting for earlier work on the stream (ours: upstream's waits)."""
        return self._async(self._handle.read_async, buf, stream, size, file_offset, dev_offset,
                           True)

    def write_async(self, buf, stream, size: int | None = None, file_offset: int = 0,
                    dev_offset: int = 0) -> IOFutureStream:
        """Writes device memory in the order of ``stream``; returns at once."""
        return self._async(self._handle.write_async, buf, stream, size, file_offset, dev_offset,
                           False)

    # Upstream's names for the same stream-ordered calls.
    raw_read_async = read_async
    raw_write_async = write_async

    def raw_read(self, buf, size: int | None = None, file_offset: int = 0,
                 dev_offset: int = 0) -> int:
        """Reads into device memory and waits."""
        return self.read_async(buf, None, size, file_offset, dev_offset).check_bytes_done()

    def raw_write(self, buf, size: int | None = None, file_offset: int = 0,
                  dev_offset: int = 0) -> int:
        """Writes device memory and waits."""
        return self.write_async(buf, None, size, file_offset, dev_offset).check_bytes_done()
