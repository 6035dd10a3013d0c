# SPDX-License-Identifier: Apache-2.0
"""Buffers and streams as the C++ library takes them: an address and a size.

Device memory is anything with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba); host
memory anything with the buffer protocol or ``__array_interface__`` (NumPy, bytes, bytearray,
memoryview). Both must be C-contiguous: a strided view would need a gather, which is the
caller's to do, so it is a ValueError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Buffer:
    """An address and a size, and the object that owns the memory (kept alive with it)."""

    ptr: int
    nbytes: int
    is_device: bool
    owner: Any


def _c_contiguous(shape, strides, itemsize) -> bool:
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent > 1 and stride != expected:
            return False
        expected *= extent
    return True


def as_buffer(obj: Any, *, writable: bool) -> Buffer:
    """The memory of ``obj``; ``writable``: it will be written into (reads)."""
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        itemsize = np.dtype(cai["typestr"]).itemsize
        strides = cai.get("strides")
        if strides is not None and not _c_contiguous(shape, strides, itemsize):
            raise ValueError(
                f"a non-contiguous device array (shape {shape}, strides {tuple(strides)}): "
                "KvikIO reads and writes contiguous memory only"
            )
        ptr, readonly = cai["data"]
        if writable and readonly:
            raise ValueError("a read-only device array cannot be read into")
        return Buffer(int(ptr or 0), math.prod(shape) * itemsize, True, obj)
    try:
        view = memoryview(obj)
    except TypeError:
        if hasattr(obj, "__array_interface__"):
            view = memoryview(np.asarray(obj))
        else:
            raise TypeError(
                f"{type(obj).__name__} is no buffer: expected an object with "
                "__cuda_array_interface__, the buffer protocol or __array_interface__"
            ) from None
    if not view.c_contiguous:
        raise ValueError(
            f"a non-contiguous host buffer (shape {view.shape}, strides {view.strides}): "
            "KvikIO reads and writes contiguous memory only"
        )
    if writable and view.readonly:
        raise ValueError(f"a read-only {type(obj).__name__} cannot be read into")
    flat = np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view, np.uint8)
    return Buffer(int(flat.ctypes.data), view.nbytes, False, (obj, view, flat))


def stream_handle(stream: Any) -> int:
    """A CUstream as an integer: from an int, ``None`` (the default stream), an object with
    ``.ptr`` (CuPy) or with ``__cuda_stream__`` (the CUDA stream protocol)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        _, handle = protocol() if callable(protocol) else protocol
        return int(handle)
    ptr = getattr(stream, "ptr", None)
    if ptr is not None:
        return int(ptr)
    raise TypeError(
        f"{type(stream).__name__} is no stream: expected an int, .ptr or __cuda_stream__"
    )


def size_of(buf: Buffer, size: int | None, what: str) -> int:
    """``size``, or the whole buffer; never more than the buffer holds."""
    if size is None:
        return buf.nbytes
    if size < 0 or size > buf.nbytes:
        raise ValueError(f"{what}: size {size} does not fit a buffer of {buf.nbytes} bytes")
    return size
