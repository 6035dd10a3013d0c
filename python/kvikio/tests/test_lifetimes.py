# SPDX-License-Identifier: Apache-2.0
"""Hostile cases, lifetimes: a future dropped while its read runs, and the destination given up
with it, must not let a byte land after the destination was freed (docs/python.md, "What a
Python user may drop"). Each case runs in a child process, because the failure it looks for is
a write into freed memory: the child reads a file slowly (one pool thread, 4 KiB tasks) into a
buffer, drops the future and the buffer at once, then fills new poisoned buffers of the same
size (which the allocator hands the freed memory) and checks that none of them changes; it
prints CLEAN or CORRUPTED. A crash (the write landing in unmapped memory) fails too, as does
the simulator's report of a copy into freed device memory. CuFile, Mmap and RemoteFile (nginx),
host and device memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import pattern

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])  # the tests folder: conftest's device memory
import numpy as np
import kvikio, kvikio.defaults
from conftest import DeviceArray, cupy

kind, mem, source, n = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
POISON = 0xEE
kvikio.defaults.set({"num_threads": 1, "task_size": 4096, "bounce_buffer_size": 4096})


def poisoned():
    if mem == "host":
        return np.full(n, POISON, np.uint8)
    if cupy is not None:
        a = cupy.full(n, POISON, cupy.uint8)
        cupy.cuda.runtime.deviceSynchronize()
        return a
    return DeviceArray(n).copy_from_host(np.full(n, POISON, np.uint8))


def to_host(a):
    if mem == "host":
        return a
    return a.get() if cupy is not None else a.to_host()


if kind == "cufile":
    handle = kvikio.CuFile(source, "r")
elif kind == "mmap":
    handle = kvikio.Mmap(source, "r")
else:
    handle = kvikio.RemoteFile.open_http(source)
for _ in range(10):
    buf = poisoned()
    handle.pread(buf, n, 0)  # the future is dropped at once
    del buf
    others = [poisoned() for _ in range(4)]
    time.sleep(0.02)
    for other in others:
        if (to_host(other) != POISON).any():
            print("CORRUPTED", flush=True)
            sys.exit(3)
print("CLEAN", flush=True)
"""

SIZE = 1 << 20


@pytest.fixture(scope="module")
def data_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("lifetimes") / "data.bin"
    pattern(SIZE, 77).tofile(path)
    return path


@pytest.mark.parametrize("kind, mem", [("cufile", "host"), ("cufile", "device"), ("mmap", "host"),
                                       ("remote", "host"), ("remote", "device")])
def test_a_dropped_future_never_writes_into_freed_memory(kind, mem, data_path, request):
    if kind == "remote":
        url, content = request.getfixturevalue("nginx")
        source = f"{url}/data.bin"
    else:
        source = str(data_path)
    tests = str(Path(__file__).resolve().parent)
    child = subprocess.run([sys.executable, "-c", CHILD, tests, kind, mem, source, str(SIZE)],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert child.returncode == 0 and child.stdout.strip() == "CLEAN", (
        f"exit {child.returncode}\n{child.stdout}\n{child.stderr[-3000:]}")
    assert "misuse" not in child.stderr, child.stderr[-3000:]


def test_a_dropped_future_keeps_its_error_to_itself(tmp_path):
    import kvikio

    path = tmp_path / "short.bin"
    pattern(1000, 5).tofile(path)
    import numpy as np

    buf = np.empty(4000, np.uint8)
    with kvikio.CuFile(path, "r") as f:
        f.pread(buf, 4000, 0)  # past the end: its error goes with the dropped future
        assert f.pread(buf, 1000, 0).get() == 1000
    np.testing.assert_array_equal(buf[:1000], pattern(1000, 5))
