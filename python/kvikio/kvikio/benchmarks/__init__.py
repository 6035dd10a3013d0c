# SPDX-License-Identifier: Apache-2.0
"""Upstream's benchmark command lines (``python -m kvikio.benchmarks.single_node_io`` and
``http_io``, ``s3_io``, ``zarr_io``), with upstream's options and output, measured through this
package. ``python -m kvikio.bench`` is this project's fuller benchmark (with baselines)."""
