# SPDX-License-Identifier: Apache-2.0
"""NumPy-style whole-array file I/O: :func:`fromfile`, :func:`tofile` and :class:`LikeWrapper`."""

from __future__ import annotations

import os

import numpy as np

from kvikio.cufile import CuFile


class LikeWrapper:
    """Makes ``numpy.fromfile(..., like=LikeWrapper(a))`` read with KvikIO into an array of
    ``a``'s kind (CuPy arrays land in device memory)."""

    def __init__(self, like):
        self._like = like

    def __array_function__(self, func, types, args, kwargs):
        if func is not np.fromfile:
            return NotImplemented
        return fromfile(*args, like=self._like, **kwargs)


def fromfile(file, dtype=float, count: int = -1, sep: str = "", offset: int = 0, *, like=None):
    """Reads ``count`` items of ``dtype`` (-1: the rest of the file) at byte ``offset`` into a
    new array, made with ``numpy.empty(..., like=like)``."""
    if sep != "":
        raise ValueError("fromfile reads binary files only (sep must be '')")
    dtype = np.dtype(dtype)
    path = os.fspath(file)
    with CuFile(path, "r") as f:
        if count < 0:
            count = (f.nbytes() - offset) // dtype.itemsize
        out = np.empty(count, dtype=dtype) if like is None else np.empty(count, dtype=dtype, like=like)
        nbytes = count * dtype.itemsize
        if nbytes:
            got = f.read(out, nbytes, offset)
            if got != nbytes:
                raise IOError(f"read {got} of {nbytes} bytes of {path}")
    return out


def tofile(array, file) -> None:
    """Writes the bytes of ``array`` (host or device, contiguous) to a new file ``file``."""
    with CuFile(os.fspath(file), "w") as f:
        f.write(array)
