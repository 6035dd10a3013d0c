# SPDX-License-Identifier: Apache-2.0
"""NumPy-style whole-array file I/O: :func:`fromfile`, :func:`tofile` and :class:`LikeWrapper`."""

from __future__ import annotations

import io
import os
from typing import Protocol, Union, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from kvikio._buffers import objects_refused
from kvikio.cufile import CuFile


@runtime_checkable
class FileLike(Protocol):
    """An open file: what fromfile() and tofile() take besides a path."""

    def fileno(self) -> int: ...

    @property
    def name(self) -> str: ...


def _path(file: Union[str, os.PathLike, io.FileIO]) -> str:
    # An open file is reopened by its name, as upstream does (its position is not used).
    return file.name if isinstance(file, FileLike) else os.fspath(file)


class LikeWrapper:
    """Makes ``numpy.fromfile(..., like=LikeWrapper(a))`` read with KvikIO into an array of
    ``a``'s kind (CuPy arrays land in device memory); other NumPy functions run as they are."""

    def __init__(self, like: ArrayLike) -> None:
        self._like = like

    def __array_function__(self, func, types, args, kwargs):
        if func is not np.fromfile:
            return func(*args, **kwargs)
        return fromfile(*args, like=self._like, **kwargs)


def fromfile(file: Union[str, os.PathLike, io.FileIO], dtype: DTypeLike = float, count: int = -1,
             sep: str = "", offset: int = 0, *, like: ArrayLike = None) -> ArrayLike:
    """Reads ``count`` items of ``dtype`` (-1: all) at byte ``offset`` of a file (a path or an
    open file) into a new array made like ``like`` (NumPy by default, CuPy into device
    memory); no more items than the file holds."""
    if sep != "":
        raise NotImplementedError("Non-default value of the `sep` argument is not supported")
    # NumPy's ValueError for objects, before anything is opened and even for an empty read.
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise objects_refused(dtype, writable=True)
    path = _path(file)
    nbytes = os.path.getsize(path)
    itemsize = dtype.itemsize
    if count == -1:
        count = nbytes
    count = min(count, (nbytes - offset) // itemsize)
    out = np.empty_like(like, shape=(count,), dtype=dtype) if like is not None else np.empty(
        count, dtype=dtype)
    if out.nbytes:
        with CuFile(path, "r") as f:
            f.read(out, file_offset=offset)
    return out


def tofile(ary: ArrayLike, file: Union[str, os.PathLike, io.FileIO]) -> None:
    """Writes ``ary`` (host or device) to a file (a path or an open file), truncated first, in C
    order as NumPy does: a non-contiguous array is made contiguous first."""
    data = np.ascontiguousarray(ary, like=ary) if hasattr(ary, "__array_function__") else ary
    with CuFile(_path(file), "w") as f:
        f.write(data)
