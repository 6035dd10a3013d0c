# SPDX-License-Identifier: Apache-2.0
"""Fixtures: device memory from CuPy where it is importable (the GPU machine), else from the
CUDA driver that is loaded (the simulator in CI) through ctypes, as a small array type with
``__cuda_array_interface__``; data patterns; a temporary directory."""

from __future__ import annotations

import ctypes
import os
import select
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

from pathlib import Path

import numpy as np
import pytest

try:
    import cupy
except ImportError:  # CI: no CuPy
    cupy = None


class _Driver:
    """The few driver calls the tests need, straight from libcuda.so.1 (not through kvikio:
    an independent way to put bytes in and get them out)."""

    def __init__(self, ordinal: int = 0):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")
        device = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(device), ordinal), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), device), "retain")

    @staticmethod
    def check(result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what} failed: CUresult {result}")

    def push(self) -> None:
        self.check(self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")

    def pop(self) -> None:
        popped = ctypes.c_void_p()
        self.check(self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped)), "cuCtxPopCurrent")


_driver = None


def driver() -> _Driver:
    global _driver
    if _driver is None:
        _driver = _Driver()
    _driver.push()  # this thread's current context (pushes nest; harmless)
    return _driver


def on_simulator() -> bool:
    """Whether the loaded libcuda.so.1 is the CUDA driver simulator (cpp/tests/cudasim)."""
    try:
        return hasattr(ctypes.CDLL("libcuda.so.1"), "cudasim_is_simulator")
    except OSError:
        return False


def device_count() -> int:
    """Devices the loaded driver reports (CuPy's where it is importable)."""
    if cupy is not None:
        return cupy.cuda.runtime.getDeviceCount()
    d = driver()
    n = ctypes.c_int()
    d.check(d.lib.cuDeviceGetCount(ctypes.byref(n)), "cuDeviceGetCount")
    return n.value


class OtherDeviceArray:
    """Device memory of device ``ordinal`` through ctypes; every call pushes that device's
    primary context and pops it, so the caller's current context stays what it was."""

    def __init__(self, data: np.ndarray, ordinal: int):
        self._d = _Driver(ordinal)
        data = np.ascontiguousarray(data).view(np.uint8)
        self.nbytes = data.nbytes
        self.ptr = ctypes.c_uint64()
        self._d.push()
        try:
            self._d.check(self._d.lib.cuMemAlloc_v2(ctypes.byref(self.ptr), max(self.nbytes, 1)),
                          "cuMemAlloc")
            self._d.check(self._d.lib.cuMemcpyHtoD_v2(
                self.ptr, data.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(self.nbytes)),
                "cuMemcpyHtoD")
            self._d.check(self._d.lib.cuCtxSynchronize(), "cuCtxSynchronize")
        finally:
            self._d.pop()
        self.__cuda_array_interface__ = {
            "shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr.value, False),
            "strides": None, "version": 3,
        }

    def __del__(self):
        self._d.push()
        self._d.lib.cuMemFree_v2(self.ptr)
        self._d.pop()

    def view(self, offset: int, nbytes: int):
        """Bytes [offset, offset + nbytes) as an array of their own (the memory stays this
        object's)."""
        parent = self

        class View:
            keep = parent
            __cuda_array_interface__ = {
                "shape": (nbytes,), "typestr": "|u1", "data": (self.ptr.value + offset, False),
                "strides": None, "version": 3,
            }

        return View()

    def to_host(self) -> np.ndarray:
        out = np.empty(self.nbytes, np.uint8)
        self._d.push()
        try:
            self._d.check(self._d.lib.cuMemcpyDtoH_v2(
                out.ctypes.data_as(ctypes.c_void_p), self.ptr, ctypes.c_size_t(self.nbytes)),
                "cuMemcpyDtoH")
        finally:
            self._d.pop()
        return out


class DeviceArray:
    """Device memory from cuMemAlloc, as a 1-D uint8 array (``__cuda_array_interface__``)."""

    def __init__(self, nbytes: int, *, readonly: bool = False, strides=None, shape=None):
        self._d = driver()
        self.nbytes = nbytes
        self.ptr = ctypes.c_uint64()
        self._d.check(self._d.lib.cuMemAlloc_v2(ctypes.byref(self.ptr), max(nbytes, 1)),
                      "cuMemAlloc")
        self.__cuda_array_interface__ = {
            "shape": shape or (nbytes,),
            "typestr": "|u1",
            "data": (self.ptr.value, readonly),
            "strides": strides,
            "version": 3,
        }

    def __del__(self):
        self._d.lib.cuMemFree_v2(self.ptr)

    def copy_from_host(self, data: np.ndarray) -> "DeviceArray":
        data = np.ascontiguousarray(data).view(np.uint8)
        self._d.check(self._d.lib.cuMemcpyHtoD_v2(self.ptr, data.ctypes.data_as(ctypes.c_void_p),
                                                  ctypes.c_size_t(data.nbytes)), "cuMemcpyHtoD")
        # From pageable memory the copy may still be in flight when cuMemcpyHtoD returns (as on
        # a GPU): a stream-ordered read on a non-blocking stream could land before it.
        self._d.check(self._d.lib.cuCtxSynchronize(), "cuCtxSynchronize")
        return self

    def to_host(self) -> np.ndarray:
        out = np.empty(self.nbytes, np.uint8)
        self._d.check(self._d.lib.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), self.ptr,
                                                  ctypes.c_size_t(self.nbytes)), "cuMemcpyDtoH")
        return out


