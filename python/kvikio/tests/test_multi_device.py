# SPDX-License-Identifier: Apache-2.0
"""Reads into device memory of two devices at once from Python (CuPy arrays on device 1 on the
GPU machine; the simulator's second device in CI, where the suite runs with CUDASIM_DEVICES=2).
Device 0 stays current throughout: kvikio takes each array's own context."""

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


@pytest.mark.parametrize("nthreads", [1, 4])
def test_pread_into_two_devices_at_once(tmp_path, device, two_devices, nthreads):
    size = 5 * 1024 * 1024 + 321
    content = pattern(2 * size, 17)
    path = tmp_path / "data.bin"
    content.tofile(path)
    with kvikio.defaults.set({"num_threads": nthreads}):
        arrays = [device.empty_on(0, size + 128), device.empty_on(1, size + 128)]
        with kvikio.CuFile(path, "r") as f:
            futures = [f.pread(device.part(a, 64, size), size, file_offset=i * size,
                               task_size=1 << 20)
                       for i, a in enumerate(arrays)]
            assert [fu.get() for fu in futures] == [size, size]
    for i, a in enumerate(arrays):
        back = device.to_host(a)
        assert np.array_equal(back[64:64 + size], content[i * size:(i + 1) * size]), f"device {i}"
        assert (back[:64] == POISON).all() and (back[64 + size:] == POISON).all(), f"device {i}"


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
