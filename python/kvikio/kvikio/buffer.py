# SPDX-License-Identifier: Apache-2.0
"""cuFile buffer registration (no-ops in compatibility mode)."""

from kvikio import _lib
from kvikio._buffers import as_buffer


def memory_register(buf) -> None:
    """Registers the whole device allocation holding ``buf`` with cuFile."""
    _lib.memory_register(as_buffer(buf, writable=False).ptr)


def memory_deregister(buf) -> None:
    _lib.memory_deregister(as_buffer(buf, writable=False).ptr)


def bounce_buffer_free() -> int:
    """Frees the pinned bounce buffers waiting in the pool (those in use stay); returns the
    bytes freed. Later device I/O pins new ones (slowly), so call it only to give memory back."""
    return _lib.bounce_buffer_free()
