# SPDX-License-Identifier: Apache-2.0
"""S3 read benchmark (upstream's ``s3_io``): ``RemoteFile.open_s3_url("s3://<bucket>/data")``
+ ``read``, credentials and server from the AWS_* environment (``AWS_ENDPOINT_URL`` for a
local server such as MinIO). The object is uploaded first with boto3 where it is importable;
otherwise it must exist, holding ``--nelem`` items of ``--dtype`` (``numpy.arange``).

    AWS_ENDPOINT_URL=http://127.0.0.1:9000 python -m kvikio.benchmarks.s3_io -n 100000000 -t 8
"""

from __future__ import annotations

import argparse
import os
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


def _upload(args, src) -> None:
    try:
        import boto3
    except ImportError:
        return  # the object must be there already
    client = boto3.client("s3", endpoint_url=os.getenv("AWS_ENDPOINT_URL"))
    try:
        client.create_bucket(Bucket=args.bucket)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    client.put_object(Bucket=args.bucket, Key="data", Body=src.tobytes())


def _read(args, xp, src) -> float:
    dst = xp.empty_like(xp.asarray(src))
    t0 = time.perf_counter()
    with kvikio.RemoteFile.open_s3_url(f"s3://{args.bucket}/data") as f:
        f.read(dst)
    elapsed = time.perf_counter() - t0
    got = dst.get() if hasattr(dst, "get") else dst
    numpy.testing.assert_array_equal(got, src)
    return elapsed


API = {
    "cupy": lambda args, src: _read(args, array_module("cupy"), src),
    "numpy": lambda args, src: _read(args, numpy, src),
}
UNSUPPORTED = ("cudf-kvikio", "cudf-fsspec")


def main(args) -> None:
    os.environ["KVIKIO_NTHREADS"] = str(args.nthreads)
    kvikio.defaults.set("num_threads", args.nthreads)
    src = numpy.arange(args.nelem, dtype=args.dtype)
    print("Remote S3 benchmark")
    print("--------------------------------------")
    print(f"nelem       | {args.nelem} ({format_bytes(src.nbytes)})")
    print(f"dtype       | {args.dtype}")
    print(f"nthreads    | {args.nthreads}")
    print(f"nruns       | {args.nruns}")
    print(f"file        | s3://{args.bucket}/data")
    print("======================================")
    _upload(args, src)
    for api in args.api:
        if api in UNSUPPORTED:
            print(f"{api}: needs cuDF, which this package does not drive; skipped")
            continue
        samples = [src.nbytes / API[api](args, src) for _ in range(args.nruns)]
        pprint_api_res(f"{api}-read", samples, harmonic=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Roundtrip benchmark")
    add_array_arguments(parser)
    parser.add_argument("--use-bundled-server", action="store_true",
                        help="Upstream starts a moto server; this package has none: use "
                             "AWS_ENDPOINT_URL with a local S3 server instead.")
    parser.add_argument("--bundled-server-lifetime", metavar="SECONDS", default=3600, type=int,
                        help="Lifetime of the bundled server (unused here).")
    parser.add_argument("--bucket", metavar="NAME", default="kvikio-s3-benchmark",
                        help="Name of the AWS S3 bucket to use (default: %(default)s).")
    parser.add_argument("--api", metavar="API", default="all", nargs="+",
                        choices=tuple(API.keys()) + UNSUPPORTED + ("all",),
                        help="List of APIs to use {%(choices)s} (default: %(default)s).")
    args = parser.parse_args(argv)
    if args.use_bundled_server:
        parser.error("--use-bundled-server needs moto, which this package does not use; set "
                     "AWS_ENDPOINT_URL to a local S3 server (MinIO, s3rver) instead")
    if isinstance(args.api, str):
        args.api = [args.api]
    if "all" in args.api:
        args.api = tuple(API.keys())
    return args


if __name__ == "__main__":
    main(parse_args())
