# SPDX-License-Identifier: Apache-2.0
"""Local files: :class:`CuFile`, with the futures it returns."""

from __future__ import annotations

import io
import os
import threading
from typing import Any, Union

from kvikio import _lib
from kvikio._buffers import as_buffer, size_of, stream_handle, unsigned
from kvikio.utils import kvikio_deprecation_notice


# The parameters the parallel calls share, in their docstrings (``_documented``).
_TRANSFER_PARAMETERS = """Parameters
        ----------
        buf
            Host memory (the buffer protocol: NumPy arrays, bytearray, ...) or device memory
            (``__cuda_array_interface__``: CuPy arrays, ...), contiguous.
        size
            The bytes to move, from the start of ``buf``; ``None``: all of ``buf``.
        file_offset
            Where in the file the bytes start.
        task_size
            The size of the tasks the call is cut into (they run on the thread pool at once);
            ``None``: ``kvikio.defaults.get("task_size")``."""


def _documented(doc: str):
    """Sets a function's docstring to ``doc`` with ``{parameters}`` filled in."""

    def apply(function):
        function.__doc__ = doc.format(parameters=_TRANSFER_PARAMETERS)
        return function

    return apply


class IOFuture:
    """The result of a parallel read or write: ``get()`` waits (without the GIL) and returns
    the bytes moved; it may be called again, from any thread. Signal handlers run while it
    waits (within 0.1 s), so Ctrl-C or an alarm interrupts ``get()`` with their exception; the
    operation goes on.

    Dropping it is safe: a future that goes away before its operation ends waits for it first,
    so the buffer it keeps alive outlives the last byte written into (or read from) it. The
    operation's error, if any, is then dropped with it."""

    def __init__(self, future: _lib.Future, keepalive: Any = None):
        self._future = future
        self._keepalive = keepalive  # the buffer must outlive the operation

    def get(self) -> int:
        """Waits for the operation and returns the bytes it moved, or raises its error (a
        RuntimeError: a read past the end of the file, an I/O error). May be called again,
        from any thread."""
        return self._future.get()

    def done(self) -> bool:
        """Whether the operation has ended (``get()`` would not wait)."""
        return self._future.done()

    def __del__(self):
        future = getattr(self, "_future", None)  # absent when __init__ failed
        if future is not None:
            future.wait()  # uninterrupted: the buffer must outlive the operation


# Operations of blocking calls (``read``, ``write``) whose wait a signal handler's exception
# interrupted: kept here, with the buffers they hold, until they end, so that the exception
# reaches the caller at once rather than after the operation (which a stalled server can make
# minutes), and still no byte lands in freed memory. Pruned of ended ones at each addition.
_interrupted: list[IOFuture] = []
_interrupted_lock = threading.Lock()


def complete(future: IOFuture) -> int:
    """``future.get()`` for a blocking call: a signal handler's exception (Ctrl-C, an alarm)
    ends the call at once, leaving the operation to finish in the background."""
    try:
        return future.get()
    except BaseException:
        if not future.done():
            with _interrupted_lock:
                _interrupted[:] = [f for f in _interrupted if not f.done()]
                _interrupted.append(future)
        raise


class IOFutureStream:
    """A stream-ordered operation: it happens on its stream; ``check_bytes_done()``
    synchronises the stream and returns the bytes moved (or raises the operation's error).

    Dropping it leaves the operation on its stream: memory freed through a stream-ordered
    allocator (CuPy's, PyTorch's) or ``cuMemFree`` is reused only after it."""

    def __init__(self, future: _lib.StreamFuture, keepalive: Any = None):
        self._future = future
        self._keepalive = keepalive

    def check_bytes_done(self) -> int:
        """Synchronises the stream and returns the bytes the operation moved, or raises its
        error."""
        return self._future.check_bytes_done()


