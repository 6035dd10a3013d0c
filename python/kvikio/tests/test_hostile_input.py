# SPDX-License-Identifier: Apache-2.0
"""The package used as a careless or hostile caller would, by category: paths, modes, sizes and
offsets, buffers, settings, lifetimes, remote inputs. Each case says what must happen."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import kvikio
import kvikio.defaults
import kvikio.numpy
from conftest import POISON, DeviceArray, pattern

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


class ClaimedDeviceArray:
    """Host bytes behind a ``__cuda_array_interface__`` that claims any shape and type, as a
    broken or hostile array-like does."""

    def __init__(self, host: np.ndarray, shape, typestr: str = "|u1"):
        self.host = host
        self.__cuda_array_interface__ = dict(shape=shape, typestr=typestr, strides=None,
                                             version=3, data=(host.ctypes.data, False))


# Every way a buffer reaches the library, as call(path, buf): a read of the file into buf, or a
# write of buf over the file's first bytes ("r+": a refused write must leave the file as it was).
def _cufile_read(path, buf):
    with kvikio.CuFile(path, "r") as f:
        return f.read(buf)


def _cufile_pread(path, buf):
    with kvikio.CuFile(path, "r") as f:
        return f.pread(buf).get()


def _cufile_write(path, buf):
    with kvikio.CuFile(path, "r+") as f:
        return f.write(buf)


def _mmap_read(path, buf):
    with kvikio.Mmap(path) as m:
        return m.read(buf)


def _file_batch_read(path, buf):
    with kvikio.CuFile(path, "r") as f:
        return kvikio.file_batch_read([(f, buf)])[0].get()


BUFFER_CALLS = {"CuFile.read": _cufile_read, "CuFile.pread": _cufile_pread,
                "CuFile.write": _cufile_write, "Mmap.read": _mmap_read,
                "file_batch_read": _file_batch_read}

# In a child: bytes read into an object array are wild pointers, which crash the process when
# the array is next used (here by tolist()).
_OBJECTS_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])  # the tests folder
import numpy as np
from test_hostile_input import BUFFER_CALLS, ClaimedDeviceArray

path, name = sys.argv[2], sys.argv[3]
verb = "write from" if name == "CuFile.write" else "read into"
plain = np.full(64, 0xEE, np.uint8)
for a in (np.array([1, "x", None, 2.5], dtype=object),
          np.array([(7, "y")] * 4, dtype=[("n", "<i8"), ("Obj", object)])):
    before = a.tolist()
    for buf, shown in ((a, str(a.dtype)), (memoryview(a), memoryview(a).format)):
        try:
            BUFFER_CALLS[name](path, buf)
        except ValueError as e:
            assert f"Cannot {verb} object array (dtype {shown})" in str(e), str(e)
        else:
            raise AssertionError(f"{name} took a {type(buf).__name__} of dtype {shown}")
        assert a.tolist() == before, "the objects changed"
try:
    BUFFER_CALLS[name](path, ClaimedDeviceArray(plain, (8,), "|O"))
except ValueError as e:
    assert "object array (dtype object)" in str(e), str(e)
else:
    raise AssertionError(f"{name} took a device array of objects")
assert (plain == 0xEE).all(), "bytes landed behind a device array of objects"
print("REFUSED")
"""


