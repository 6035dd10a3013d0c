# SPDX-License-Identifier: Apache-2.0
"""Hostile cases, handles from outside (docs/design.md, "Trust boundaries"): IPC handles are
trusted no further than what the driver says of them, Mmap flags are checked, and a file that
shrinks under a mapping is an exception, not a dead process."""

from __future__ import annotations

import mmap
import subprocess
import sys

import numpy as np
import pytest
from conftest import DeviceArray, pattern

import kvikio
import kvikio.ipc


def test_a_stale_handle_of_this_process_is_refused(device):
    """The allocation a handle names was freed: opening the handle is an error, never the
    pointer of whatever lives at that address now. Memory from cuMemAlloc itself (a pool such
    as CuPy's would keep the allocation alive)."""
    dev = DeviceArray(1 << 20).copy_from_host(pattern(1 << 20, 3))
    handle = kvikio.ipc.export_memory(dev)
    kvikio.ipc.forget(dev)
    del dev
    other = DeviceArray(1 << 20).copy_from_host(pattern(1 << 20, 4))  # may take its address
    with pytest.raises(Exception, match="stale"):
        kvikio.ipc.open(handle)
    assert np.array_equal(other.to_host(), pattern(1 << 20, 4))
    kvikio.ipc.clear()


@pytest.mark.parametrize("blob", [b"", b"not a handle", bytes(200)])
def test_a_blob_that_is_no_handle_is_refused(blob):
    with pytest.raises(ValueError):
        kvikio.ipc.IpcHandle.from_bytes(blob)


@pytest.mark.parametrize("flags", [mmap.MAP_PRIVATE | 0x20,  # MAP_ANONYMOUS: zeros as the file
                                   mmap.MAP_SHARED | 0x10])  # MAP_FIXED: at address 0
def test_mmap_flags_that_would_lie_are_refused(tmp_path, flags):
    """Refused as upstream refuses what mmap(2) refuses: OSError EINVAL, naming the flags."""
    path = tmp_path / "data"
    pattern(8192, 5).tofile(path)
    with pytest.raises(OSError, match="map_flags"):
        kvikio.Mmap(path, "r", map_flags=flags)


SHRINK = r"""
import os, sys
import numpy as np
import kvikio
path = sys.argv[1]
m = kvikio.Mmap(path, "r")
os.truncate(path, 4096)
buf = np.empty(1 << 20, np.uint8)
try:
    m.read(buf)
    print("READ", flush=True)
except Exception as e:
    print("RAISED", type(e).__name__, flush=True)
head = np.empty(4096, np.uint8)
m.read(head, 4096, 0)
print("HEAD", int(head[0]), int(head[4095]), flush=True)
"""


def test_a_file_shrinking_under_a_mapping_is_an_exception(tmp_path):
    """In a child (a SIGBUS would end it): the read past the new end raises, and the bytes that
    still exist read on."""
    path = tmp_path / "data"
    data = pattern(1 << 20, 6)
    data.tofile(path)
    child = subprocess.run([sys.executable, "-c", SHRINK, str(path)], capture_output=True,
                           text=True, timeout=60)
    assert child.returncode == 0, f"exit {child.returncode}\n{child.stdout}\n{child.stderr}"
    lines = child.stdout.split("\n")
    assert lines[0].startswith("RAISED"), child.stdout
    assert lines[1] == f"HEAD {data[0]} {data[4095]}", child.stdout