class CuFile:
    """A file opened for I/O into host or device memory.

    ``flags``: ``"r"``, ``"r+"``, ``"w"`` (create, truncate) or ``"w+"`` (a ``b`` may be
    added). A path with a NUL byte is a ValueError (as ``open()``); a path that cannot be opened
    raises the OSError ``open()`` would (FileNotFoundError, IsADirectoryError, ...), which is a
    RuntimeError too, as upstream raises.

    ``close()`` (and leaving a ``with`` block) waits for the reads and writes still running on
    the file; operations started after it raise RuntimeError.
    """

    def __init__(self, file: str | os.PathLike, flags: str = "r"):
        self._handle = _lib.FileHandle(os.fspath(file), flags)

    def close(self) -> None:
        """Waits for the reads and writes still running on the file, then closes it; later
        calls raise RuntimeError. Closing twice is harmless."""
        self._handle.close()

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._handle.closed()

    def fileno(self) -> int:
        """The file's (buffered) descriptor."""
        return self._handle.fd()

    def open_flags(self) -> int:
        """The ``os.O_*`` flags of that descriptor."""
        return self._handle.fd_open_flags()

    def nbytes(self) -> int:
        """The file's size in bytes, writes through this file included."""
        return self._handle.nbytes()

    def is_direct_io_supported(self) -> bool:
        """Whether the file system gave the file an ``O_DIRECT`` descriptor too."""
        return self._handle.is_direct_io_supported()

    def __enter__(self) -> "CuFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def batch_read(self, ranges, *, coalesce_max_gap: int | None = None,
                   task_size: int | None = None) -> list[IOFuture]:
        """Reads every range ``(buf[, size[, file_offset]])`` of the file; one
        :class:`IOFuture` per range, in order: :func:`kvikio.file_batch_read` (ours)."""
        from kvikio.batch_read import file_batch_read, ranges_of

        return file_batch_read(ranges_of(self, ranges), coalesce_max_gap=coalesce_max_gap,
                               task_size=task_size)

    @_documented("""Reads the file into ``buf`` in parallel tasks; returns at once.

        {parameters}

        Returns
        -------
        IOFuture
            ``get()`` waits and returns the bytes read. The future keeps ``buf`` alive until the
            last byte lands, even if it is dropped.

        Raises
        ------
        TypeError, OverflowError
            ``size``, ``file_offset`` or ``task_size`` is not an integer, or negative.
        ValueError
            ``size`` is larger than ``buf``, or ``buf`` is read-only.
        RuntimeError
            The file is closed (a read's own errors come from ``get()``).

        Examples
        --------
        >>> out = numpy.empty(1 << 20, dtype="u1")
        >>> with kvikio.CuFile(path, "r") as f:
        ...     future = f.pread(out)  # the pool reads while the caller goes on
        ...     nread = future.get()
        """)
    def pread(self, buf, size: int | None = None, file_offset: int = 0,
              task_size: int | None = None) -> IOFuture:
        b = as_buffer(buf, writable=True)
        n = size_of(b, size, "pread")
        ts = _lib.defaults.task_size() if task_size is None else unsigned("pread", "task_size",
                                                                          task_size)
        off = unsigned("pread", "file_offset", file_offset)
        return IOFuture(self._handle.pread(b.ptr, n, off, ts), b)

    @_documented("""Writes ``buf`` to the file in parallel tasks; returns at once.

        {parameters}

        Returns
        -------
        IOFuture
            ``get()`` waits and returns the bytes written (keeping ``buf`` alive until then).

        Raises
        ------
        TypeError, OverflowError, ValueError, RuntimeError
            As :meth:`pread`; a write's own errors (a full disk) come from ``get()``.
        """)
    def pwrite(self, buf, size: int | None = None, file_offset: int = 0,
               task_size: int | None = None) -> IOFuture:
        b = as_buffer(buf, writable=False)
        n = size_of(b, size, "pwrite")
        ts = _lib.defaults.task_size() if task_size is None else unsigned("pwrite", "task_size",
                                                                          task_size)
        off = unsigned("pwrite", "file_offset", file_offset)
        return IOFuture(self._handle.pwrite(b.ptr, n, off, ts), b)

    @_documented("""Reads the file into ``buf`` and waits: ``pread(...).get()``.

        {parameters}

        Returns
        -------
        int
            The bytes read.

        Raises
        ------
        RuntimeError
            The read failed (past the end of the file, an I/O error); also as :meth:`pread`.
        KeyboardInterrupt
            (or a signal handler's exception) within 0.1 s of the signal; the read goes on in
            the background with ``buf``, which the library keeps alive until it ends.
        """)
    def read(self, buf, size: int | None = None, file_offset: int = 0,
             task_size: int | None = None) -> int:
        return complete(self.pread(buf, size, file_offset, task_size))

    @_documented("""Writes ``buf`` to the file and waits: ``pwrite(...).get()``.

        {parameters}

        Returns
        -------
        int
            The bytes written.

        Raises
        ------
        RuntimeError
            The write failed; also as :meth:`pwrite`. Interruptible as :meth:`read`.
        """)
    def write(self, buf, size: int | None = None, file_offset: int = 0,
              task_size: int | None = None) -> int:
        return complete(self.pwrite(buf, size, file_offset, task_size))

    def _async(self, op, buf, stream, size, file_offset, dev_offset, writable) -> IOFutureStream:
        b = as_buffer(buf, writable=writable)
        if not b.is_device:
            raise ValueError("Non-CUDA buffers not supported (stream-ordered I/O needs device "
                             "memory: __cuda_array_interface__)")
        what = "read_async" if writable else "write_async"
        n = size_of(b, size, what)
        dev_offset = unsigned(what, "dev_offset", dev_offset)
        file_offset = unsigned(what, "file_offset", file_offset)
        if dev_offset + n > b.nbytes:
            raise ValueError(f"dev_offset {dev_offset} + size {n} exceed {b.nbytes} bytes")
        return IOFutureStream(op(b.ptr, n, file_offset, dev_offset, stream_handle(stream)), b)

    def read_async(self, buf, stream, size: int | None = None, file_offset: int = 0,
                   dev_offset: int = 0) -> IOFutureStream:
        """Reads into device memory in the order of ``stream``: the bytes are there for the
        work queued on ``stream`` after this call. Returns at once, without waiting for
        earlier work on the stream (upstream's waits).

        Parameters
        ----------
        buf
            Device memory (``__cuda_array_interface__``).
        stream
            A CUDA stream: its handle as an int, an object with ``.ptr`` (CuPy) or one of the
            CUDA stream protocol (``__cuda_stream__``); ``None`` or 0: the legacy default
            stream.
        size, file_offset
            As :meth:`pread`.
        dev_offset
            Where in ``buf`` the bytes go.

        Returns
        -------
        IOFutureStream
            ``check_bytes_done()`` synchronises the stream and returns the bytes read.

        Raises
        ------
        ValueError
            ``buf`` is host memory, or ``dev_offset + size`` exceeds it.
        """
        return self._async(self._handle.read_async, buf, stream, size, file_offset, dev_offset,
                           True)

    def write_async(self, buf, stream, size: int | None = None, file_offset: int = 0,
                    dev_offset: int = 0) -> IOFutureStream:
        """Writes device memory in the order of ``stream`` (after the work queued on it before
        this call); returns at once. Parameters, result and errors as :meth:`read_async`."""
        return self._async(self._handle.write_async, buf, stream, size, file_offset, dev_offset,
                           False)

    def raw_read_async(self, buf, raw_stream, size: int | None = None, file_offset: int = 0,
                       dev_offset: int = 0) -> IOFutureStream:
        """Upstream's name of :meth:`read_async`, its stream argument named ``raw_stream``."""
        return self.read_async(buf, raw_stream, size, file_offset, dev_offset)

    def raw_write_async(self, buf, raw_stream, size: int | None = None, file_offset: int = 0,
                        dev_offset: int = 0) -> IOFutureStream:
        """Upstream's name of :meth:`write_async`, its stream argument named ``raw_stream``."""
        return self.write_async(buf, raw_stream, size, file_offset, dev_offset)

    def raw_read(self, buf, size: int | None = None, file_offset: int = 0,
                 dev_offset: int = 0) -> int:
        """Reads into device memory and waits."""
        return self.read_async(buf, None, size, file_offset, dev_offset).check_bytes_done()

    def raw_write(self, buf, size: int | None = None, file_offset: int = 0,
                  dev_offset: int = 0) -> int:
        """Writes device memory and waits."""
        return self.write_async(buf, None, size, file_offset, dev_offset).check_bytes_done()


