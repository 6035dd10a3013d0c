# SPDX-License-Identifier: Apache-2.0
"""libkvikio: KvikIO's C++ library as a Python package, for packages that link it.

``load_library()`` loads ``libkvikio.so`` before a module that links it is imported (the
``kvikio`` package calls it first thing); ``cmake_prefix()`` is where ``find_package(kvikio)``
finds the CMake package.
"""

from libkvikio._version import __version__
from libkvikio.load import cmake_prefix, load_library

__all__ = ["__version__", "cmake_prefix", "load_library"]
