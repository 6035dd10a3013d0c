# SPDX-License-Identifier: Apache-2.0
"""KvikIO: files and remote objects to and from host or CUDA device memory, fast.

Upstream KvikIO's Python API on this project's C++ library (see docs/python.md for what is
there so far).
"""

from kvikio import defaults
from kvikio._lib import __version__
from kvikio.cufile import CuFile, IOFuture, IOFutureStream
from kvikio.remote_file import RemoteEndpointType, RemoteFile, is_remote_file_available

__all__ = [
    "CuFile",
    "IOFuture",
    "IOFutureStream",
    "RemoteEndpointType",
    "RemoteFile",
    "__version__",
    "defaults",
    "is_remote_file_available",
]