def pattern(nbytes: int, seed: int) -> np.ndarray:
    """Deterministic non-zero bytes, different per seed."""
    rng = np.random.default_rng(seed)
    return rng.integers(1, 256, size=nbytes, dtype=np.uint8)


POISON = 0xEE


@pytest.fixture
def device():
    """``device.array(host_bytes)``, ``device.empty(n)`` (poisoned), ``device.to_host(a)``."""

    class Device:
        @staticmethod
        def array(data: np.ndarray):
            if cupy is not None:
                a = cupy.asarray(np.ascontiguousarray(data).view(np.uint8))
                cupy.cuda.runtime.deviceSynchronize()  # before any other stream touches it
                return a
            return DeviceArray(data.nbytes).copy_from_host(data)

        @staticmethod
        def empty(nbytes: int):
            return Device.array(np.full(nbytes, POISON, np.uint8))

        @staticmethod
        def empty_on(ordinal: int, nbytes: int):
            """Poisoned memory of device ``ordinal``; the current device stays as it was."""
            data = np.full(nbytes, POISON, np.uint8)
            if cupy is not None:
                with cupy.cuda.Device(ordinal):
                    a = cupy.asarray(data)
                    cupy.cuda.runtime.deviceSynchronize()
                    return a
            return OtherDeviceArray(data, ordinal)

        @staticmethod
        def part(a, offset: int, nbytes: int):
            """Bytes [offset, offset + nbytes) of an array from empty_on()."""
            if cupy is not None:
                return a[offset:offset + nbytes]
            return a.view(offset, nbytes)

        @staticmethod
        def to_host(a) -> np.ndarray:
            if cupy is not None:
                with cupy.cuda.Device(a.device.id):
                    return cupy.asnumpy(a).view(np.uint8).ravel()
            return a.to_host()

        @staticmethod
        def stream():
            """A stream handle (int), or CuPy's stream object."""
            if cupy is not None:
                return cupy.cuda.Stream(non_blocking=True)
            handle = ctypes.c_void_p()
            d = driver()
            d.check(d.lib.cuStreamCreate(ctypes.byref(handle), 1), "cuStreamCreate")
            return handle.value

        @staticmethod
        def stream_on(ordinal: int):
            """A stream of device ``ordinal``; the current device stays as it was."""
            if cupy is not None:
                with cupy.cuda.Device(ordinal):
                    return cupy.cuda.Stream(non_blocking=True)
            d = _Driver(ordinal)
            handle = ctypes.c_void_p()
            d.push()
            try:
                d.check(d.lib.cuStreamCreate(ctypes.byref(handle), 1), "cuStreamCreate")
            finally:
                d.pop()
            return handle.value

    return Device


@pytest.fixture
def data_file(tmp_path):
    """A file of 3 MiB + 4099 pattern bytes; returns (path, bytes)."""
    content = pattern(3 * 1024 * 1024 + 4099, 7)
    path = tmp_path / "data.bin"
    content.tofile(path)
    return path, content


def pytest_report_header(config):
    where = "CuPy" if cupy is not None else f"ctypes on {os.environ.get('LD_LIBRARY_PATH', '')}"
    return f"device memory: {where}"


NGINX = "/usr/sbin/nginx"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    """Real nginx (Debian's /usr/sbin/nginx) on a free loopback port, serving a directory with
    data.bin (5 MiB + 77 bytes of pattern 21); yields (base URL, content). Missing nginx fails."""
    assert os.path.exists(NGINX), f"{NGINX} is missing: ci/install-deps.sh installs nginx-light"
    root = tmp_path_factory.mktemp("nginx")
    www = root / "www"
    (root / "tmp").mkdir()
    www.mkdir()
    content = pattern(5 * 1024 * 1024 + 77, 21)
    content.tofile(www / "data.bin")
    for attempt in range(5):  # another process may take the port between bind and listen
        port = _free_port()
        conf = root / "nginx.conf"
        temp = root / "tmp"
        conf.write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"daemon off;\nworker_processes 2;\npid {root}/nginx.pid;\n"
            f"error_log {root}/error.log;\nevents {{}}\nhttp {{\n  access_log off;\n"
            f"  client_body_temp_path {temp};\n  proxy_temp_path {temp};\n"
            f"  fastcgi_temp_path {temp};\n  uwsgi_temp_path {temp};\n  scgi_temp_path {temp};\n"
            f"  server {{\n    listen 127.0.0.1:{port};\n    root {www};\n  }}\n}}\n"
        )
        proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(root)])
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:  # ours only if it serves our file
                with urllib.request.urlopen(f"{url}/data.bin", timeout=1) as r:
                    if r.read(64) == content[:64].tobytes():
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        else:
            proc.kill()
            continue
        if proc.poll() is None:
            break
    else:
        pytest.fail(f"nginx did not serve on a free port (see {root}/error.log)")
    yield url, content
    proc.terminate()
    proc.wait()
    shutil.rmtree(root, ignore_errors=True)


SERVERS = Path(__file__).resolve().parents[3] / "cpp" / "tests" / "servers"


def start_server(script: str, arg: str):
    """A test server of cpp/tests/servers, ``script 0 arg``, run by this Python (the virtual
    environment of ci/install-deps.sh, with botocore): it binds a free port itself and prints
    "ready <port>" (no other process can take the port in between); one that does not start
    fails. Returns (process, base URL)."""
    proc = subprocess.Popen([sys.executable, str(SERVERS / script), "0", arg],
                            stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 10)
    words = proc.stdout.readline().split() if ready else []
    if len(words) != 2 or words[0] != "ready":
        proc.kill()
        pytest.fail(f"{script} did not start")
    return proc, f"http://127.0.0.1:{words[1]}"
