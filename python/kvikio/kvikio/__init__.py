# SPDX-License-Identifier: Apache-2.0
"""KvikIO: files and remote objects to and from host or CUDA device memory, fast.

Upstream KvikIO's Python API on this project's C++ library (see docs/python.md for what is
there so far).
"""

from kvikio import buffer, cufile_driver, defaults, ipc, stream
from kvikio._lib import __version__
from kvikio.cufile import CuFile, IOFuture, IOFutureStream
from kvikio.mmap import Mmap
from kvikio.remote_file import (
    RemoteEndpointType,
    RemoteFile,
    infer_remote_endpoint_type,
    is_remote_file_available,
)

__all__ = [
    "CuFile",
    "IOFuture",
    "IOFutureStream",
    "Mmap",
    "RemoteEndpointType",
    "RemoteFile",
    "__version__",
    "buffer",
    "cufile_driver",
    "defaults",
    "infer_remote_endpoint_type",
    "ipc",
    "is_remote_file_available",
    "stream",
]
