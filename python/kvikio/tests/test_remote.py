# SPDX-License-Identifier: Apache-2.0
"""RemoteFile against a real nginx (conftest's ``nginx`` fixture): reads of host and device
memory, parallel and stream-ordered, both transports; errors."""

import threading

import numpy as np
import pytest
from conftest import POISON

import kvikio


@pytest.fixture(params=["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def transport(request):
    with kvikio.defaults.set("remote_backend", request.param):
        yield request.param


def test_read_host(nginx, transport):
    url, content = nginx
    with kvikio.RemoteFile.open_http(f"{url}/data.bin") as f:
        assert f.nbytes() == content.size
        assert f.remote_endpoint_type() == kvikio.RemoteEndpointType.HTTP
        out = np.full(content.size + 16, POISON, np.uint8)
        with kvikio.defaults.set({"num_threads": 4, "task_size": 1 << 20}):
            assert f.pread(out[: content.size - 3], file_offset=3).get() == content.size - 3
        assert np.array_equal(out[: content.size - 3], content[3:])
        assert (out[content.size - 3:] == POISON).all()
        small = bytearray(10)
        assert f.read(small, file_offset=100) == 10
        assert bytes(small) == content[100:110].tobytes()


def test_read_device(nginx, transport, device):
    url, content = nginx
    f = kvikio.RemoteFile.open(f"{url}/data.bin", nbytes=content.size)
    dev = device.empty(content.size)
    assert f.read(dev) == content.size
    assert np.array_equal(device.to_host(dev), content)
    dev2 = device.empty(4096)
    assert f.read_async(dev2, device.stream(), 4096, 1000).check_bytes_done() == 4096
    assert np.array_equal(device.to_host(dev2), content[1000:5096])


def test_default_stream_from_a_thread_without_a_context(nginx, transport, device):
    """As CuFile's: the default stream from a thread with no current context reads on the
    destination's context and waits there."""
    url, content = nginx
    f = kvikio.RemoteFile.open(f"{url}/data.bin", nbytes=content.size)
    dev = device.empty(4096)
    results = []

    def read():
        try:
            results.append(f.read_async(dev, None, 4096, 333).check_bytes_done())
        except Exception as e:  # reported below, in the test's thread
            results.append(e)

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    assert results == [4096]
    assert np.array_equal(device.to_host(dev), content[333:4429])


def test_errors(nginx):
    url, content = nginx
    with pytest.raises(RuntimeError, match="404"):
        kvikio.RemoteFile.open_http(f"{url}/missing.bin")
    f = kvikio.RemoteFile.open_http(f"{url}/data.bin")
    with pytest.raises(ValueError):
        f.read(np.zeros(100, np.uint8), file_offset=content.size - 10)
    with pytest.raises(RuntimeError, match="Unsupported endpoint URL"):
        kvikio.RemoteFile.open(f"{url}/data.bin", allow_list=[kvikio.RemoteEndpointType.S3])
    assert kvikio.is_remote_file_available()


def test_serve_command_answers_remote_reads(tmp_path):
    """``python -m kvikio.utils serve``: the documented local server for C++ and Python."""
    import subprocess
    import sys
    import urllib.request

    data = np.random.default_rng(5).integers(0, 256, 300_000, dtype=np.uint8)
    (tmp_path / "f.bin").write_bytes(data.tobytes())
    server = subprocess.Popen(
        [sys.executable, "-m", "kvikio.utils", "serve", str(tmp_path), "--port", "0",
         "--delay-ms", "5"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith(f"serving {tmp_path} at http://127.0.0.1:"), line
        assert "5 ms before each response" in line, line
        url = line.split(" at ")[1].split(" ")[0] + "f.bin"
        with kvikio.RemoteFile.open_http(url) as f:
            assert f.nbytes() == data.size
            out = np.full(data.size + 2, POISON, dtype=np.uint8)
            assert f.pread(out[1:-1], 200_000, 7).get() == 200_000
            assert (out[1:200_001] == data[7:200_007]).all()
            assert out[0] == POISON and (out[200_001:] == POISON).all()
        tail = urllib.request.Request(url, headers={"Range": "bytes=-10"})
        with urllib.request.urlopen(tail) as r:
            assert r.status == 206 and r.read() == data[-10:].tobytes()
    finally:
        server.terminate()
        server.wait(timeout=10)
