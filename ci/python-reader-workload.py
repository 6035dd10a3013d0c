# SPDX-License-Identifier: Apache-2.0
"""The reader's workload through Python, for whichever ``kvikio`` package is importable
(upstream's kvikio-cu13 or this project's): CALLERS Python threads, each keeping DEPTH
``CuFile.pread`` futures in flight at random offsets of FILE, reading SIZE bytes each into
CuPy device memory (``device``) or NumPy host memory (``host``), for SECONDS; then synchronous
``pread().get()`` latencies of SIZE with one caller. Prints one line per point:

    pyreader <label> <mem> size=<bytes> callers=<n> depth=<n> reads/s=<r> GB/s=<g> p50_us=<l>

Usage: python3 python-reader-workload.py LABEL FILE MEM SIZES CALLERS DEPTH NTHREADS SECONDS
(SIZES comma-separated bytes). The same file runs against both packages (ci/python-compare.sh).
"""

import os
import random
import statistics
import sys
import threading
import time

import kvikio
import kvikio.defaults


def buffers(mem, count, size):
    if mem == "device":
        import cupy

        return [cupy.empty(size, dtype="u1") for _ in range(count)]
    import numpy

    return [numpy.empty(size, dtype="u1") for _ in range(count)]


def caller(f, bufs, size, file_size, seconds, seed, counts, errors, index):
    try:
        counts[index] = reads(f, bufs, size, file_size, seconds, random.Random(seed))
    except BaseException as e:  # reported by main, which fails
        errors.append(e)


def reads(f, bufs, size, file_size, seconds, rng):
    deadline = time.perf_counter() + seconds
    done = 0
    futures = [f.pread(b, size, rng.randrange(0, file_size - size)) for b in bufs]
    while time.perf_counter() < deadline:
        for i, fut in enumerate(futures):
            if fut.get() != size:
                raise RuntimeError("short read")
            done += 1
            futures[i] = f.pread(bufs[i], size, rng.randrange(0, file_size - size))
    for fut in futures:
        fut.get()
    return done


def main(argv):
    label, path, mem, sizes, callers, depth, nthreads, seconds = argv[1:9]
    callers, depth, nthreads, seconds = int(callers), int(depth), int(nthreads), float(seconds)
    kvikio.defaults.set("num_threads", nthreads)
    with kvikio.CuFile(path, "r") as f:
        file_size = os.path.getsize(path)
        for size in (int(s) for s in sizes.split(",")):
            bufs = [buffers(mem, depth, size) for _ in range(callers)]
            counts, errors = [0] * callers, []
            threads = [threading.Thread(target=caller, args=(f, bufs[c], size, file_size, seconds,
                                                              1000 + c, counts, errors, c))
                       for c in range(callers)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - t0
            if errors:
                raise errors[0]
            rate = sum(counts) / elapsed
            # One caller, one read at a time: the latency of a synchronous read.
            rng = random.Random(7)
            one = bufs[0][0]
            lat = []
            for _ in range(300):
                offset = rng.randrange(0, file_size - size)
                t1 = time.perf_counter()
                f.pread(one, size, offset).get()
                lat.append((time.perf_counter() - t1) * 1e6)
            print(f"pyreader {label} {mem} size={size} callers={callers} depth={depth} "
                  f"reads/s={rate:.0f} GB/s={rate * size / 1e9:.2f} "
                  f"p50_us={statistics.median(lat):.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv)
