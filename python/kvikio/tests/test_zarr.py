# SPDX-License-Identifier: Apache-2.0
"""kvikio.zarr.GDSStore against real zarr 3 and numcodecs: Zarr's own store conformance tests
(zarr.testing.store.StoreTests) with host buffers and, where CuPy is importable (the GPU
machine), with device buffers written (those tests read back with Zarr's default prototype; the
reads into device memory are test_device_reads_land_in_device_memory's); whole arrays written through one store and read through the other
(Zarr's LocalStore is the independent side), compressed and not; byte ranges; writes that fail
leave the old value; what an import without zarr 3 says."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import pattern

import kvikio
import kvikio.zarr
import zarr
import zarr.storage
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.core.buffer import cpu, default_buffer_prototype
from zarr.testing.store import StoreTests

try:
    import cupy
    from zarr.core.buffer import gpu
except ImportError:  # CI: no CuPy, so no device buffers for Zarr
    cupy = gpu = None

needs_cupy = pytest.mark.skipif(cupy is None, reason="Zarr's device buffers need CuPy")


class _Conformance:
    """Zarr's store tests, with the store's files read and written behind its back (plain
    Python file I/O, independent of KvikIO)."""

    store_cls = kvikio.zarr.GDSStore

    async def get(self, store, key):
        return self.buffer_cls.from_bytes((store.root / key).read_bytes())

    async def set(self, store, key, value):
        (store.root / key).parent.mkdir(parents=True, exist_ok=True)
        (store.root / key).write_bytes(value.to_bytes())

    @pytest.fixture
    def store_kwargs(self, tmp_path):
        return {"root": str(tmp_path)}

    def test_store_repr(self, store):
        assert repr(store) == f"GDSStore('file://{store.root.as_posix()}')"

    def test_store_supports_writes(self, store):
        assert store.supports_writes

    def test_store_supports_listing(self, store):
        assert store.supports_listing


class TestGDSStoreHost(_Conformance, StoreTests[kvikio.zarr.GDSStore, cpu.Buffer]):
    buffer_cls = cpu.Buffer


if gpu is not None:

    class TestGDSStoreDevice(_Conformance, StoreTests[kvikio.zarr.GDSStore, gpu.Buffer]):
        buffer_cls = gpu.Buffer


def _values(shape, seed):
    return pattern(int(np.prod(shape)) * 4, seed).view(np.uint32).reshape(shape)


@pytest.fixture
def kvikio_calls(monkeypatch):
    """Counts the chunk reads and writes GDSStore makes through KvikIO (CuFile.pread, .pwrite
    of files under a c/ folder: zarr 3's chunk keys; metadata is zarr.json)."""
    calls = {"pread": 0, "pwrite": 0}

    class Counting(kvikio.CuFile):
        def __init__(self, file, flags="r"):
            super().__init__(file, flags)
            self.chunk = "c" in Path(file).parts

        def pread(self, *args, **kwargs):
            calls["pread"] += self.chunk
            return super().pread(*args, **kwargs)

        def pwrite(self, *args, **kwargs):
            calls["pwrite"] += self.chunk
            return super().pwrite(*args, **kwargs)

    monkeypatch.setattr(kvikio.zarr, "CuFile", Counting)
    return calls


@pytest.mark.parametrize("compressors", [None, "auto"], ids=["raw", "zstd"])
def test_arrays_round_trip_through_either_store(tmp_path, compressors, kvikio_calls):
    values = _values((300, 70), 1)
    # Written by KvikIO, read by Zarr's LocalStore.
    a = zarr.create_array(kvikio.zarr.GDSStore(tmp_path / "a"), shape=values.shape,
                          chunks=(64, 32), dtype=values.dtype, compressors=compressors)
    a[:] = values
    np.testing.assert_array_equal(
        zarr.open_array(zarr.storage.LocalStore(tmp_path / "a"), mode="r")[:], values)
    # Written by LocalStore, read by KvikIO: whole, and a slice across chunk edges.
    b = zarr.create_array(zarr.storage.LocalStore(tmp_path / "b"), shape=values.shape,
                          chunks=(64, 32), dtype=values.dtype, compressors=compressors)
    b[:] = values
    back = zarr.open_array(kvikio.zarr.GDSStore(tmp_path / "b", read_only=True), mode="r")
    np.testing.assert_array_equal(back[:], values)
    np.testing.assert_array_equal(back[63:130, 31:65], values[63:130, 31:65])
    # Every chunk went through KvikIO: 5 x 3 chunks written; read whole (15) and the 3 x 3
    # chunks under the slice (rows 63..129 and columns 31..64 each touch three chunks).
    assert kvikio_calls == {"pwrite": 15, "pread": 15 + 9}, kvikio_calls


@needs_cupy
def test_device_reads_land_in_device_memory(tmp_path):
    values = _values((256, 40), 2)
    a = zarr.create_array(zarr.storage.LocalStore(tmp_path), name="a", shape=values.shape,
                          chunks=(50, 40), dtype=values.dtype)
    a[:] = values
    with zarr.config.enable_gpu():
        got = zarr.open_array(kvikio.zarr.GDSStore(tmp_path, read_only=True), path="a")[:]
        assert isinstance(got, cupy.ndarray)
        cupy.testing.assert_array_equal(got, cupy.asarray(values))
        # And device values written through KvikIO, read back by LocalStore on the host.
        c = zarr.create_array(kvikio.zarr.GDSStore(tmp_path), name="c", shape=values.shape,
                              chunks=(50, 40), dtype=values.dtype)
        c[:] = cupy.asarray(values)
    np.testing.assert_array_equal(zarr.open_array(zarr.storage.LocalStore(tmp_path), path="c")[:],
                                  values)


async def test_byte_ranges_match_the_file(tmp_path):
    data = pattern(10_000, 3).tobytes()
    (tmp_path / "k").write_bytes(data)
    store = kvikio.zarr.GDSStore(tmp_path, read_only=True)
    proto = default_buffer_prototype()
    cases = {
        None: data,
        RangeByteRequest(17, 4_113): data[17:4_113],
        RangeByteRequest(9_990, 20_000): data[9_990:],
        RangeByteRequest(20_000, 20_010): b"",
        OffsetByteRequest(6_001): data[6_001:],
        OffsetByteRequest(10_000): b"",
        SuffixByteRequest(123): data[-123:],
        SuffixByteRequest(50_000): data,
    }
    for byte_range, expected in cases.items():
        got = await store.get("k", proto, byte_range)
        assert got.to_bytes() == expected, byte_range
        assert store.get_sync("k", prototype=proto, byte_range=byte_range).to_bytes() == expected
    assert await store.get("missing", proto) is None
    got = await store.get_partial_values(proto, [("k", RangeByteRequest(1, 5)), ("missing", None),
                                                 ("k", SuffixByteRequest(2))])
    assert [g and g.to_bytes() for g in got] == [data[1:5], None, data[-2:]]


async def test_byte_ranges_that_cannot_be_read_are_refused_as_local_store_refuses_them(tmp_path):
    data = pattern(100, 6).tobytes()
    (tmp_path / "k").write_bytes(data)
    proto = default_buffer_prototype()
    stores = (kvikio.zarr.GDSStore(tmp_path, read_only=True),
              zarr.storage.LocalStore(tmp_path, read_only=True))
    for byte_range in (RangeByteRequest(10, 5), RangeByteRequest(-5, 10), OffsetByteRequest(-10)):
        errors = []
        for store in stores:
            with pytest.raises((ValueError, OSError)) as e:
                await store.get("k", proto, byte_range)
            errors.append(type(e.value))
        assert errors[0] is errors[1], byte_range
    for byte_range in (SuffixByteRequest(-5), RangeByteRequest(200, 300)):
        got = [await store.get("k", proto, byte_range) for store in stores]
        assert [g.to_bytes() for g in got] == [b"", b""], byte_range


async def test_a_failed_write_leaves_the_old_value_and_no_partial_file(tmp_path, monkeypatch):
    store = kvikio.zarr.GDSStore(tmp_path)
    old = cpu.Buffer.from_bytes(pattern(5_000, 4).tobytes())
    await store.set("c/0", old)

    def broken_write(self, *args, **kwargs):
        raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(kvikio.CuFile, "write", broken_write)
    with pytest.raises(OSError, match="injected"):
        await store.set("c/0", cpu.Buffer.from_bytes(pattern(5_000, 5).tobytes()))
    monkeypatch.undo()
    assert (tmp_path / "c" / "0").read_bytes() == old.to_bytes()
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["0"]
    # set_if_not_exists keeps what is there; on a new key it writes.
    await store.set_if_not_exists("c/0", cpu.Buffer.from_bytes(b"other"))
    assert (tmp_path / "c" / "0").read_bytes() == old.to_bytes()
    await store.set_if_not_exists("c/1", cpu.Buffer.from_bytes(b"new"))
    assert (tmp_path / "c" / "1").read_bytes() == b"new"


def test_import_without_zarr_or_with_zarr_2_says_what_is_needed(monkeypatch):
    for name in [m for m in sys.modules if m == "kvikio.zarr"]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m.split(".")[0] == "zarr"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"requires the optional 'zarr>=3' dependency"):
        import kvikio.zarr  # noqa: F401
    monkeypatch.undo()

    monkeypatch.delitem(sys.modules, "kvikio.zarr")
    monkeypatch.setattr(zarr, "__version__", "2.18.7")
    with pytest.raises(ImportError, match=r"'zarr>=3' is required, but 'zarr==2.18.7'"):
        import kvikio.zarr  # noqa: F401,F811
