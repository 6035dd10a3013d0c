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
    """Upstream frees its pinned bounce buffers here; ours are pooled and reused (pinning is
    slow), so nothing is freed: returns 0."""
    return 0
