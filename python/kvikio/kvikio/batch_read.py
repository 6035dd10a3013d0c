# SPDX-License-Identifier: Apache-2.0
"""Batch reads: many ranges of one or several files or remote objects, into host or device
memory, in one call that returns one :class:`~kvikio.IOFuture` per range in the caller's order.

Ranges of the same file and the same kind of destination (host memory, or one GPU's memory)
that lie at most ``coalesce_max_gap`` bytes apart are read as one transfer while the merged span
fits in ``task_size`` (``None``: :func:`kvikio.defaults.task_size`); the bytes between them are
read and dropped, never written anywhere. ``coalesce_max_gap=None`` (the default) merges nothing.
A failed transfer fails exactly the ranges it served: each future raises its own error.
"""

from __future__ import annotations

from typing import Any, Iterable

from kvikio import _lib
from kvikio._buffers import as_buffer, size_of, unsigned
from kvikio.cufile import CuFile, IOFuture


def _run(call, what: str, kind: type, requests: Iterable[tuple], coalesce_max_gap, task_size):
    handles, bufs, sizes, offsets, keep = [], [], [], [], []
    for i, request in enumerate(requests):
        if not isinstance(request, tuple) or not 2 <= len(request) <= 4:
            raise TypeError(f"{what}: request {i} must be a tuple (file, buf[, size[, "
                            f"file_offset]]), got {request!r}")
        file, buf, *rest = request
        if not isinstance(file, kind):
            raise TypeError(f"{what}: request {i} names a {type(file).__name__}, not a "
                            f"{kind.__name__}")
        which = f"{what} request {i}"
        b = as_buffer(buf, writable=True)
        handles.append(file._handle)
        bufs.append(b.ptr)
        sizes.append(size_of(b, rest[0] if rest else None, which))
        offsets.append(unsigned(which, "file_offset", rest[1] if len(rest) > 1 else 0))
        keep.append(b)
    gap = None if coalesce_max_gap is None else unsigned(what, "coalesce_max_gap",
                                                          coalesce_max_gap)
    ts = None if task_size is None else unsigned(what, "task_size", task_size)
    futures = call(handles, bufs, sizes, offsets, gap, ts)
    return [IOFuture(f, b) for f, b in zip(futures, keep)]


def file_batch_read(requests: Iterable[tuple], *, coalesce_max_gap: int | None = None,
                    task_size: int | None = None) -> list[IOFuture]:
    """Reads every request ``(file, buf[, size[, file_offset]])`` (``file`` a
    :class:`~kvikio.CuFile`; ``size`` ``None``: all of ``buf``) and returns one
    :class:`~kvikio.IOFuture` per request, in order; each keeps its buffer alive.

    Raises TypeError or ValueError for a malformed request (naming its index), OverflowError for
    a negative size or offset or one past the largest file offset, ValueError for a range past
    the end of its file or a ``task_size`` of 0, RuntimeError for a closed file: all before
    anything is read. A read's own errors come from its future's ``get()``.

    >>> futures = kvikio.file_batch_read([(f, a, 4096, 0), (f, b, 4096, 8192)],
    ...                                  coalesce_max_gap=4096)
    >>> sum(x.get() for x in futures)
    8192
    """
    return _run(_lib.file_batch_read, "file_batch_read", CuFile, requests, coalesce_max_gap,
                task_size)


def remote_batch_read(requests: Iterable[tuple], *, coalesce_max_gap: int | None = None,
                      task_size: int | None = None) -> list[IOFuture]:
    """As :func:`file_batch_read` for :class:`~kvikio.RemoteFile` objects: nearby ranges of one
    object become one ranged request (HTTP, S3, presigned URLs, WebHDFS; either transport)."""
    from kvikio.remote_file import RemoteFile

    return _run(_lib.remote_batch_read, "remote_batch_read", RemoteFile, requests,
                coalesce_max_gap, task_size)


def ranges_of(file: Any, ranges: Iterable[tuple]) -> list[tuple]:
    """``(buf[, size[, file_offset]])`` ranges of ``file`` as requests of a batch read."""
    out = []
    for i, r in enumerate(ranges):
        if not isinstance(r, tuple) or not 1 <= len(r) <= 3:
            raise TypeError(f"batch_read: range {i} must be a tuple (buf[, size[, "
                            f"file_offset]]), got {r!r}")
        out.append((file, *r))
    return out
