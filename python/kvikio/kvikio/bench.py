# SPDX-License-Identifier: Apache-2.0
"""``python -m kvikio.bench``: the measurements of ``kvikio_bench``, through the Python API.

    python -m kvikio.bench local read|write --file F --size 1GiB --threads 1,4 --mem host
    python -m kvikio.bench remote read --url URL --threads 1,4 --mem host

Each point runs ``--repeat`` times; the table gives the median, minimum and maximum GB/s
(1e9 bytes/s) beside a baseline from the same run (local: a plain ``os.pread``/``os.pwrite``
loop of the same task size in as many Python threads; remote: a plain single-stream GET with
urllib), in kvikio_bench's columns. Device memory (``--mem device``) needs CuPy.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import time
import urllib.request

import numpy as np

import kvikio

_UNITS = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "KB": 10**3,
          "MB": 10**6, "GB": 10**9}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"a size like 8GiB, 4MiB or 100, got {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def _buffer(size: int, mem: str):
    if mem == "host":
        return np.empty(size, np.uint8)
    try:
        import cupy
    except ImportError as e:
        raise SystemExit("--mem device needs CuPy") from e
    return cupy.empty(size, np.uint8)


def _row(op, mem, variant, threads, task, size, seconds):
    g = sorted(size / s / 1e9 for s in seconds)
    print(f"{op:<6} {mem:<6} {variant:<26} {threads:>7} {task >> 20:>5} "
          f"{g[len(g) // 2]:>9.2f} {g[0]:>9.2f} {g[-1]:>9.2f}")


def _header():
    print(f"\n{'op':<6} {'mem':<6} {'variant':<26} {'threads':>7} {'task':>5} "
          f"{'median':>9} {'min':>9} {'max':>9}")
    print(f"{'':<6} {'':<6} {'':<26} {'':>7} {'MiB':>5} {'GB/s':>9} {'GB/s':>9} {'GB/s':>9}")


def _timed(run, repeat):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        out.append(time.perf_counter() - t0)
    return out


def _plain_loop(threads, size, task, io):
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda off: io(off, min(task, size - off)), range(0, size, task)))


def local(args) -> None:
    size, task = args.size, args.task_size
    if args.op == "read" and (not os.path.exists(args.file) or os.path.getsize(args.file) < size):
        with open(args.file, "wb") as f:  # random bytes, in 64 MiB steps
            rng = np.random.default_rng(0)
            for off in range(0, size, 64 << 20):
                f.write(rng.integers(0, 256, min(64 << 20, size - off), np.uint8).tobytes())
    buf = _buffer(size, args.mem)
    host = np.empty(size, np.uint8) if args.mem == "host" else None
    _header()
    for threads in args.threads:
        with kvikio.defaults.set({"num_threads": threads, "task_size": task}):
            flags = "r" if args.op == "read" else "w"
            with kvikio.CuFile(args.file, flags) as f:
                op = f.pread if args.op == "read" else f.pwrite
                _row(args.op, args.mem, "kvikio (python)", threads, task, size,
                     _timed(lambda: op(buf, size, 0, task).get(), args.repeat))
        if host is not None:
            fd = os.open(args.file, os.O_RDONLY if args.op == "read" else os.O_WRONLY | os.O_CREAT)
            try:
                mv = memoryview(host)
                if args.op == "read":
                    io = lambda off, n: os.preadv(fd, [mv[off:off + n]], off)  # noqa: E731
                else:
                    io = lambda off, n: os.pwrite(fd, mv[off:off + n], off)  # noqa: E731
                _row(args.op, args.mem, f"baseline python p{args.op}", threads, task, size,
                     _timed(lambda: _plain_loop(threads, size, task, io), args.repeat))
            finally:
                os.close(fd)


def remote(args) -> None:
    with kvikio.RemoteFile.open(args.url) as f:
        size = f.nbytes()
    buf = _buffer(size, args.mem)
    _header()
    for threads in args.threads:
        with kvikio.defaults.set({"num_threads": threads, "task_size": args.task_size}):
            with kvikio.RemoteFile.open(args.url, nbytes=size) as f:
                _row("read", args.mem, "kvikio (python)", threads, args.task_size, size,
                     _timed(lambda: f.pread(buf, size, 0, args.task_size).get(), args.repeat))

    def get():
        with urllib.request.urlopen(args.url) as r:
            while r.read(16 << 20):
                pass

    _row("read", "host", "baseline urllib GET", 1, args.task_size, size,
         _timed(get, args.repeat))


def main(argv=None) -> None:
    # The module's docstring without its reStructuredText literals' backquotes.
    parser = argparse.ArgumentParser(prog="python -m kvikio.bench",
                                     description=__doc__.replace("``", ""),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    threads = lambda t: [int(x) for x in t.split(",")]  # noqa: E731
    lp = sub.add_parser("local", help="local files: CuFile.pread/pwrite")
    lp.add_argument("op", choices=["read", "write"], help="read the file, or write it")
    lp.add_argument("--file", required=True,
                    help="the file (a read creates it with random bytes if it is too small)")
    lp.add_argument("--size", type=parse_size, default=parse_size("1GiB"),
                    help="bytes per run, e.g. 256MiB (default 1GiB)")
    rp = sub.add_parser("remote", help="remote objects: RemoteFile.pread")
    rp.add_argument("op", choices=["read"], help="read the object")
    rp.add_argument("--url", required=True, help="the object's URL (http, https, s3, ...)")
    for p in (lp, rp):
        p.add_argument("--threads", type=threads, default=[1, 2, 4, 8, 16],
                       help="thread pool sizes to sweep, e.g. 1,4,16 (default 1,2,4,8,16)")
        p.add_argument("--task-size", type=parse_size, default=parse_size("4MiB"),
                       help="the task size of the reads and writes (default 4MiB)")
        p.add_argument("--mem", choices=["host", "device"], default="host",
                       help="read into host (NumPy) or device (CuPy) memory (default host)")
        p.add_argument("--repeat", type=int, default=3,
                       help="runs per point; the median is reported (default 3)")
    args = parser.parse_args(argv)
    (local if args.command == "local" else remote)(args)


if __name__ == "__main__":
    main()
