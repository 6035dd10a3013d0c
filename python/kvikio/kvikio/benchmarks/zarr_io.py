# SPDX-License-Identifier: Apache-2.0
"""Zarr benchmark (upstream's ``zarr_io``), with its options: an array of ``--nbytes`` in chunks
of ``--chunksize`` elements written and read back through ``kvikio.zarr.GDSStore`` ("kvikio")
and through Zarr's ``LocalStore`` ("posix"), in device memory where CuPy is importable (Zarr's
GPU buffers) and in host memory otherwise."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import time

import numpy

import kvikio.defaults
from kvikio.benchmarks.utils import (
    array_module,
    drop_vm_cache,
    format_bytes,
    parse_directory,
    parse_size,
    pprint_api_res,
    pprint_sys_info,
)


def roundtrip(directory, nelem: int, chunks: int, dtype, store: str, drop_cache: bool = False):
    """Writes ``nelem`` random elements in chunks of ``chunks`` through ``store`` ("kvikio":
    GDSStore, "posix": LocalStore) into a fresh ``directory``, then reads them back; returns
    (read seconds, write seconds) and checks the bytes read. Device memory where CuPy is
    importable (GDSStore reads into it; LocalStore's host result is copied there)."""
    import zarr
    import zarr.storage

    import kvikio.zarr

    xp = array_module()
    shutil.rmtree(directory, ignore_errors=True)
    # Random bytes of every element (floats included), never zeros.
    nbytes = nelem * numpy.dtype(dtype).itemsize
    src = xp.asarray(numpy.random.default_rng(0).integers(1, 256, nbytes, dtype=numpy.uint8)
                     .view(dtype))
    gpu = xp.__name__ == "cupy" and store == "kvikio"
    ctx = zarr.config.enable_gpu() if gpu else contextlib.nullcontext()
    with ctx:
        opened = (kvikio.zarr.GDSStore if store == "kvikio" else zarr.storage.LocalStore)(directory)
        if drop_cache:
            drop_vm_cache()
        t0 = time.perf_counter()
        z = zarr.create_array(opened, shape=(nelem,), chunks=(chunks,), dtype=src.dtype,
                              compressors=None)
        z[:] = src if gpu or xp is numpy else src.get()
        os.sync()
        write_time = time.perf_counter() - t0
        if drop_cache:
            drop_vm_cache()
        t0 = time.perf_counter()
        res = xp.asarray(z[:])
        read_time = time.perf_counter() - t0
    if not bool((res.view(numpy.uint8) == src.view(numpy.uint8)).all()):
        raise RuntimeError(f"{store}: the array read back differs from the one written")
    return read_time, write_time


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
    kvikio.defaults.set("num_threads", args.nthreads)
    nelem = args.nbytes // args.dtype.itemsize
    chunks = max(1, args.chunksize // args.dtype.itemsize)
    print("Zarr-IO Benchmark")
    print("----------------------------------")
    pprint_sys_info()
    print("----------------------------------")
    print(f"nbytes            | {args.nbytes} bytes ({format_bytes(args.nbytes)})")
    print(f"chunksize         | {chunks * args.dtype.itemsize} bytes "
          f"({format_bytes(chunks * args.dtype.itemsize)})")
    print(f"memory            | {'device (CuPy)' if array_module().__name__ == 'cupy' else 'host'}")
    print(f"drop-vm-cache     | {args.drop_vm_cache}")
    print(f"directory         | {args.dir}")
    print(f"nthreads          | {args.nthreads}")
    print(f"nruns             | {args.nruns}")
    print("==================================")
    apis = ("kvikio", "posix") if "all" in args.api else args.api
    with contextlib.ExitStack() as stack:
        root = args.dir or stack.enter_context(tempfile.TemporaryDirectory())
        for api in apis:
            reads, writes = [], []
            for run in range(args.n_warmup_runs + args.nruns):
                read, write = roundtrip(os.path.join(root, api), nelem, chunks, args.dtype, api,
                                        args.drop_vm_cache)
                if run >= args.n_warmup_runs:
                    reads.append(nelem * args.dtype.itemsize / read)
                    writes.append(nelem * args.dtype.itemsize / write)
            pprint_api_res(f"{api} read", reads)
            pprint_api_res(f"{api} write", writes)


if __name__ == "__main__":
    main(parse_args())
