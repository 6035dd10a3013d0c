# SPDX-License-Identifier: Apache-2.0
"""Sharing device allocations between processes through cached CUDA IPC handles (ours).

The producer calls :func:`export_memory` and sends ``handle.to_bytes()``; the consumer calls
:func:`open` on ``IpcHandle.from_bytes(...)`` and gets a :class:`MappedRegion`, a device array
(``__cuda_array_interface__``, uint8) over the producer's bytes, mapped once per allocation and
shared (``KVIKIO_IPC_EXPORT_CACHE_SIZE``, ``KVIKIO_IPC_OPEN_CACHE_SIZE``).
"""

from __future__ import annotations

from kvikio import _lib
from kvikio._buffers import as_buffer

IpcHandle = _lib.ipc.IpcHandle
CacheStats = _lib.ipc.CacheStats


class MappedRegion:
    """Another process's device bytes, mapped here while this object (or a copy of its array
    interface user) lives; ``release()`` gives the mapping back to the cache now."""

    def __init__(self, region: _lib.ipc.MappedRegion):
        self._region = region
        self._released = False

    @property
    def ptr(self) -> int:
        self._check_mapped()
        return self._region.ptr

    @property
    def nbytes(self) -> int:
        self._check_mapped()
        return self._region.nbytes

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                "strides": None, "version": 3}

    def release(self) -> None:
        self._region.release()
        self._released = True

    def _check_mapped(self) -> None:
        # A released region is no memory at all: refused, not taken as 0 bytes to read into.
        if self._released:
            raise ValueError("this MappedRegion was released: its memory is no longer mapped")


def export_memory(buf, nbytes: int | None = None) -> IpcHandle:
    """The handle of ``buf``'s device memory (``nbytes`` of it; default all)."""
    b = as_buffer(buf, writable=False)
    if not b.is_device:
        raise ValueError("export_memory needs device memory (__cuda_array_interface__)")
    return _lib.ipc.export_memory(b.ptr, b.nbytes if nbytes is None else nbytes)


def open(handle: IpcHandle) -> MappedRegion:  # noqa: A001 - the module's verb
    return MappedRegion(_lib.ipc.open(handle))


def forget(buf) -> None:
    """Drops the export-cache entry of ``buf``'s allocation (call before freeing it)."""
    _lib.ipc.forget(as_buffer(buf, writable=False).ptr)


def export_cache_stats() -> CacheStats:
    return _lib.ipc.export_cache_stats()


def open_cache_stats() -> CacheStats:
    return _lib.ipc.open_cache_stats()


def clear() -> None:
    _lib.ipc.clear()
