# SPDX-License-Identifier: Apache-2.0
"""Reading with KvikIO from every worker of a Dask cluster.

A program that outgrows one process spreads its reads over the worker processes of a
``dask.distributed`` cluster: here, byte ranges of local files or of one remote object (HTTP,
S3, WebHDFS: any URL ``kvikio.RemoteFile.open`` takes) are read in parallel, each by a task on
some worker that opens the source and reads its range through KvikIO, into host memory or into
the device memory of the worker's GPU. Each task returns the SHA-256 of the bytes it read, so
that the caller can check them without shipping the data back.

    python dask_read.py FILE_OR_URL [...] [--workers N] [--gpus G] [--range-size BYTES]

runs a ``LocalCluster`` of N worker processes on this machine (with G GPUs, worker i reads into
GPU i % G) and prints one line per range. The same ``read_ranges`` runs on a cluster of several
machines: pass a ``Client`` of that cluster instead (docs/dask.md).
"""

from __future__ import annotations

import argparse
import hashlib

import numpy as np
from dask.distributed import Client, LocalCluster, WorkerPlugin

import kvikio
import kvikio.defaults


class KvikIOSettings(WorkerPlugin):
    """KvikIO's settings in every worker process (upstream's names: ``num_threads``,
    ``task_size``, ...), applied once per worker: at registration on the workers running then
    (``register_plugin`` returns after), at start on those that join later."""

    def __init__(self, **settings):
        self.settings = settings

    def setup(self, worker):
        for name, value in self.settings.items():
            kvikio.defaults.set(name, value)


def _open(source: str):
    """A URL (http(s), s3, webhdfs...) as a kvikio.RemoteFile, a path as a kvikio.CuFile."""
    return kvikio.RemoteFile.open(source) if "://" in source else kvikio.CuFile(source, "r")


def read_range(source: str, offset: int, nbytes: int, gpu: int | None = None) -> str:
    """Reads ``nbytes`` at ``offset`` of ``source`` (a path or a URL) through KvikIO, into host
    memory or, when ``gpu`` is a device ordinal, into that GPU's memory; returns the bytes'
    SHA-256 (hex). A range past the end is an error (KvikIO's), and so is a short read."""
    if gpu is None:
        buf = np.empty(nbytes, dtype=np.uint8)
    else:
        import cupy

        # The worker's GPU stays current on this thread (a `with Device()` block would make
        # device 0 current again on leaving, creating a context there in every worker).
        cupy.cuda.Device(gpu).use()
        buf = cupy.empty(nbytes, dtype=np.uint8)
    with _open(source) as f:
        got = f.pread(buf, nbytes, offset).get()
    if got != nbytes:
        raise OSError(f"{source}: read {got} of {nbytes} bytes at offset {offset}")
    host = buf if gpu is None else buf.get()
    return hashlib.sha256(host.tobytes()).hexdigest()


def split(size: int, range_size: int) -> list[tuple[int, int]]:
    """(offset, nbytes) of consecutive ranges covering ``size`` bytes."""
    return [(o, min(range_size, size - o)) for o in range(0, size, range_size)]


def read_ranges(client: Client, jobs: list[tuple[str, int, int]], gpus: int = 0) -> list[str]:
    """Reads each (source, offset, nbytes) of ``jobs`` on the cluster of ``client``, spread
    evenly over its workers; returns the SHA-256 of each, in the order of ``jobs``.

    With ``gpus`` > 0, the workers (sorted by name) read into GPU 0, 1, ..., gpus - 1, 0, ...:
    one worker per GPU when there are as many workers as GPUs."""
    client.wait_for_workers(1)
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"].items(),
                     key=lambda item: str(item[1]["name"]))
    futures = []
    for i, (source, offset, nbytes) in enumerate(jobs):
        w = i % len(workers)
        gpu = w % gpus if gpus else None
        futures.append(client.submit(read_range, source, offset, nbytes, gpu,
                                     workers=[workers[w][0]], pure=False))
    return client.gather(futures)


def source_size(source: str) -> int:
    with _open(source) as f:
        return f.nbytes()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="files or URLs")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--gpus", type=int, default=0, help="GPUs to read into (0: host)")
    parser.add_argument("--threads", type=int, default=4, help="KvikIO threads per worker")
    parser.add_argument("--range-size", type=int, default=64 << 20, help="bytes per task")
    args = parser.parse_args(argv)
    jobs = [(s, o, n) for s in args.sources
            for o, n in split(source_size(s), args.range_size)]
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            client.register_plugin(KvikIOSettings(num_threads=args.threads))
            for (source, offset, nbytes), digest in zip(jobs, read_ranges(client, jobs,
                                                                           args.gpus)):
                print(f"{source} [{offset}, {offset + nbytes}) sha256 {digest}")


if __name__ == "__main__":
    main()
