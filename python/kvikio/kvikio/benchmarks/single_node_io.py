# SPDX-License-Identifier: Apache-2.0
"""Roundtrip benchmark of local files (upstream's ``single_node_io``): writes and reads
``--nbytes`` with each ``--api`` and prints the throughput.

    python -m kvikio.benchmarks.single_node_io -n 1GiB -d /mnt/nvme -t 8 --api cufile posix
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time

import kvikio
import kvikio.buffer
import kvikio.defaults
from kvikio.benchmarks.utils import (
    array_module,
    format_bytes,
    parse_directory,
    parse_size,
    pprint_api_res,
    pprint_sys_info,
)


def _timed_parts(parts, flags: str) -> float:
    """Seconds to write (flags "w") or read ("r") the parts, each (CuFile path, array, file
    offset), in parallel: one handle per file, every part's future awaited."""
    t0 = time.perf_counter()
    files = {}
    futures = []
    for path, ary, offset in parts:
        if path not in files:
            files[path] = kvikio.CuFile(path, flags)
        op = files[path].pwrite if flags == "w" else files[path].pread
        futures.append(op(ary, file_offset=offset))
    for fut in futures:
        fut.get()
    for f in files.values():
        f.close()
    return time.perf_counter() - t0


def _run(args, write_parts, read_parts):
    """(read seconds, write seconds) of one run: writes the parts, then reads them back."""
    write_time = _timed_parts(write_parts, "w")
    return _timed_parts(read_parts, "r"), write_time


def _parts(args, xp, api):
    """The arrays and files of an API: one file and one array (cufile), a file per thread
    (-mf), an array per thread (-ma), or both (-mfma)."""
    n = args.nbytes
    splits = args.nthreads if api != "cufile" else 1
    if n % splits:
        raise SystemExit(f"--nbytes must be divisible by --nthreads for {api}")
    chunk = n // splits
    src = xp.arange(n, dtype="uint8")
    dst = xp.empty_like(src)
    many_files = api in ("cufile-mf", "cufile-mfma")
    many_arrays = api in ("cufile-ma", "cufile-mfma")
    write, read = [], []
    for i in range(splits):
        path = os.path.join(args.dir, f"cufile-p-{i:03d}" if many_files else "kvikio-single-file")
        offset = 0 if many_files else i * chunk
        if many_arrays:
            w, r = src[i * chunk:(i + 1) * chunk].copy(), xp.empty(chunk, dtype="uint8")
        else:
            w, r = src[i * chunk:(i + 1) * chunk], dst[i * chunk:(i + 1) * chunk]
        write.append((path, w, offset))
        read.append((path, r, offset))
    return write, read


def run_cufile(args, api):
    xp = array_module()
    write, read = _parts(args, xp, api)
    if args.pre_register_buffer:
        for _, ary, _ in write + read:
            kvikio.buffer.memory_register(ary)
    try:
        return _run(args, write, read)
    finally:
        if args.pre_register_buffer:
            for _, ary, _ in write + read:
                kvikio.buffer.memory_deregister(ary)


def run_posix(args, api):
    """Plain os.pwrite/os.pread of host memory (the baseline), with the copy to and from the
    device where CuPy is there."""
    xp = array_module()
    path = os.path.join(args.dir, "posix-single-file")
    src = xp.arange(args.nbytes, dtype="uint8")
    t0 = time.perf_counter()
    host = src.get() if hasattr(src, "get") else src
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.pwrite(fd, memoryview(host), 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    write_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    _ = xp.asarray(bytearray(data)) if xp.__name__ == "cupy" else data
    return time.perf_counter() - t0, write_time


def run_zarr(args, api):
    """The whole buffer as one chunk of a Zarr array in kvikio.zarr.GDSStore."""
    from kvikio.benchmarks.zarr_io import roundtrip

    return roundtrip(os.path.join(args.dir, "zarr"), args.nbytes, args.nbytes, "u1", "kvikio")


API = {
    "cufile": run_cufile,
    "zarr": run_zarr,
    "posix": run_posix,
    "cufile-mfma": run_cufile,
    "cufile-mf": run_cufile,
    "cufile-ma": run_cufile,
}


def main(args) -> None:
    kvikio.defaults.set("num_threads", args.nthreads)
    print("Roundtrip benchmark")
    print("----------------------------------")
    pprint_sys_info()
    print("----------------------------------")
    print(f"nbytes            | {args.nbytes} bytes ({format_bytes(args.nbytes)})")
    print(f"4K aligned        | {args.nbytes % 4096 == 0}")
    print(f"pre-reg-buf       | {args.pre_register_buffer}")
    print(f"directory         | {args.dir}")
    print(f"nthreads          | {args.nthreads}")
    print(f"nruns             | {args.nruns}")
    print("==================================")
    for api in args.api:
        reads, writes = [], []
        for _ in range(args.nruns):
            read, write = API[api](args, api)
            reads.append(args.nbytes / read)
            writes.append(args.nbytes / write)
        pprint_api_res(f"{api} read", reads)
        pprint_api_res(f"{api} write", writes)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Roundtrip benchmark")
    parser.add_argument("-n", "--nbytes", metavar="BYTES", default="10 MiB",
                        type=lambda s: parse_size(s.replace(" ", "")),
                        help="Message size, which must be a multiple of 8 (default: %(default)s).")
    parser.add_argument("-d", "--dir", metavar="PATH", default=None, type=parse_directory,
                        help="Path to the directory to r/w from (default: tempfile.TemporaryDirectory)")
    parser.add_argument("--nruns", metavar="RUNS", default=1, type=int,
                        help="Number of runs per API (default: %(default)s).")
    parser.add_argument("--pre-register-buffer", action="store_true", default=False,
                        help="Register the buffers with cuFile before the runs.")
    parser.add_argument("-t", "--nthreads", metavar="THREADS", default=1, type=int,
                        help="Number of threads to use (default: %(default)s).")
    parser.add_argument("--api", metavar="API", default=("cufile", "posix"), nargs="+",
                        choices=tuple(API.keys()) + ("all",),
                        help="List of APIs to use {%(choices)s} (default: %(default)s).")
    parser.add_argument("--zarr-compressor", metavar="COMPRESSOR", default=None, choices=(),
                        help="Compressor of the zarr API (none in this package).")
    args = parser.parse_args(argv)
    if "all" in args.api:
        args.api = tuple(API.keys())
    return args


def run(argv=None) -> None:
    args = parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.dir is None:
            args.dir = stack.enter_context(tempfile.TemporaryDirectory())
        main(args)


if __name__ == "__main__":
    run()
