# SPDX-License-Identifier: Apache-2.0
"""kvikio.numcodecs.CudaCodec with real numcodecs: a codec derived from it is registered, found
from its config and round-trips bytes on host memory (and on device memory where CuPy is
importable), each result checked against NumPy's own computation; the base stays abstract; an
import without numcodecs says what is missing."""

from __future__ import annotations

import importlib
import sys

import numcodecs
import numpy as np
import pytest
from conftest import pattern

import kvikio.numcodecs

try:
    import cupy
except ImportError:  # CI: no CuPy
    cupy = None


class XorCodec(kvikio.numcodecs.CudaCodec):
    """XORs every byte with ``key``: its own inverse, and computable on host or device."""

    codec_id = "kvikio-test-xor"

    def __init__(self, key: int = 0x5A):
        self.key = key

    def encode(self, buf):
        xp = cupy if cupy is not None and hasattr(buf, "__cuda_array_interface__") else np
        return xp.bitwise_xor(xp.asarray(buf).view(np.uint8).ravel(), self.key)

    def decode(self, buf, out=None):
        decoded = self.encode(buf)  # XOR is its own inverse
        if out is None:
            return decoded
        if hasattr(out, "__cuda_array_interface__"):
            cupy.asarray(out).view(np.uint8).ravel()[:] = cupy.asarray(decoded)
        else:
            np.asarray(out).view(np.uint8).ravel()[:] = decoded
        return out


@pytest.fixture(autouse=True, scope="module")
def registered():
    numcodecs.register_codec(XorCodec)
    yield
    numcodecs.registry.codec_registry.pop(XorCodec.codec_id, None)


def test_the_base_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        kvikio.numcodecs.CudaCodec()
    assert issubclass(kvikio.numcodecs.CudaCodec, numcodecs.abc.Codec)


def test_a_registered_codec_round_trips_host_bytes():
    codec = numcodecs.get_codec({"id": "kvikio-test-xor", "key": 0x33})
    assert isinstance(codec, XorCodec) and codec.get_config() == {"id": "kvikio-test-xor",
                                                                  "key": 0x33}
    data = pattern(10_007, 11)
    encoded = codec.encode(data)
    np.testing.assert_array_equal(encoded, np.bitwise_xor(data, 0x33))
    assert not np.array_equal(encoded, data)
    np.testing.assert_array_equal(codec.decode(encoded), data)
    out = np.full(data.size, 0xEE, np.uint8)
    assert codec.decode(encoded, out) is out
    np.testing.assert_array_equal(out, data)


@pytest.mark.skipif(cupy is None, reason="device buffers need CuPy")
def test_a_registered_codec_round_trips_device_bytes():
    codec = numcodecs.get_codec({"id": "kvikio-test-xor"})
    data = pattern(4_099, 12)
    encoded = codec.encode(cupy.asarray(data))
    assert isinstance(encoded, cupy.ndarray)
    np.testing.assert_array_equal(encoded.get(), np.bitwise_xor(data, 0x5A))
    out = cupy.full(data.size, 0xEE, cupy.uint8)
    codec.decode(encoded, out)
    np.testing.assert_array_equal(out.get(), data)


def test_import_without_numcodecs_says_what_is_missing(monkeypatch):
    monkeypatch.delitem(sys.modules, "kvikio.numcodecs")
    for name in [m for m in sys.modules if m.split(".")[0] == "numcodecs"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match="kvikio.numcodecs needs numcodecs"):
        importlib.import_module("kvikio.numcodecs")
