# SPDX-License-Identifier: Apache-2.0
"""The package used as a careless or hostile caller would, by category: paths, modes, sizes and
offsets, buffers, settings, lifetimes, remote inputs. Each case says what must happen."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import kvikio
import kvikio.defaults
from conftest import pattern

# --- paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize("flags", ["r", "r+", "w", "w+"])
def test_nul_in_path_is_a_value_error_and_touches_no_file(tmp_path, flags):
    path = tmp_path / "x"
    content = pattern(4096, 1)
    content.tofile(path)
    with pytest.raises(ValueError, match="embedded null byte") as e:
        kvikio.CuFile(str(path) + "\x00zzz", flags)
    assert "\\0zzz" in str(e.value), "the message shows the whole path"
    assert np.array_equal(np.fromfile(path, np.uint8), content), "the file before the NUL changed"


def test_directory_is_refused_at_open_as_open_would(tmp_path):
    with pytest.raises(IsADirectoryError) as e:
        kvikio.CuFile(tmp_path, "r")
    assert isinstance(e.value, RuntimeError), "upstream raises RuntimeError: both hold"
    with pytest.raises(IsADirectoryError):
        kvikio.Mmap(tmp_path)


def test_missing_file_is_file_not_found_and_a_runtime_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="Unable to open file") as e:
        kvikio.CuFile(tmp_path / "missing", "r")
    assert isinstance(e.value, RuntimeError)
    assert e.value.errno == 2


def test_fifo_and_character_device_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        kvikio.CuFile(fifo, "r")  # would wait for a writer forever if opened as asked
    with pytest.raises(OSError, match="not a regular file"):
        kvikio.CuFile("/dev/null", "r")


# --- modes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("flags", ["rw+", "rw", "r++", "x", "", "rt"])
def test_unknown_modes_are_refused(tmp_path, flags):
    path = tmp_path / "m"
    pattern(64, 2).tofile(path)
    with pytest.raises(ValueError, match="flag"):
        kvikio.CuFile(path, flags)


# --- sizes and offsets -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"file_offset": -1}, OverflowError, "file_offset is -1"),
        ({"file_offset": 1.5}, TypeError, "file_offset must be an integer"),
        ({"file_offset": 2**64}, OverflowError, "file_offset is 18446744073709551616"),
        ({"size": -1}, OverflowError, "size is -1"),
        ({"size": 17}, ValueError, "size 17 does not fit"),
        ({"task_size": "4"}, TypeError, "task_size must be an integer"),
        ({"task_size": 0}, ValueError, "task_size"),
    ],
)
def test_bad_sizes_and_offsets_name_the_argument(data_file, kwargs, error, words):
    path, _ = data_file
    buf = np.full(16, 0xEE, np.uint8)
    with kvikio.CuFile(path, "r") as f:
        with pytest.raises(error, match=words):
            f.pread(buf, **kwargs).get()
    assert (buf == 0xEE).all(), "a refused read wrote into the buffer"


# --- buffers ---------------------------------------------------------------------------------


def test_read_only_and_strided_and_foreign_buffers_are_refused(data_file):
    path, _ = data_file
    with kvikio.CuFile(path, "r") as f:
        with pytest.raises(ValueError, match="read-only"):
            f.read(bytes(16))
        with pytest.raises(ValueError, match="non-contiguous"):
            f.read(np.zeros(32, np.uint8)[::2])
        with pytest.raises(TypeError, match="no buffer"):
            f.read(object())


def test_device_array_without_a_driver_is_refused(tmp_path):
    """Without a driver every address looks like host memory: a __cuda_array_interface__ must
    not be read into as if it were (the file's bytes would land at the device address)."""
    script = """
import numpy as np, sys, kvikio
from kvikio import _lib
if _lib.is_cuda_available():
    print("SKIP a CUDA driver loads here"); sys.exit(0)
host = np.full(64, 0xEE, np.uint8)
class Fake:
    __cuda_array_interface__ = dict(shape=(64,), typestr="|u1", version=3,
                                    data=(host.ctypes.data, False))
open(sys.argv[1], "wb").write(bytes(range(1, 65)))
try:
    kvikio.CuFile(sys.argv[1]).read(Fake())
except RuntimeError as e:
    assert "no CUDA driver" in str(e), e
    assert (host == 0xEE).all(), "bytes landed at the device address"
    print("REFUSED")
"""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "CUDASIM_DEVICES")}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "f")], env=env,
                         capture_output=True, text=True, timeout=60)
    if out.stdout.startswith("SKIP"):
        pytest.skip(out.stdout.strip())
    assert out.returncode == 0 and "REFUSED" in out.stdout, out.stdout + out.stderr


