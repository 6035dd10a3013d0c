# SPDX-License-Identifier: Apache-2.0
"""Hostile cases, process lifecycle: a Python signal handler runs while a read is waited for
(docs/python.md, "What may be interrupted"). In a child process (its main thread gets the
signal), a read from the misbehaving server's /stall/ path, which sends headers and then
nothing, is waited for with ``get()`` under ``signal.alarm(1)``: the alarm's handler must
interrupt the wait within a couple of seconds, not when the HTTP timeout ends the read."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import start_server

CHILD = r"""
import signal, sys, time
import numpy as np
import kvikio, kvikio.defaults

class Alarm(Exception):
    pass

def on_alarm(signum, frame):
    raise Alarm()

kvikio.defaults.set({"http_timeout": 8, "http_max_attempts": 1})
f = kvikio.RemoteFile.open_http(sys.argv[1], 100000)
buf = np.empty(1000, np.uint8)
signal.signal(signal.SIGALRM, on_alarm)
t0 = time.monotonic()
future = f.pread(buf, 1000, 0)
signal.alarm(1)
try:
    future.get()
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


@pytest.mark.parametrize("transport", ["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def test_an_alarm_interrupts_a_wait_for_a_stalled_read(stalling_server, transport):
    env = {**os.environ, "KVIKIO_REMOTE_BACKEND": transport}
    child = subprocess.run([sys.executable, "-c", CHILD, f"{stalling_server}/stall/x"],
                           capture_output=True, text=True, timeout=60, env=env)
    words = child.stdout.split()
    assert child.returncode == 0 and words[:1] == ["INTERRUPTED"], (
        f"exit {child.returncode}\n{child.stdout}\n{child.stderr[-2000:]}")
    assert float(words[1]) < 3.0, child.stdout  # the alarm at 1 s, not the 8 s timeout