def _file_argument(file: Union[os.PathLike, str, int, io.IOBase]) -> Union[str, int]:
    """A path (str) or descriptor (int) for the page-cache functions, from what upstream takes."""
    if isinstance(file, (str, os.PathLike)):
        return os.fsdecode(os.fspath(file))
    if isinstance(file, int):
        return file
    if isinstance(file, io.IOBase):
        return file.fileno()
    raise ValueError("The type of `file` must be `os.PathLike`, `str`, `int`, or `io.IOBase`")


def get_page_cache_info(file: Union[os.PathLike, str, int, io.IOBase], offset: int = 0,
                        length: int = 0) -> tuple[int, int]:
    """(pages of the range in the page cache, pages in the range): the range runs from
    ``offset`` for ``length`` bytes, or to the end of the file if ``length`` is 0."""
    return _lib.get_page_cache_info(_file_argument(file), offset, length)


def drop_file_page_cache(file: Union[os.PathLike, str, int, io.IOBase], offset: int = 0,
                         length: int = 0, sync_first: bool = True) -> None:
    """Drops a file range's pages from the page cache (``posix_fadvise(DONTNEED)``, after
    ``fdatasync`` if ``sync_first``); needs no privilege."""
    _lib.drop_file_page_cache(_file_argument(file), offset, length, sync_first)


def drop_system_page_cache(reclaim_dentries_and_inodes: bool = True,
                           sync_first: bool = True) -> bool:
    """Drops the whole page cache (``vm.drop_caches``: as root, or through ``sudo -n``);
    False if that is not allowed."""
    return _lib.drop_system_page_cache(reclaim_dentries_and_inodes, sync_first)


@kvikio_deprecation_notice("Use :func:`drop_system_page_cache` instead.", since="26.04")
def clear_page_cache(reclaim_dentries_and_inodes: bool = True,
                     clear_dirty_pages: bool = True) -> bool:
    """drop_system_page_cache() under its former name."""
    return drop_system_page_cache(reclaim_dentries_and_inodes, clear_dirty_pages)
