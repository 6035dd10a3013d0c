# SPDX-License-Identifier: Apache-2.0
"""Loading libkvikio.so: the wheel's copy, or one the system has, as upstream's libkvikio does.

The library is loaded with ``RTLD_LOCAL``: the dynamic loader then knows it by its soname, so a
module that links it (``kvikio._lib``) finds it already loaded, and none of its symbols enter the
global namespace where they could meet another library's.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

SONAME = "libkvikio.so"
_LOAD_FLAGS = ctypes.RTLD_LOCAL
_PACKAGE_DIR = Path(__file__).resolve().parent


def cmake_prefix() -> str:
    """The folder to add to ``CMAKE_PREFIX_PATH`` for ``find_package(kvikio)``."""
    return str(_PACKAGE_DIR)


def _wheel_library() -> ctypes.CDLL | None:
    path = _PACKAGE_DIR / "lib64" / SONAME
    return ctypes.CDLL(str(path), _LOAD_FLAGS) if path.is_file() else None


def _system_library() -> ctypes.CDLL:
    return ctypes.CDLL(SONAME, _LOAD_FLAGS)


def load_library() -> ctypes.CDLL | None:
    """Load libkvikio.so and return its handle (``None`` if neither copy loads).

    The wheel's copy comes first; with ``RAPIDS_LIBKVIKIO_PREFER_SYSTEM_LIBRARY`` set to anything
    but ``false``, a library the system's loader finds comes first and the wheel's is the
    fallback. Loading twice is harmless (the loader keeps one copy).
    """
    prefer_system = os.getenv("RAPIDS_LIBKVIKIO_PREFER_SYSTEM_LIBRARY", "false").lower() != "false"
    attempts = (_system_library, _wheel_library) if prefer_system else (_wheel_library, _system_library)
    for attempt in attempts:
        try:
            library = attempt()
        except OSError:
            continue
        if library is not None:
            return library
    # Neither: a module that links libkvikio may still find it through its RUNPATH or
    # LD_LIBRARY_PATH; if not, its import says which library is missing.
    return None


__all__ = ["SONAME", "cmake_prefix", "load_library"]
