# SPDX-License-Identifier: Apache-2.0
"""kvikio.Mmap into host and device memory; kvikio.ipc between two processes (this pytest
process produces, a child Python process consumes: it writes the mapped bytes to a file that
numpy reads here, and reads a file of new bytes into the mapping that this process then sees);
the no-op registrations."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import POISON, pattern

import kvikio
import kvikio.buffer
import kvikio.ipc
import kvikio.stream


def test_mmap(data_file, device):
    path, content = data_file
    with kvikio.Mmap(path, initial_map_offset=4096, initial_map_size=1 << 20) as m:
        assert m.initial_map_size() == 1 << 20
        assert m.nbytes() == content.size  # upstream: the file size
        assert m.file_size() == content.size
        out = np.full(1000, POISON, np.uint8)
        assert m.read(out, 900, offset=5000) == 900
        assert np.array_equal(out[:900], content[5000:5900])
        assert (out[900:] == POISON).all()
        dev = device.empty(1 << 19)
        assert m.pread(dev, offset=4096, task_size=1 << 16).get() == 1 << 19
        assert np.array_equal(device.to_host(dev), content[4096:4096 + (1 << 19)])
        with pytest.raises(IndexError):
            m.read(out, 100, offset=4096 + (1 << 20) - 50)
    with pytest.raises(ValueError):
        kvikio.Mmap(path, "w")


CONSUMER = textwrap.dedent(
    """
    import sys
    import kvikio, kvikio.ipc
    handle = kvikio.ipc.IpcHandle.from_bytes(bytes.fromhex(sys.argv[1]))
    region = kvikio.ipc.open(handle)
    assert region.nbytes == handle.length
    with kvikio.CuFile(sys.argv[2], "w") as f:  # what the producer wrote
        assert f.write(region) == region.nbytes
    with kvikio.CuFile(sys.argv[3], "r") as f:  # new bytes for the producer
        assert f.read(region, region.nbytes // 2) == region.nbytes // 2
    again = kvikio.ipc.open(handle)
    assert again.ptr == region.ptr
    stats = kvikio.ipc.open_cache_stats()
    assert (stats.hits, stats.misses) == (1, 1), (stats.hits, stats.misses)
    """
)


def test_ipc_between_processes(device, tmp_path):
    n = 1 << 20
    src = pattern(n, 5)
    dev = device.array(src)
    handle = kvikio.ipc.export_memory(dev)
    assert handle.length == n
    again = kvikio.ipc.export_memory(dev, 4096)
    assert again.buffer_id == handle.buffer_id
    assert kvikio.ipc.export_cache_stats().hits >= 1
    blob = handle.to_bytes()
    assert kvikio.ipc.IpcHandle.from_bytes(blob).to_bytes() == blob
    with pytest.raises(ValueError, match="checksum"):
        kvikio.ipc.IpcHandle.from_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    seen = tmp_path / "seen.bin"
    new = pattern(n // 2, 6)
    new_file = tmp_path / "new.bin"
    new.tofile(new_file)
    result = subprocess.run(
        [sys.executable, "-c", CONSUMER, blob.hex(), str(seen), str(new_file)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert np.array_equal(np.fromfile(seen, np.uint8), src)
    back = device.to_host(dev)
    assert np.array_equal(back[: n // 2], new)
    assert np.array_equal(back[n // 2:], src[n // 2:])
    # This process's own handle maps nothing: the original pointer.
    assert kvikio.ipc.open(handle).ptr == handle_ptr(dev)
    kvikio.ipc.forget(dev)
    kvikio.ipc.clear()


def handle_ptr(dev) -> int:
    return dev.__cuda_array_interface__["data"][0]


def test_registrations_are_harmless(device):
    dev = device.empty(4096)
    kvikio.buffer.memory_register(dev)
    kvikio.buffer.memory_deregister(dev)
    kvikio.stream.stream_register(device.stream(), 0)
    # Frees the pinned buffers waiting in the pool (earlier device I/O left some): whole
    # buffers and the pool's parts of them (2^-n of a buffer, whole pages, lent to small
    # transfers), and then none are left.
    freed = kvikio.buffer.bounce_buffer_free()
    assert freed % 4096 == 0
    assert kvikio.buffer.bounce_buffer_free() == 0
    assert isinstance(kvikio.cufile_driver.is_gds_available(), bool)


def test_a_released_region_is_refused_not_taken_as_empty(device, tmp_path):
    """A MappedRegion after release() maps nothing: using it as a buffer is a ValueError, not a
    read of 0 bytes reported as success."""
    data = pattern(4096, 7)
    path = tmp_path / "data"
    data.tofile(path)
    dev = device.array(pattern(4096, 8))
    region = kvikio.ipc.open(kvikio.ipc.export_memory(dev))
    assert region.nbytes == 4096
    region.release()
    with pytest.raises(ValueError, match="released"):
        _ = region.ptr
    with kvikio.CuFile(path, "r") as f, pytest.raises(ValueError, match="released"):
        f.read(region)
    assert np.array_equal(device.to_host(dev), pattern(4096, 8))
    kvikio.ipc.forget(dev)
    kvikio.ipc.clear()


def test_stream_ordered_offsets_past_off_t_are_named_not_negative(device, tmp_path):
    path = tmp_path / "data"
    pattern(4096, 9).tofile(path)
    dev = device.array(pattern(4096, 10))
    with kvikio.CuFile(path, "r+") as f:
        for call in (f.read_async, f.write_async):
            with pytest.raises(OverflowError, match="9223372036854775813"):
                call(dev, 0, size=100, file_offset=2**63 + 5)
    assert np.array_equal(device.to_host(dev), pattern(4096, 10))
