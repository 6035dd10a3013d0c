# SPDX-License-Identifier: Apache-2.0
"""``kvikio.zarr.GDSStore``: a Zarr (>= 3) store reading and writing chunks with KvikIO.

Not there yet: zarr >= 3 is on neither of this project's machines (Debian 12 packages zarr
2.13, the GPU machine has none and no package index), so no store could be tested. Importing
this module raises ImportError saying what is missing.
"""

try:
    import zarr
except ImportError as e:
    raise ImportError("kvikio.zarr needs zarr >= 3, which is not installed") from e

if int(zarr.__version__.split(".")[0]) < 3:
    raise ImportError(f"kvikio.zarr needs zarr >= 3, found zarr {zarr.__version__}")
raise ImportError(
    f"kvikio.zarr.GDSStore is not implemented in this build yet (zarr {zarr.__version__} found)"
)
