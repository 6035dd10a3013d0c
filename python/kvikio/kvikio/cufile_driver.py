# SPDX-License-Identifier: Apache-2.0
"""What the cuFile driver offers here."""

from kvikio import _lib


def is_cufile_usable() -> bool:
    """Whether libcufile.so.0 loads and its driver opens (else compatibility mode serves)."""
    return _lib.is_cufile_usable()


def is_gds_available() -> bool:
    """Whether GPUDirect Storage is available (cuFile usable, not in compatibility mode)."""
    return _lib.is_gds_available()