# --- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, value, error, words",
    [
        ("num_threads", 1_000_000, ValueError, r"\[1, 4096\]"),
        ("num_threads", 4097, ValueError, r"\[1, 4096\]"),
        ("num_threads", 0, ValueError, "positive integer"),
        ("num_threads", 1.5, TypeError, "num_threads must be an integer"),
        ("num_bounce_buffers", 1025, ValueError, r"\[1, 1024\]"),
        ("remote_io_num_reactors", 5000, ValueError, r"\[1, 1024\]"),
        ("http_status_codes", [], ValueError, "empty list"),
        ("task_size", 2**64, OverflowError, "does not fit 64 bits"),
        ("http_timeout", -1, OverflowError, "negative value"),
    ],
)
def test_setters_refuse_what_the_variables_refuse_and_change_nothing(name, value, error, words):
    before = kvikio.defaults.get(name)
    with pytest.raises(error, match=words):
        kvikio.defaults.set(name, value)
    assert kvikio.defaults.get(name) == before


def test_num_threads_during_resizes_reports_only_set_values_and_reads_succeed(data_file):
    path, content = data_file
    done = threading.Event()
    failures = []

    def resize():
        i = 0
        while not done.is_set():
            kvikio.defaults.set("num_threads", 4 if i % 2 == 0 else 1)
            i += 1

    def read():
        rng = np.random.default_rng(3)
        buf = np.empty(64 << 10, np.uint8)
        with kvikio.CuFile(path, "r") as f:
            while not done.is_set():
                off = int(rng.integers(0, content.size - buf.size))
                try:
                    n = f.pread(buf, file_offset=off, task_size=16 << 10).get()
                    if n != buf.size or not np.array_equal(buf, content[off:off + buf.size]):
                        failures.append(f"wrong bytes at {off}")
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    failures.append(repr(e))

    threads = [threading.Thread(target=resize), threading.Thread(target=read)]
    for t in threads:
        t.start()
    seen = set()
    try:
        for _ in range(20_000):
            seen.add(kvikio.defaults.get("num_threads"))
    finally:
        done.set()
        for t in threads:
            t.join()
        kvikio.defaults.set("num_threads", 1)
    assert seen <= {1, 4}, f"the getter reported sizes nobody set: {seen}"
    assert not failures, failures[:5]


# --- lifetimes -------------------------------------------------------------------------------


def test_reads_racing_close_never_return_another_files_bytes(tmp_path):
    a, b = pattern(1 << 20, 5), pattern(1 << 20, 6)
    a.tofile(tmp_path / "a")
    b.tofile(tmp_path / "b")
    stop = threading.Event()

    def reopen():  # takes the descriptor numbers close() frees
        while not stop.is_set():
            os.close(os.open(tmp_path / "b", os.O_RDONLY))

    t = threading.Thread(target=reopen)
    t.start()
    wrong = 0
    rng = np.random.default_rng(4)
    try:
        with kvikio.defaults.set("num_threads", 4):
            for _ in range(100):
                f = kvikio.CuFile(tmp_path / "a", "r")
                bufs = [np.empty(16 << 10, np.uint8) for _ in range(16)]
                offs = [int(rng.integers(0, a.size - (16 << 10))) for _ in bufs]
                futures = [f.pread(buf, file_offset=o, task_size=4 << 10)
                           for buf, o in zip(bufs, offs)]
                f.close()
                for fut, buf, o in zip(futures, bufs, offs):
                    try:
                        fut.get()
                    except RuntimeError:
                        continue  # an error is an allowed outcome
                    wrong += not np.array_equal(buf, a[o:o + buf.size])
                with pytest.raises(RuntimeError, match="closed"):
                    f.pread(bufs[0]).get()
    finally:
        stop.set()
        t.join()
    assert wrong == 0, f"{wrong} reads succeeded with bytes that are not the file's"


# --- remote inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, words",
    [
        ("ftp://example.com/x", 'scheme is "ftp"'),
        ("http://", "invalid URL"),
        ("not a url", "invalid URL"),
    ],
)
def test_open_http_says_what_is_wrong_with_the_url(url, words):
    with pytest.raises(ValueError, match=words):
        kvikio.RemoteFile.open_http(url)
