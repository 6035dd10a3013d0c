# SPDX-License-Identifier: Apache-2.0
"""Buffers and streams as the C++ library takes them: an address and a size.

Device memory is anything with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba); host
memory anything with the buffer protocol or ``__array_interface__`` (NumPy, bytes, bytearray,
memoryview). Both must be C-contiguous: a strided view would need a gather, which is the
caller's to do, so it is a ValueError. Both must hold plain data: the items of an object array
are pointers to Python objects, which bytes from a file would turn into wild pointers.
"""

from __future__ import annotations

import operator
import re
import sys
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


class ShapeError(ValueError, OverflowError):
    """A shape no memory can have. Also an OverflowError, which upstream raises for it (its
    conversion of the extents or of their product to a C size fails)."""


def _nbytes(shape: Any, itemsize: int) -> int:
    """The bytes of an array of ``shape``: non-negative integer extents whose product times
    ``itemsize`` is at most ``sys.maxsize``, the most any object can span in the address space."""
    try:
        extents = [operator.index(n) for n in shape]
    except TypeError:
        raise TypeError(f"a device array's shape {shape!r} is no tuple of integers") from None
    nbytes = itemsize
    for n in extents:
        nbytes *= n
        if n < 0 or n > sys.maxsize or nbytes > sys.maxsize:
            raise ShapeError(
                f"a device array's shape {shape!r} (item size {itemsize}) is impossible: expected "
                f"non-negative integers whose product times the item size is at most "
                f"{sys.maxsize} bytes")
    return nbytes


def objects_refused(dtype: Any, *, writable: bool) -> ValueError:
    """The error for memory that holds Python objects, in NumPy's words for fromfile; raised by
    as_buffer and by kvikio.numpy.fromfile."""
    return ValueError(
        f"Cannot {'read into' if writable else 'write from'} object array (dtype {dtype}): its "
        "items are pointers to Python objects; expected a dtype of plain data (numbers, bytes "
        "or records of them)")


def _holds_objects(fmt: str) -> bool:
    """Whether a buffer format (struct's codes, "T{...}" records with ":name:" fields) has a
    Python object ("O") among its items; field names are dropped first, as they may hold an O."""
    return "O" in re.sub(r":[^:]*:", "", fmt)


def as_buffer(obj: Any, *, writable: bool) -> Buffer:
    """The memory of ``obj``; ``writable``: it will be written into (reads)."""
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        dtype = np.dtype(cai["typestr"])
        if dtype.hasobject:
            raise objects_refused(dtype, writable=writable)
        itemsize = dtype.itemsize
        nbytes = _nbytes(cai["shape"], itemsize)
        shape = tuple(cai["shape"])
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
        # The claimed extent must lie in mapped device memory: a GPU would read or write past
        # it. (A claim that runs on into another allocation cannot be told from one that is
        # true.)
        room = _lib.allocation_room(int(ptr), nbytes) if ptr and nbytes else None
        if room is not None and nbytes > room:
            raise ValueError(
                f"a device array ({type(obj).__name__}) claims {nbytes} bytes at {int(ptr):#x}, "
                f"but only {room} bytes from that address are mapped device memory"
            )
        return Buffer(int(ptr or 0), nbytes, True, obj)
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
    if _holds_objects(view.format):
        raise objects_refused(getattr(obj, "dtype", view.format), writable=writable)
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
