# SPDX-License-Identifier: Apache-2.0
"""The version of the wheel (the repository's VERSION file, written by the build)."""

from importlib import metadata

try:
    __version__ = metadata.version("libkvikio")
except metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
