# SPDX-License-Identifier: Apache-2.0
"""Batch reads from Python: ``kvikio.file_batch_read`` / ``CuFile.batch_read`` and
``kvikio.remote_batch_read`` / ``RemoteFile.batch_read`` (against the real nginx of conftest),
into host and device memory, with and without merging; every destination poisoned with a guard
behind it, bytes compared with the file's content; bad requests refused before anything is
read."""

import numpy as np
import pytest
from conftest import POISON

import kvikio

# Ranges a columnar reader asks for: a few sizes, small gaps, one overlap, one past the task size.
LAYOUT = [(100, 4000), (4200, 300), (4500, 1), (4600, 20000), (30000, 70000), (100100, 5000),
          (102000, 6000), (120000, 9)]
GUARD = 16


def host_destinations():
    return [np.full(size + GUARD, POISON, np.uint8) for _, size in LAYOUT]


def check(futures, outs, content, to_host=lambda a: a):
    assert len(futures) == len(LAYOUT)
    for (offset, size), future, out in zip(LAYOUT, futures, outs):
        assert future.get() == size
        got = to_host(out)
        assert np.array_equal(got[:size], content[offset:offset + size]), (offset, size)
        assert (got[size:] == POISON).all(), (offset, size)


@pytest.mark.parametrize("gap", [None, 0, 300])
def test_file_batch_read_host(data_file, gap):
    path, content = data_file
    with kvikio.CuFile(path, "r") as f:
        outs = host_destinations()
        futures = f.batch_read([(o, size, off) for o, (off, size) in zip(outs, LAYOUT)],
                               coalesce_max_gap=gap, task_size=64 << 10)
        check(futures, outs, content)


def test_file_batch_read_device_and_several_files(data_file, tmp_path, device):
    path, content = data_file
    other = content[::-1].copy()
    other_path = tmp_path / "other.bin"
    other.tofile(other_path)
    with kvikio.CuFile(path, "r") as a, kvikio.CuFile(other_path, "r") as b:
        outs = [device.empty(size + GUARD) for _, size in LAYOUT]
        host = host_destinations()
        requests = []
        for (off, size), d, h in zip(LAYOUT, outs, host):
            requests += [(a, d, size, off), (b, h, size, off)]
        futures = kvikio.file_batch_read(requests, coalesce_max_gap=1000)
        check(futures[0::2], outs, content, device.to_host)
        check(futures[1::2], host, other)


def test_dropped_futures_wait_for_their_reads(data_file):
    """Futures dropped at once (never stored) still wait for their reads as they go: the bytes
    are in place when the call's statement ends, and no read writes into a buffer later."""
    path, content = data_file
    with kvikio.CuFile(path, "r") as f:
        for gap in (None, 300):
            outs = host_destinations()
            kvikio.file_batch_read([(f, o, size, off) for o, (off, size) in zip(outs, LAYOUT)],
                                   coalesce_max_gap=gap, task_size=64 << 10)
            for o, (off, size) in zip(outs, LAYOUT):
                assert np.array_equal(o[:size], content[off:off + size]), (gap, off)
                assert (o[size:] == POISON).all()


def test_file_batch_read_refuses_bad_requests_before_reading(data_file):
    path, content = data_file
    good = np.full(100, POISON, np.uint8)
    with kvikio.CuFile(path, "r") as f:
        with pytest.raises(ValueError, match="request 1 runs past the end"):
            kvikio.file_batch_read([(f, good, 100, 0), (f, bytearray(100), 100, content.size)])
        with pytest.raises(TypeError, match="request 1 names a str"):
            kvikio.file_batch_read([(f, good), ("x", good)])
        with pytest.raises(TypeError, match="must be a tuple"):
            kvikio.file_batch_read([(f, good), [f, good]])
        with pytest.raises(ValueError, match="does not fit"):
            kvikio.file_batch_read([(f, good, 200, 0)])
        with pytest.raises(OverflowError):
            kvikio.file_batch_read([(f, good, 10, -1)])
        with pytest.raises(ValueError, match="task_size"):
            kvikio.file_batch_read([(f, good, 10, 0)], task_size=0)
        assert (good == POISON).all()
    with pytest.raises(RuntimeError):
        kvikio.file_batch_read([(f, good)])
    assert kvikio.file_batch_read([]) == []


@pytest.fixture(params=["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def transport(request):
    with kvikio.defaults.set("remote_backend", request.param):
        yield request.param


@pytest.mark.parametrize("gap", [None, 300])
def test_remote_batch_read(nginx, transport, device, gap):
    url, content = nginx
    f = kvikio.RemoteFile.open_http(f"{url}/data.bin")
    host = host_destinations()
    dev = [device.empty(size + GUARD) for _, size in LAYOUT]
    futures = f.batch_read([(o, size, off) for o, (off, size) in zip(host, LAYOUT)],
                           coalesce_max_gap=gap, task_size=64 << 10)
    check(futures, host, content)
    futures = kvikio.remote_batch_read([(f, d, size, off) for d, (off, size) in zip(dev, LAYOUT)],
                                       coalesce_max_gap=gap, task_size=64 << 10)
    check(futures, dev, content, device.to_host)


def test_remote_batch_read_refuses_bad_requests(nginx):
    url, content = nginx
    f = kvikio.RemoteFile.open_http(f"{url}/data.bin")
    good = np.full(100, POISON, np.uint8)
    with pytest.raises(ValueError, match="request 1 runs past the end"):
        kvikio.remote_batch_read([(f, good), (f, bytearray(10), 10, content.size)])
    with pytest.raises(TypeError, match="not a RemoteFile"):
        kvikio.remote_batch_read([(f, good), (object(), good)])
    assert (good == POISON).all()