@pytest.mark.parametrize("name", sorted(BUFFER_CALLS))
def test_object_arrays_are_refused_as_numpy_refuses_them(data_file, name):
    """An object array (or a record with an object field, or a device array claiming objects)
    holds pointers: every entry point refuses it with NumPy's ValueError, in a child because
    the bytes of a file in its place crash the process."""
    path, content = data_file
    child = subprocess.run([sys.executable, "-c", _OBJECTS_CHILD, str(Path(__file__).parent),
                            str(path), name], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0 and child.stdout.strip() == "REFUSED", (
        f"exit {child.returncode}\n{child.stdout}\n{child.stderr[-3000:]}")
    assert np.array_equal(np.fromfile(path, np.uint8), content), "a refused write changed the file"


_FROMFILE_CHILD = r"""
import sys
import numpy as np
import kvikio.numpy

for dtype in (object, [("n", "<i8"), ("o", object)]):
    try:
        a = kvikio.numpy.fromfile(sys.argv[1], dtype=dtype)
    except ValueError as e:
        assert "Cannot read into object array" in str(e), str(e)
    else:
        print(a.tolist())  # the file's bytes as object pointers: a crash
        raise AssertionError(f"fromfile read objects of dtype {dtype}")
print("REFUSED")
"""


def test_fromfile_refuses_objects_before_opening_anything(data_file, tmp_path):
    """NumPy's fromfile raises ValueError for objects; so does kvikio's, even for a file that is
    missing or empty (nothing is opened)."""
    path, _ = data_file
    child = subprocess.run([sys.executable, "-c", _FROMFILE_CHILD, str(path)],
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 0 and child.stdout.strip() == "REFUSED", (
        f"exit {child.returncode}\n{child.stdout}\n{child.stderr[-3000:]}")
    with pytest.raises(ValueError, match="Cannot read into object array"):
        np.fromfile(path, dtype=object)  # the behaviour matched
    empty = tmp_path / "empty"
    empty.touch()
    for missing_or_empty in (tmp_path / "missing", empty):
        with pytest.raises(ValueError, match=r"Cannot read into object array \(dtype object\)"):
            kvikio.numpy.fromfile(missing_or_empty, dtype=object)


@pytest.mark.parametrize("shape", [(-1,), (4, -2), (-1, -1), (2**63,), (2**32, 2**32),
                                   (0, 2**64), (2**62, 4)])
@pytest.mark.parametrize("name", sorted(BUFFER_CALLS))
def test_impossible_device_shapes_are_value_errors_naming_the_shape(tmp_path, name, shape):
    """A shape whose extents are negative, or whose product does not fit the address space, is
    a ValueError naming it (an OverflowError too, as upstream raises), before any byte moves."""
    path, content = tmp_path / "small", pattern(4096, 9)
    content.tofile(path)
    host = np.full(64, POISON, np.uint8)
    with pytest.raises(ValueError, match=re.escape(f"shape {shape!r}")) as e:
        BUFFER_CALLS[name](path, ClaimedDeviceArray(host, shape))
    assert isinstance(e.value, OverflowError)
    assert "non-negative integers" in str(e.value)
    assert (host == POISON).all(), "bytes landed behind an impossible shape"
    assert np.array_equal(np.fromfile(path, np.uint8), content), "the file changed"


@pytest.mark.parametrize("name", sorted(BUFFER_CALLS))
def test_device_array_claiming_more_than_its_allocation_is_refused(tmp_path, name):
    """A __cuda_array_interface__ claiming 1 TiB over a 4 KiB allocation: the GPU would move
    bytes past the allocation, into memory no allocation maps, so the claim is refused. The
    memory comes from cuMemAlloc itself (a pool such as CuPy's may hand out part of a larger
    one)."""
    path, content = tmp_path / "big", pattern(1 << 17, 10)
    content.tofile(path)
    small = DeviceArray(4096).copy_from_host(pattern(4096, 11))

    class Claim:
        __cuda_array_interface__ = dict(small.__cuda_array_interface__, shape=(1 << 40,),
                                        strides=None)

    with pytest.raises(ValueError, match="claims 1099511627776 bytes at .* mapped"):
        BUFFER_CALLS[name](path, Claim())
    assert np.array_equal(small.to_host(), pattern(4096, 11)), "the allocation changed"
    assert np.array_equal(np.fromfile(path, np.uint8), content), "the file changed"
    # Its whole allocation, claimed truly, is accepted.
    assert BUFFER_CALLS[name](path, small) == 4096


def test_device_shape_of_no_integers_is_a_type_error_naming_it(data_file):
    path, _ = data_file
    for shape in [(1.5,), ("3",), 8]:
        with pytest.raises(TypeError, match=re.escape(f"shape {shape!r} is no tuple of integers")):
            _cufile_read(path, ClaimedDeviceArray(np.full(64, POISON, np.uint8), shape))


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


# --- messages --------------------------------------------------------------------------------

_DRIVER_CHILD = r"""
import kvikio.cufile_driver as d
for call in (d.driver_open, d.driver_close):
    try:
        call()
    except Exception as e:
        print(f"{type(e).__name__}: {e}")
"""


def test_binding_messages_name_no_build_paths():
    """Without cuFile, driver_open() and driver_close() raise from the bindings (_lib.cpp): the
    location in the message names the source within KvikIO, not the build machine's folders. In
    a child, as opening the driver is process-wide."""
    repository = str(Path(__file__).resolve().parents[3])
    child = subprocess.run([sys.executable, "-c", _DRIVER_CHILD], capture_output=True, text=True,
                           timeout=60)
    assert child.returncode == 0, child.stderr[-3000:]
    messages = child.stdout.splitlines()
    if not messages:
        pytest.skip("cuFile opens and closes here: driver_open() and driver_close() raise nothing")
    for message in messages:
        assert repository not in message, message
        assert not re.search(r"(?<![\w.])/\S+\.[ch]pp\b", message), message


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
