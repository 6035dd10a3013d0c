# SPDX-License-Identifier: Apache-2.0
"""Hostile cases, process lifecycle: a Python signal handler runs while a read is waited for
(docs/python.md, "What may be interrupted"). In a child process (its main thread gets the
signal), a read from the misbehaving server's /stall/ path, which sends headers and then
nothing, is waited for under ``signal.alarm(1)`` (by ``get()``, by the blocking ``read()``, by
``check_bytes_done()`` of a stream-ordered read): the alarm's handler must interrupt the wait
within a couple of seconds, not when the HTTP timeout ends the read. Then fork and exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import start_server

CHILD = r"""
import ctypes, signal, sys, time
import numpy as np
import kvikio, kvikio.defaults

class Alarm(Exception):
    pass

def on_alarm(signum, frame):
    raise Alarm()

kvikio.defaults.set({"http_timeout": 8, "http_max_attempts": 1})
f = kvikio.RemoteFile.open_http(sys.argv[1], 100000)
how = sys.argv[2]
if how == "check_bytes_done":
    sys.path.insert(0, sys.argv[3])
    from conftest import DeviceArray, driver
    buf = DeviceArray(1000)
    stream = ctypes.c_void_p()
    driver().check(driver().lib.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
else:
    buf = np.empty(1000, np.uint8)
signal.signal(signal.SIGALRM, on_alarm)
t0 = time.monotonic()
signal.alarm(1)
try:
    if how == "get":
        future = f.pread(buf, 1000, 0)
        future.get()
    elif how == "read":
        f.read(buf, 1000, 0)
    else:
        future = f.read_async(buf, stream.value, 1000, 0)
        future.check_bytes_done()
    print("NOT INTERRUPTED", flush=True)
except Alarm:
    print(f"INTERRUPTED {time.monotonic() - t0:.2f}", flush=True)
except Exception as e:
    print(f"FAILED {time.monotonic() - t0:.2f} {type(e).__name__}", flush=True)
"""


@pytest.fixture(scope="module")
def stalling_server():
    proc, url = start_server("misbehaving_http.py", "100000")
    yield url
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("how", ["get", "read", "check_bytes_done"])
@pytest.mark.parametrize("transport", ["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def test_an_alarm_interrupts_a_wait_for_a_stalled_read(stalling_server, transport, how):
    env = {**os.environ, "KVIKIO_REMOTE_BACKEND": transport}
    child = subprocess.run([sys.executable, "-c", CHILD, f"{stalling_server}/stall/x", how,
                            os.path.dirname(__file__)],
                           capture_output=True, text=True, timeout=60, env=env)
    words = child.stdout.split()
    assert child.returncode == 0 and words[:1] == ["INTERRUPTED"], (
        f"exit {child.returncode}\n{child.stdout}\n{child.stderr[-2000:]}")
    assert float(words[1]) < 3.0, child.stdout  # the alarm at 1 s, not the 8 s timeout


EXIT_WITH_READS_IN_FLIGHT = r"""
import sys, threading, time
import numpy as np
import kvikio, kvikio.defaults

kvikio.defaults.set({"http_timeout": 8, "http_max_attempts": 1})
url, path = sys.argv[1], sys.argv[2]
started = threading.Barrier(4)

def remote():
    f = kvikio.RemoteFile.open_http(url, 100000)
    started.wait()
    f.read(np.empty(1000, np.uint8))  # the server sends headers, then nothing

def local():
    with kvikio.CuFile(path, "r") as f:
        buf = np.empty(8 << 20, np.uint8)
        started.wait()
        while True:
            f.read(buf)

def mapped():
    m = kvikio.Mmap(path, "r")
    buf = np.empty(8 << 20, np.uint8)
    started.wait()
    while True:
        m.read(buf)

for target in (remote, local, mapped):
    threading.Thread(target=target, daemon=True).start()
started.wait()
time.sleep(0.3)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("transport", ["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def test_exit_with_reads_in_flight_on_daemon_threads(stalling_server, transport, tmp_path):
    """The interpreter exits while daemon threads are inside reads of each handle type: the
    process ends with its own exit code, not an abort (a thread taking the GIL back during
    finalization is ended by a forced unwind, which must not meet a destructor)."""
    path = tmp_path / "data"
    path.write_bytes(bytes(range(256)) * (32 << 12))
    env = {**os.environ, "KVIKIO_REMOTE_BACKEND": transport}
    child = subprocess.run(
        [sys.executable, "-c", EXIT_WITH_READS_IN_FLIGHT, f"{stalling_server}/stall/x", str(path)],
        capture_output=True, text=True, timeout=60, env=env)
    assert child.returncode == 0 and child.stdout.split() == ["exiting"], (
        f"exit {child.returncode}\n{child.stdout}\n{child.stderr[-2000:]}")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_child_of_fork_reads_through_what_its_parent_used(tmp_path, nginx):
    """fork() after the pool, the rings and both remote transports ran: the child's reads get
    the right bytes (through the parent's handles and new ones) and the parent's still do."""
    import numpy as np

    import kvikio
    import kvikio.defaults

    base, content = nginx
    served = np.frombuffer(content, np.uint8)
    data = np.random.default_rng(45).integers(0, 256, 3 << 20, dtype=np.uint8)
    path = tmp_path / "data"
    data.tofile(path)

    def reads_right(handle_file):
        for transport in ("LIBCURL_EASY", "LIBCURL_MULTI_POLL"):
            with kvikio.defaults.set({"remote_io_backend": transport}):
                remote = kvikio.RemoteFile.open_http(f"{base}/data.bin")
                buf = np.full(served.size, 0xEE, np.uint8)
                if remote.pread(buf, task_size=256 << 10).get() != served.size or \
                        not np.array_equal(buf, served):
                    return False
        for f in (handle_file, kvikio.CuFile(path, "r")):
            buf = np.full(data.size, 0xEE, np.uint8)
            if f.pread(buf, task_size=64 << 10).get() != data.size or \
                    not np.array_equal(buf, data):
                return False
        return True

    f = kvikio.CuFile(path, "r")
    assert reads_right(f)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if reads_right(f) else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the child of fork() did not finish its reads within 30 s")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    assert reads_right(f)
