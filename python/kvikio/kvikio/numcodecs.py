# SPDX-License-Identifier: Apache-2.0
"""``CudaCodec``: the base class of numcodecs codecs that work on CUDA device memory.

Needs numcodecs; importing this module without it raises ImportError naming what is missing.
CuPy, the usual kind of the encoded buffers, is needed only by the codecs that use it: without
it the module imports, so that codecs can be defined, registered and tested on host memory.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Optional, Union

try:
    import numcodecs.abc
    import numpy.typing
except ImportError as e:
    raise ImportError(f"kvikio.numcodecs needs numcodecs: {e}") from e

try:
    import cupy.typing

    BufferLike = Union[cupy.typing.NDArray, numpy.typing.ArrayLike, Any]
except ImportError:  # no CuPy: host buffers only
    BufferLike = Union[numpy.typing.ArrayLike, Any]


class CudaCodec(numcodecs.abc.Codec):
    """A numcodecs codec whose buffers may be in device memory (CuPy) or host memory."""

    @abstractmethod
    def encode(self, buf: BufferLike) -> cupy.typing.NDArray:
        """Encodes ``buf`` (host or device); returns the encoded bytes as a CuPy array."""

    @abstractmethod
    def decode(self, buf: BufferLike, out: Optional[BufferLike] = None) -> BufferLike:
        """Decodes ``buf`` into ``out`` (exactly the decoded size) or a new buffer of ``buf``'s
        kind; returns it."""
