# SPDX-License-Identifier: Apache-2.0
"""Zarr benchmark (upstream's ``zarr_io``), with its options. It needs ``kvikio.zarr``
(zarr >= 3), which this package does not have yet: running it says so."""

from __future__ import annotations

import argparse

import numpy

from kvikio.benchmarks.utils import parse_directory, parse_size


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Roundtrip benchmark")
    size = lambda s: parse_size(s.replace(" ", ""))  # noqa: E731
    parser.add_argument("-n", "--nbytes", metavar="BYTES", default="10 MiB", type=size)
    parser.add_argument("--chunksize", metavar="BYTES", default="10 MiB", type=size)
    parser.add_argument("--dtype", metavar="DATATYPE", default="float32", type=numpy.dtype)
    parser.add_argument("-d", "--dir", metavar="PATH", default=None, type=parse_directory)
    parser.add_argument("--nruns", metavar="RUNS", default=1, type=int)
    parser.add_argument("--n-warmup-runs", default=0, type=int)
    parser.add_argument("-t", "--nthreads", metavar="THREADS", default=1, type=int)
    parser.add_argument("--api", metavar="API", default=("kvikio", "posix"), nargs="+",
                        choices=("kvikio", "posix", "all"))
    parser.add_argument("--drop-vm-cache", action="store_true", default=False)
    return parser.parse_args(argv)


def main(args) -> None:
    import kvikio.zarr  # noqa: F401 - raises ImportError saying what is missing

    raise SystemExit("kvikio.zarr.GDSStore is not implemented in this package yet")


if __name__ == "__main__":
    main(parse_args())
