# SPDX-License-Identifier: Apache-2.0
"""``kvikio.zarr.GDSStore``: a Zarr (>= 3) store reading and writing chunks with KvikIO.

Not there yet: neither this machine nor the GPU machine has zarr, so a store could not be
tested; importing this module raises ImportError saying what is missing.
"""

try:
    import zarr
except ImportError as e:
    raise ImportError("kvikio.zarr needs zarr >= 3, which is not installed") from e

raise ImportError(
    f"kvikio.zarr.GDSStore is not implemented in this build yet (zarr {zarr.__version__} found)"
)
