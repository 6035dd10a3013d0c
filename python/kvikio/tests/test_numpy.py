# SPDX-License-Identifier: Apache-2.0
"""kvikio.numpy: fromfile/tofile against numpy's own, host and device (like=)."""

import numpy as np
import pytest
from conftest import cupy, pattern

import kvikio.numpy


def test_fromfile_tofile(tmp_path):
    a = pattern(1 << 20, 3).view(np.float64)
    path = tmp_path / "a.bin"
    kvikio.numpy.tofile(a, path)
    assert np.array_equal(np.fromfile(path, np.uint8), a.view(np.uint8))
    b = kvikio.numpy.fromfile(path, np.float64, count=1000, offset=8 * 5)
    assert np.array_equal(b.view(np.uint8), a[5:1005].view(np.uint8))
    assert np.array_equal(kvikio.numpy.fromfile(path, np.float64).view(np.uint8), a.view(np.uint8))
    with pytest.raises(NotImplementedError, match="sep"):
        kvikio.numpy.fromfile(path, sep=",")


@pytest.mark.skipif(cupy is None, reason="like=: needs CuPy (the GPU machine) for a device array type")
def test_fromfile_like_cupy(tmp_path):
    a = pattern(4096, 4)
    path = tmp_path / "a.bin"
    a.tofile(path)
    d = np.fromfile(path, dtype=np.uint8, like=kvikio.numpy.LikeWrapper(cupy.empty(1)))
    assert isinstance(d, cupy.ndarray)
    assert np.array_equal(cupy.asnumpy(d), a)
