# SPDX-License-Identifier: Apache-2.0
"""The Dask example (python/kvikio/examples/dask_read.py, shown in docs/dask.md) on a real
``dask.distributed`` LocalCluster of worker processes: byte ranges of several files and of one
object served by nginx, read through KvikIO on the workers into host memory and, where CuPy is
importable (the GPU machine), into each worker's GPU; every range's SHA-256 checked against the
bytes read here with plain Python I/O."""

from __future__ import annotations

import hashlib
import importlib.util
import urllib.request
from pathlib import Path

import pytest
from conftest import pattern

from dask.distributed import Client, LocalCluster

try:
    import cupy
except ImportError:  # CI: no CuPy
    cupy = None

_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dask_read.py"
_spec = importlib.util.spec_from_file_location("dask_read", _EXAMPLE)
dask_read = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dask_read)

WORKERS = 2


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        c.register_plugin(dask_read.KvikIOSettings(num_threads=3, task_size=64 << 10))
        yield c


def _expected(data: bytes, jobs):
    return [hashlib.sha256(data[o:o + n]).hexdigest() for _, o, n in jobs]


def test_workers_take_the_settings(client):
    def settings():
        import kvikio.defaults

        return kvikio.defaults.get("num_threads"), kvikio.defaults.get("task_size")

    got = client.run(settings)
    assert len(got) == WORKERS and set(got.values()) == {(3, 64 << 10)}


def test_ranges_of_several_files_on_the_host(client, tmp_path):
    jobs, contents = [], {}
    for i, size in enumerate((3_000_001, 1, 777_777)):
        path = tmp_path / f"part-{i}.bin"
        contents[str(path)] = pattern(size, 40 + i).tobytes()
        path.write_bytes(contents[str(path)])
        jobs += [(str(path), o, n) for o, n in dask_read.split(size, 500_000)]
    got = dask_read.read_ranges(client, jobs)
    expected = [hashlib.sha256(contents[s][o:o + n]).hexdigest() for s, o, n in jobs]
    assert got == expected
    # Spread over both workers: each ran tasks.
    executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert len(executed) == WORKERS and all(n > 0 for n in executed.values()), executed


def test_ranges_of_one_remote_object(client, nginx):
    url, content = nginx
    with urllib.request.urlopen(f"{url}/data.bin") as r:  # an independent read of the object
        data = r.read()
    assert data == content.tobytes()
    jobs = [(f"{url}/data.bin", o, n) for o, n in dask_read.split(len(data), 1 << 20)]
    assert dask_read.read_ranges(client, jobs) == _expected(data, jobs)


def test_a_range_past_the_end_fails_on_the_client(client, tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(pattern(1000, 7).tobytes())
    with pytest.raises(RuntimeError, match=r"EOF .*200 bytes at offset 900 requested"):
        dask_read.read_ranges(client, [(str(path), 900, 200)])


@pytest.mark.skipif(cupy is None, reason="device memory on the workers needs CuPy")
def test_one_worker_per_gpu_reads_into_its_device(tmp_path):
    gpus = cupy.cuda.runtime.getDeviceCount()
    data = pattern(48 << 20, 9).tobytes()
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    jobs = [(str(path), o, n) for o, n in dask_read.split(len(data), 4 << 20)]
    with LocalCluster(n_workers=gpus, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        c.register_plugin(dask_read.KvikIOSettings(num_threads=4))
        assert dask_read.read_ranges(c, jobs, gpus=gpus) == _expected(data, jobs)


def test_the_command_line(tmp_path, capsys):
    path = tmp_path / "cli.bin"
    data = pattern(300_000, 8).tobytes()
    path.write_bytes(data)
    dask_read.main([str(path), "--workers", "1", "--threads", "2", "--range-size", "100000"])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{path} [{o}, {o + n}) sha256 {hashlib.sha256(data[o:o + n]).hexdigest()}"
                     for o, n in dask_read.split(len(data), 100_000)]
