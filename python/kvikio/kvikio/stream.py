# SPDX-License-Identifier: Apache-2.0
"""cuFile stream registration (no-ops where cuFile is not used)."""

from kvikio import _lib
from kvikio._buffers import stream_handle


def stream_register(stream, flags: int) -> None:
    _lib.stream_register(stream_handle(stream), flags)


def stream_deregister(stream) -> None:
    _lib.stream_deregister(stream_handle(stream))
