# SPDX-License-Identifier: Apache-2.0
"""CuFile: reads and writes of host (NumPy, bytes, bytearray) and device memory, parallel and
stream-ordered, checked byte for byte against what numpy wrote/reads, with poisoned
destinations whose untouched parts must stay poisoned."""

import threading

import numpy as np
import pytest
from conftest import POISON, pattern

import kvikio


@pytest.mark.parametrize("threads", [1, 4])
def test_pread_host(data_file, threads):
    path, content = data_file
    with kvikio.defaults.set({"num_threads": threads, "task_size": 1 << 20}):
        out = np.full(content.size + 64, POISON, np.uint8)
        with kvikio.CuFile(path) as f:
            fut = f.pread(out[:content.size - 100], file_offset=100)
            assert fut.get() == content.size - 100
            assert fut.done()
            assert fut.get() == content.size - 100  # again: the same answer
        assert np.array_equal(out[:content.size - 100], content[100:])
        assert (out[content.size - 100:] == POISON).all()


def test_pwrite_then_plain_read(tmp_path):
    data = pattern(2 * 1024 * 1024 + 3, 11)
    path = tmp_path / "w.bin"
    with kvikio.CuFile(path, "w") as f:
        assert f.pwrite(data, task_size=1 << 19).get() == data.size
        assert f.write(b"tail", file_offset=data.size) == 4
        assert f.nbytes() == data.size + 4
    raw = path.read_bytes()
    assert raw[: data.size] == data.tobytes()
    assert raw[data.size:] == b"tail"


def test_read_into_bytearray_and_size(data_file):
    path, content = data_file
    buf = bytearray(100)
    with kvikio.CuFile(path) as f:
        assert f.read(buf, 10, file_offset=5) == 10
    assert bytes(buf[:10]) == content[5:15].tobytes()
    assert bytes(buf[10:]) == bytes(90)


def test_device_round_trip(device, data_file, tmp_path):
    path, content = data_file
    dev = device.empty(content.size)
    with kvikio.CuFile(path) as f:
        assert f.pread(dev).get() == content.size
    assert np.array_equal(device.to_host(dev), content)
    out = tmp_path / "dev.bin"
    with kvikio.CuFile(out, "w") as f:
        assert f.write(dev) == content.size
    assert out.read_bytes() == content.tobytes()


def test_stream_ordered(device, data_file):
    path, content = data_file
    dev = device.empty(content.size + 4096)
    stream = device.stream()
    with kvikio.CuFile(path, "r+") as f:
        fut = f.read_async(dev, stream, size=content.size - 7, file_offset=7, dev_offset=4096)
        assert fut.check_bytes_done() == content.size - 7
        host = device.to_host(dev)
        assert (host[:4096] == POISON).all()
        assert np.array_equal(host[4096:4096 + content.size - 7], content[7:])
        assert (host[4096 + content.size - 7:] == POISON).all()
        # Write back what was read, at offset 0, and read it with numpy.
        assert f.raw_write_async(dev, stream, content.size - 7, 0, 4096).check_bytes_done() == (
            content.size - 7
        )
    back = np.fromfile(path, np.uint8)
    assert np.array_equal(back[: content.size - 7], content[7:])


def test_default_stream_from_a_thread_without_a_context(device, data_file):
    """The default stream (None) names the current context's: a thread with none reads on its
    destination's, and waits there (the bytes once landed and the wait then failed)."""
    path, content = data_file
    dev = device.empty(content.size + 64)
    dev2 = device.empty(100)
    results = []

    def read():
        try:
            with kvikio.CuFile(path, "r") as f:
                results.append(f.read_async(dev, None, content.size - 5, 5, 64).check_bytes_done())
                results.append(f.raw_read(dev2, 100, 7))
        except Exception as e:  # reported below, in the test's thread
            results.append(e)

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    assert results == [content.size - 5, 100]
    assert np.array_equal(device.to_host(dev2), content[7:107])
    host = device.to_host(dev)
    assert (host[:64] == POISON).all()
    assert np.array_equal(host[64:64 + content.size - 5], content[5:])
    assert (host[64 + content.size - 5:] == POISON).all()


def test_futures_wait_from_other_threads(data_file):
    path, content = data_file
    out = np.zeros(content.size, np.uint8)
    with kvikio.CuFile(path) as f:
        fut = f.pread(out)
        results = []
        threads = [threading.Thread(target=lambda: results.append(fut.get())) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == [content.size] * 4
    assert np.array_equal(out, content)


def test_errors(data_file, tmp_path, device):
    path, content = data_file
    with pytest.raises(RuntimeError):
        kvikio.CuFile(tmp_path / "missing.bin")
    with pytest.raises(ValueError, match="Open flag .a. isn.t supported"):
        kvikio.CuFile(path, "a")
    with kvikio.CuFile(path) as f:
        with pytest.raises(RuntimeError, match="POSIX error on pread: EOF"):
            f.read(np.zeros(100, np.uint8), file_offset=content.size - 10)
        with pytest.raises(ValueError, match="non-contiguous"):
            f.read(np.zeros((10, 10), np.uint8)[:, ::2])
        with pytest.raises(ValueError, match="read-only"):
            f.read(b"immutable")
        with pytest.raises(ValueError, match="does not fit"):
            f.read(np.zeros(10, np.uint8), 11)
        with pytest.raises(ValueError, match="device memory"):
            f.read_async(np.zeros(10, np.uint8), None)
        with pytest.raises(TypeError, match="no buffer"):
            f.read(object())
    assert f.closed


class _ProtocolStream:
    """A stream through the CUDA stream protocol only (``__cuda_stream__``)."""

    def __init__(self, handle):
        self._handle = handle

    def __cuda_stream__(self):
        return (0, self._handle)


def test_stream_kinds(device, data_file):
    path, content = data_file
    raw = device.stream()
    handle = raw if isinstance(raw, int) else raw.ptr
    with kvikio.CuFile(path) as f:
        for stream in (handle, _ProtocolStream(handle), None, raw):
            dev = device.empty(4096)
            assert f.read_async(dev, stream, file_offset=9).check_bytes_done() == 4096
            assert np.array_equal(device.to_host(dev), content[9:4105])
        with pytest.raises(TypeError, match="no stream"):
            f.read_async(device.empty(16), "stream")


def test_torch_tensor(data_file):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed here")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    path, content = data_file
    t = torch.full((content.size,), POISON, dtype=torch.uint8, device="cuda")
    with kvikio.CuFile(path) as f:
        assert f.read(t) == content.size
    assert np.array_equal(t.cpu().numpy(), content)
    with pytest.raises(ValueError, match="non-contiguous"):
        kvikio.CuFile(path).read(t[: content.size // 1024 * 1024].view(-1, 1024)[:, ::2])


def test_driver_properties_read_back_what_was_set():
    """A property set is the property got, nested sets undone in order (cuFile without nvidia-fs
    goes on reporting its starting values)."""
    import kvikio.cufile_driver as driver
    try:
        before = driver.get("poll_thresh_size")
    except RuntimeError as e:
        pytest.skip(f"needs a usable cuFile: {e}")
    with driver.set("poll_thresh_size", 1024):
        assert driver.get("poll_thresh_size") == 1024
        with driver.set({"poll_thresh_size": 2048, "max_device_cache_size": 4096}):
            assert driver.get("poll_thresh_size") == 2048
            assert driver.get("max_device_cache_size") == 4096
        assert driver.get("poll_thresh_size") == 1024
    assert driver.get("poll_thresh_size") == before
