# SPDX-License-Identifier: Apache-2.0
"""KvikIO: files and remote objects to and from host or CUDA device memory, fast.

Upstream KvikIO's Python API on this project's C++ library (docs/python.md).
"""

# libkvikio.so first, where the libkvikio wheel is installed (kvikio._lib links it); a build tree
# (PYTHONPATH=build/release/python) or an installed libkvikio is found by the loader instead.
try:
    import libkvikio as _libkvikio
except ImportError:
    pass
else:
    _libkvikio.load_library()

from kvikio import buffer, cufile_driver, defaults, ipc, stream, utils
from kvikio._version import __git_commit__, __version__
from kvikio.batch_read import file_batch_read, remote_batch_read
from kvikio.buffer import bounce_buffer_free, memory_deregister, memory_register
from kvikio.cufile import (
    CuFile,
    IOFuture,
    IOFutureStream,
    clear_page_cache,
    drop_file_page_cache,
    drop_system_page_cache,
    get_page_cache_info,
)
from kvikio.defaults import CompatMode, RemoteIOBackend, RemoteReactorDispatch
from kvikio.mmap import Mmap
from kvikio.nsys import nsys_plugin_search_dir
from kvikio.remote_file import (
    RemoteEndpointType,
    RemoteFile,
    infer_remote_endpoint_type,
    is_remote_file_available,
)
from kvikio.statistics import Summary, SummaryMonitor
from kvikio.stream import stream_deregister, stream_register
from kvikio.utils import kvikio_deprecation_notice

# Upstream's names first (its __all__), then this project's.
__all__ = [
    "__git_commit__",
    "__version__",
    "clear_page_cache",
    "CuFile",
    "drop_file_page_cache",
    "drop_system_page_cache",
    "Mmap",
    "get_page_cache_info",
    "infer_remote_endpoint_type",
    "is_remote_file_available",
    "kvikio_deprecation_notice",
    "nsys_plugin_search_dir",
    "RemoteEndpointType",
    "RemoteFile",
    "Summary",
    "SummaryMonitor",
    "stream_register",
    "stream_deregister",
    "memory_register",
    "memory_deregister",
    "bounce_buffer_free",
    "CompatMode",
    "IOFuture",
    "IOFutureStream",
    "RemoteIOBackend",
    "RemoteReactorDispatch",
    "buffer",
    "cufile_driver",
    "defaults",
    "file_batch_read",
    "ipc",
    "remote_batch_read",
    "stream",
    "utils",
]
