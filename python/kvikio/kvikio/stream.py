# SPDX-License-Identifier: Apache-2.0
"""cuFile stream registration (no-ops where cuFile is not used)."""

from kvikio import _lib
from kvikio._buffers import stream_handle


def stream_register(raw_stream, flags: int) -> None:
    """Registers ``raw_stream`` (a handle, CuPy's ``.ptr`` or ``__cuda_stream__``) with cuFile
    for stream-ordered I/O, with cuFile's ``flags``; a no-op where cuFile is not used."""
    _lib.stream_register(stream_handle(raw_stream), flags)


def stream_deregister(raw_stream) -> None:
    """Deregisters a stream registered with :func:`stream_register`."""
    _lib.stream_deregister(stream_handle(raw_stream))
