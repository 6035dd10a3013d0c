# SPDX-License-Identifier: Apache-2.0
"""Every device at once from one Python process: CuPy arrays on devices 0..N-1 on the GPU
machine; the simulator's devices in CI, where the suite runs with CUDASIM_DEVICES=2. Device 0
stays current throughout: kvikio takes each array's (or stream's) own context. Each device's
bytes are compared with the file, and the poison around them must stay."""

import numpy as np
import pytest

import kvikio
import kvikio.defaults

from conftest import POISON, device_count, on_simulator, pattern


@pytest.fixture
def two_devices():
    n = device_count()
    if n < 2:
        if on_simulator():
            pytest.fail(f"the simulator has {n} device(s): run with CUDASIM_DEVICES=2")
        pytest.skip(f"needs 2 devices, the driver reports {n}")


@pytest.fixture
def devices(two_devices):
    """Every device's ordinal (at least two)."""
    return list(range(device_count()))


def check_parts(device, arrays, content, size):
    """Device i's array holds content[i * size:(i + 1) * size] at offset 64, poison around."""
    for i, a in enumerate(arrays):
        back = device.to_host(a)
        assert np.array_equal(back[64:64 + size], content[i * size:(i + 1) * size]), f"device {i}"
        assert (back[:64] == POISON).all() and (back[64 + size:] == POISON).all(), f"device {i}"


@pytest.mark.parametrize("nthreads", [1, 4])
def test_pread_into_every_device_at_once(tmp_path, device, devices, nthreads):
    size = 5 * 1024 * 1024 + 321
    content = pattern(len(devices) * size, 17)
    path = tmp_path / "data.bin"
    content.tofile(path)
    with kvikio.defaults.set({"num_threads": nthreads}):
        arrays = [device.empty_on(d, size + 128) for d in devices]
        with kvikio.CuFile(path, "r") as f:
            futures = [f.pread(device.part(a, 64, size), size, file_offset=i * size,
                               task_size=1 << 20)
                       for i, a in enumerate(arrays)]
            assert [fu.get() for fu in futures] == [size] * len(devices)
    check_parts(device, arrays, content, size)


def test_pwrite_from_every_device_at_once(tmp_path, device, devices):
    size = 3 * 1024 * 1024 + 7
    content = pattern(len(devices) * size, 23)
    staging = tmp_path / "in.bin"
    content.tofile(staging)
    sources = [device.empty_on(d, size) for d in devices]
    with kvikio.CuFile(staging, "r") as g:  # each device's part, through kvikio itself
        assert [g.pread(s, size, file_offset=i * size).get()
                for i, s in enumerate(sources)] == [size] * len(devices)
    out = tmp_path / "out.bin"
    with kvikio.defaults.set({"num_threads": 4}), kvikio.CuFile(out, "w") as f:
        futures = [f.pwrite(s, size, file_offset=i * size) for i, s in enumerate(sources)]
        assert [fu.get() for fu in futures] == [size] * len(devices)
    assert np.array_equal(np.fromfile(out, np.uint8), content)


def test_read_async_on_a_stream_of_every_device(tmp_path, device, devices):
    size = 2 * 1024 * 1024 + 5
    content = pattern(len(devices) * size, 29)
    path = tmp_path / "data.bin"
    content.tofile(path)
    arrays = [device.empty_on(d, size + 128) for d in devices]
    streams = [device.stream_on(d) for d in devices]
    with kvikio.defaults.set({"num_threads": 4}), kvikio.CuFile(path, "r") as f:
        futures = [f.read_async(device.part(a, 64, size), s, size, i * size)
                   for i, (a, s) in enumerate(zip(arrays, streams))]
        assert [fu.check_bytes_done() for fu in futures] == [size] * len(devices)
    check_parts(device, arrays, content, size)


@pytest.mark.parametrize("transport", ["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def test_remote_pread_into_every_device_at_once(nginx, device, devices, transport):
    url, content = nginx
    size = content.size // len(devices)
    arrays = [device.empty_on(d, size + 128) for d in devices]
    settings = {"remote_backend": transport, "num_threads": 4, "task_size": 1 << 20}
    with kvikio.defaults.set(settings), kvikio.RemoteFile.open_http(f"{url}/data.bin") as f:
        futures = [f.pread(device.part(a, 64, size), size, file_offset=i * size)
                   for i, a in enumerate(arrays)]
        assert [fu.get() for fu in futures] == [size] * len(devices)
    check_parts(device, arrays, content, size)


def test_write_from_device_1(tmp_path, device, two_devices):
    size = 3 * 1024 * 1024 + 7
    content = pattern(size, 23)
    path = tmp_path / "out.bin"
    src = device.empty_on(1, size)
    with kvikio.CuFile(path, "w") as f:
        # Fill device 1's array through kvikio itself: a read of a host-written file.
        staging = tmp_path / "in.bin"
        content.tofile(staging)
        with kvikio.CuFile(staging, "r") as g:
            assert g.read(src) == size
        assert f.write(src) == size
    assert np.array_equal(np.fromfile(path, np.uint8), content)
