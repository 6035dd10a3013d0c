# SPDX-License-Identifier: Apache-2.0
"""HTTP read benchmark (upstream's ``http_io``): ``RemoteFile.open_http`` + ``read`` of an
array served by a local server (bundled, slow) or by ``--server`` (its files in
``--server-root-path``).

    python -m kvikio.benchmarks.http_io -n 100000000 -t 8 --server http://127.0.0.1:8080 \\
        --server-root-path /srv/www --api cupy numpy
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import tempfile
import time

import numpy

import kvikio
import kvikio.defaults
from kvikio.benchmarks.utils import (
    add_array_arguments,
    array_module,
    format_bytes,
    pprint_api_res,
)
from kvikio.utils import LocalHttpServer


def _read(args, xp) -> float:
    src = numpy.arange(args.nelem, dtype=args.dtype)
    src.tofile(pathlib.Path(args.server_root_path) / "data")
    dst = xp.empty_like(xp.asarray(src))
    url = f"{args.server}/data"
    t0 = time.perf_counter()
    with kvikio.RemoteFile.open_http(url, nbytes=src.nbytes) as f:
        f.read(dst)
    elapsed = time.perf_counter() - t0
    got = dst.get() if hasattr(dst, "get") else dst
    numpy.testing.assert_array_equal(got, src)
    return elapsed


API = {
    "cupy": lambda args: _read(args, array_module("cupy")),
    "numpy": lambda args: _read(args, numpy),
}


def main(args) -> None:
    kvikio.defaults.set("num_threads", args.nthreads)
    nbytes = args.nelem * args.dtype.itemsize
    print("Roundtrip benchmark")
    print("--------------------------------------")
    print(f"nelem       | {args.nelem} ({format_bytes(nbytes)})")
    print(f"dtype       | {args.dtype}")
    print(f"nthreads    | {args.nthreads}")
    print(f"nruns       | {args.nruns}")
    print(f"server      | {args.server}")
    if args.server is None:
        print("--------------------------------------")
        print("WARNING: the bundled server is slow, ")
        print("consider using --server.")
    print("======================================")
    with contextlib.ExitStack() as stack:
        if args.server is None:
            args.server_root_path = stack.enter_context(tempfile.TemporaryDirectory())
            server = stack.enter_context(LocalHttpServer(
                root_path=args.server_root_path, range_support=True,
                max_lifetime=args.bundled_server_lifetime))
            args.server = server.url
        elif args.server_root_path is None:
            raise ValueError("please set --server-root-path")
        for api in args.api:
            samples = [nbytes / API[api](args) for _ in range(args.nruns)]
            pprint_api_res(f"{api}-read", samples, harmonic=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="HTTP benchmark")
    add_array_arguments(parser)
    parser.add_argument("--server", default=None,
                        help="Connect to an external http server as opposed to the bundled (very "
                             "slow) HTTP server. Remember to also set --server-root-path.")
    parser.add_argument("--server-root-path", default=None,
                        help="Path to the root directory that `--server` serves (local path).")
    parser.add_argument("--bundled-server-lifetime", metavar="SECONDS", default=3600, type=int,
                        help="Maximum lifetime of the bundled server (default: %(default)s).")
    parser.add_argument("--api", metavar="API", default=list(API.keys())[0], nargs="+",
                        choices=tuple(API.keys()) + ("all",),
                        help="List of APIs to use {%(choices)s} (default: %(default)s).")
    args = parser.parse_args(argv)
    if isinstance(args.api, str):
        args.api = [args.api]
    if "all" in args.api:
        args.api = tuple(API.keys())
    return args


if __name__ == "__main__":
    main(parse_args())
