# SPDX-License-Identifier: Apache-2.0
"""Buffers and streams as the C++ library takes them: an address and a size.

Device memory is anything with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba); host
memory anything with the buffer protocol or ``__array_interface__`` (NumPy, bytes, bytearray,
memoryview). Both must be C-contiguous: a strided view would need a gather, which is the
caller's to do, so it is a ValueError.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvikio import _lib


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
        if not _lib.is_cuda_available():
            # Without a driver every address looks like host memory: refuse rather than write
            # the file's bytes wherever the device pointer happens to point.
            raise RuntimeError(
                f"a device array ({type(obj).__name__} with __cuda_array_interface__) but no "
                f"CUDA driver: {_lib.cuda_unavailable_reason()}"
            )
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


_U64_LIMIT = 1 << 64


def unsigned(what: str, name: str, value) -> int:
    """``value`` as an unsigned 64-bit integer: TypeError for what is no integer (a float, a
    string), OverflowError for a negative value (as upstream's conversion) or one of 2^64 or
    more; each naming the call, the argument and the value."""
    if isinstance(value, bool):
        raise TypeError(f"{what}: {name} must be an integer, got a bool ({value!r})")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(
            f"{what}: {name} must be an integer, got {type(value).__name__} ({value!r})"
        ) from None
    if n < 0:
        raise OverflowError(f"{what}: {name} is {n}: can't convert negative value to an "
                            "unsigned integer")
    if n >= _U64_LIMIT:
        raise OverflowError(f"{what}: {name} is {n}, which does not fit 64 bits")
    return n


def size_of(buf: Buffer, size: int | None, what: str) -> int:
    """``size``, or the whole buffer; never more than the buffer holds."""
    if size is None:
        return buf.nbytes
    size = unsigned(what, "size", size)
    if size > buf.nbytes:
        raise ValueError(f"{what}: size {size} does not fit a buffer of {buf.nbytes} bytes")
    return size
