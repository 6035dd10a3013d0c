# SPDX-License-Identifier: Apache-2.0
"""S3 read benchmark (upstream's ``s3_io``): ``RemoteFile.open_s3_url("s3://<bucket>/data")``
+ ``read``, credentials and server from the AWS_* environment (``AWS_ENDPOINT_URL`` for a
local server such as MinIO), or, with ``--use-bundled-server``, moto's S3 server started here on
loopback (slow: for trying the benchmark, not for measuring S3). The object is uploaded first
with boto3 where it is importable; otherwise it must exist, holding ``--nelem`` items of
``--dtype`` (``numpy.arange``).

    AWS_ENDPOINT_URL=http://127.0.0.1:9000 python -m kvikio.benchmarks.s3_io -n 100000000 -t 8
    python -m kvikio.benchmarks.s3_io --use-bundled-server -n 1000000
"""

from __future__ import annotations

import argparse
import contextlib
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


@contextlib.contextmanager
def bundled_server():
    """moto's S3 server (``moto[server]``) on a free loopback port for the life of the block, as
    AWS_ENDPOINT_URL, with credentials of its own: the caller's AWS_* credentials, session
    token and profile are set aside meanwhile, so none of them is sent to it."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % server.get_host_and_port()[1],
           "AWS_ACCESS_KEY_ID": "kvikio-bench-key", "AWS_SECRET_ACCESS_KEY": "kvikio-bench-secret",
           "AWS_DEFAULT_REGION": "us-east-1"}
    unset = ("AWS_SESSION_TOKEN", "AWS_PROFILE")
    saved = {k: os.environ.get(k) for k in (*env, *unset)}
    os.environ.update(env)
    for k in unset:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
                        help="Start and use a local (slow) S3 server: moto's, which needs "
                             "moto[server] and boto3.")
    parser.add_argument("--bundled-server-lifetime", metavar="SECONDS", default=3600, type=int,
                        help="Upper bound on the bundled server's life (default: %(default)s); "
                             "here it stops when the benchmark ends.")
    parser.add_argument("--bucket", metavar="NAME", default="kvikio-s3-benchmark",
                        help="Name of the AWS S3 bucket to use (default: %(default)s).")
    parser.add_argument("--api", metavar="API", default="all", nargs="+",
                        choices=tuple(API.keys()) + UNSUPPORTED + ("all",),
                        help="List of APIs to use {%(choices)s} (default: %(default)s).")
    args = parser.parse_args(argv)
    if isinstance(args.api, str):
        args.api = [args.api]
    if "all" in args.api:
        args.api = tuple(API.keys())
    return args


def run(argv=None) -> None:
    args = parse_args(argv)
    with bundled_server() if args.use_bundled_server else contextlib.nullcontext():
        main(args)


if __name__ == "__main__":
    run()
