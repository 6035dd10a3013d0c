# SPDX-License-Identifier: Apache-2.0
"""``kvikio.zarr.GDSStore``: a Zarr (>= 3) store on the local file system whose chunks are read
and written through KvikIO, into the buffers Zarr asks for: host memory with Zarr's default
buffer prototype, device memory (CuPy) with ``zarr.config.enable_gpu()`` or a GPU prototype.

It is Zarr's ``LocalStore`` (listing, deleting, moving, opening modes) with the reads and writes
of values replaced: a read allocates the destination from the caller's prototype and fills it
with one ``CuFile.pread``; a write goes through ``CuFile`` into a temporary file beside the key
that is then renamed over it (or linked, for ``set_if_not_exists``), so that a reader never sees
half a chunk, as with ``LocalStore``.

Importing it without zarr, or with zarr 2, raises ImportError saying what is needed.
"""

from __future__ import annotations

import asyncio
import errno
import os
import uuid
from pathlib import Path

try:
    import zarr
except ImportError as e:
    raise ImportError("kvikio.zarr requires the optional 'zarr>=3' dependency") from e

if int(zarr.__version__.split(".")[0]) < 3:
    raise ImportError(f"'zarr>=3' is required, but 'zarr=={zarr.__version__}' is installed.")

import numpy as np  # noqa: E402
import zarr.storage  # noqa: E402
from zarr.abc.store import (  # noqa: E402
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    SuffixByteRequest,
)
from zarr.core.buffer import Buffer, BufferPrototype  # noqa: E402
from zarr.core.buffer.core import default_buffer_prototype  # noqa: E402

from kvikio.cufile import CuFile  # noqa: E402

__all__ = ["GDSStore"]

# Errors that mean "no such key" to a store (LocalStore returns None for them).
_MISSING = (FileNotFoundError, IsADirectoryError, NotADirectoryError)


def _span(byte_range: ByteRequest | None, size: int) -> tuple[int, int]:
    """(offset, length) of ``byte_range`` in a file of ``size`` bytes, clamped to the file as a
    read of a Python file object would be (a range past the end is empty)."""
    if byte_range is None:
        start, end = 0, size
    elif isinstance(byte_range, RangeByteRequest):
        start, end = byte_range.start, byte_range.end
    elif isinstance(byte_range, OffsetByteRequest):
        start, end = byte_range.offset, size
    elif isinstance(byte_range, SuffixByteRequest):
        start, end = max(0, size - byte_range.suffix), size
    else:
        raise TypeError(f"Unexpected byte_range, got {byte_range}.")
    # Refused as LocalStore refuses them: a negative offset as its seek does, a range ending
    # before it starts as its read does.
    if start < 0:
        raise OSError(errno.EINVAL, f"Invalid argument: {byte_range} starts before the file")
    if isinstance(byte_range, RangeByteRequest) and end < start:
        raise ValueError(f"read length must be non-negative or -1: {byte_range} ends before it "
                         "starts")
    start = min(start, size)
    return start, max(0, min(end, size) - start)


def _empty(prototype: BufferPrototype, nbytes: int):
    """An uninitialized array of ``nbytes`` bytes of the prototype's kind (host or device)."""
    nd = prototype.nd_buffer
    make = nd.empty if hasattr(nd, "empty") else nd.create
    return make(shape=(nbytes,), dtype=np.dtype("B")).as_ndarray_like()


def _read(path: Path, prototype: BufferPrototype, byte_range: ByteRequest | None) -> Buffer:
    # The size comes from the open file, so a file replaced meanwhile is read whole or not at all.
    with CuFile(path, "r") as f:
        offset, nbytes = _span(byte_range, f.nbytes())
        raw = _empty(prototype, nbytes)
        if nbytes:
            got = f.read(raw, nbytes, offset)
            if got != nbytes:  # the file shrank under the read
                raw = raw[:got]
    return prototype.buffer.from_array_like(raw)


def _write(path: Path, value: Buffer, exclusive: bool) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = value.as_array_like()
    partial = path.with_name(f"{path.name}.{uuid.uuid4().hex}.partial")
    try:
        with CuFile(partial, "w") as f:
            written = f.write(data) if len(value) else 0
        if exclusive:
            os.link(partial, path)  # FileExistsError when the key exists
            os.unlink(partial)
        else:
            os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return written


class GDSStore(zarr.storage.LocalStore):
    """A Zarr store of the directory ``root`` whose values are read and written with KvikIO.

    Parameters
    ----------
    root : str or Path
        The directory of the store.
    read_only : bool
        Whether the store refuses writes and deletes.

    Reads fill a buffer of the caller's ``prototype`` (``zarr.core.buffer.cpu`` or ``gpu``)
    directly: with a GPU prototype the bytes go from the file into device memory through
    KvikIO's bounce buffers or GPUDirect Storage, never through a host copy made by Zarr.
    """

    def __repr__(self) -> str:
        return f"{type(self).__name__}('{self}')"

    def _check_value(self, value: Buffer) -> None:
        if not isinstance(value, Buffer):
            raise TypeError(
                f"{type(self).__name__}.set(): `value` must be a Buffer instance. Got an "
                f"instance of {type(value)} instead."
            )

    def get_sync(self, key: str, *, prototype: BufferPrototype | None = None,
                 byte_range: ByteRequest | None = None) -> Buffer | None:
        self._ensure_open_sync()
        try:
            return _read(self.root / key, prototype or default_buffer_prototype(), byte_range)
        except _MISSING:
            return None

    async def get(self, key: str, prototype: BufferPrototype | None = None,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        if not self._is_open:
            await self._open()
        try:
            return await asyncio.to_thread(_read, self.root / key,
                                           prototype or default_buffer_prototype(), byte_range)
        except _MISSING:
            return None

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(key, prototype, byte_range)
                                           for key, byte_range in key_ranges)))

    def set_sync(self, key: str, value: Buffer) -> None:
        self._ensure_open_sync()
        self._check_writable()
        self._check_value(value)
        _write(self.root / key, value, exclusive=False)

    async def _set(self, key: str, value: Buffer, exclusive: bool = False) -> None:
        if not self._is_open:
            await self._open()
        self._check_writable()
        self._check_value(value)
        await asyncio.to_thread(_write, self.root / key, value, exclusive)
