# SPDX-License-Identifier: Apache-2.0
"""kvikio.SummaryMonitor and kvikio.Summary: what a monitor counts, the readings' derived
values, intervals, the report and JSON, bytes and pickles, and monitors on several threads.
Host memory (NumPy) only: every local host read or write goes through the POSIX backend."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import threading
import time

import numpy as np
import pytest

import kvikio
from kvikio._lib import statistics as _native

from conftest import pattern

N = 1 << 20
BACKENDS = ("POSIX", "GDS", "MMAP", "REMOTE_HTTP", "REMOTE_HDFS")
COUNTERS = ("remote_size_probes", "remote_size_probing_ns", "http_connections", "http_dns_ns",
            "http_tcp_ns", "http_tls_ns", "http_retries", "http_retry_backoff_ns")
BACKEND_KEYS = ("num_ops", "bytes_transferred", "total_duration_ns", "num_errors")
FIELDS = ("start_unix_ns", "end_unix_ns", "num_ops", "num_reads", "num_writes",
          "bytes_requested", "bytes_transferred", "bytes_read", "bytes_written", "num_errors",
          "busy_ns", "total_duration_ns", "by_backend", "counters", "wall_ns",
          "busy_bytes_per_sec", "busy_fraction", "mean_duration_ns")


@pytest.fixture
def a_file(tmp_path):
    """1 MiB of pattern bytes, written before any monitor exists; returns (path, bytes)."""
    data = pattern(N, 63)
    path = tmp_path / "data.bin"
    with kvikio.CuFile(path, "w") as f:
        assert f.write(data) == N
    return path, data


def read(path, nbytes: int = N, offset: int = 0) -> np.ndarray:
    out = np.empty(nbytes, np.uint8)
    with kvikio.CuFile(path, "r") as f:
        assert f.read(out, nbytes, offset) == nbytes
    return out


def test_a_monitor_counts_the_calls_it_spans(a_file):
    path, data = a_file
    copy_path = path.with_name("copy.bin")
    with kvikio.SummaryMonitor() as monitor:
        with kvikio.CuFile(copy_path, "w") as f:
            assert f.write(data) == N
        assert (read(path) == data).all()
        assert (read(copy_path) == data).all()
    s = monitor.get()
    assert (s.num_ops, s.num_reads, s.num_writes, s.num_errors) == (3, 2, 1, 0)
    assert s.bytes_requested == s.bytes_transferred == 3 * N
    assert (s.bytes_read, s.bytes_written) == (2 * N, N)
    assert 0 < s.busy_ns <= s.wall_ns
    assert s.end_unix_ns - s.start_unix_ns == s.wall_ns
    assert s.by_backend["POSIX"] == {"num_ops": 3, "bytes_transferred": 3 * N,
                                     "total_duration_ns": s.total_duration_ns, "num_errors": 0}
    assert s.counters == dict.fromkeys(COUNTERS, 0)  # local I/O: no HTTP work


def test_nothing_before_the_monitor_is_counted(a_file):
    path, _ = a_file
    read(path)
    monitor = kvikio.SummaryMonitor()
    s = monitor.get()
    assert (s.num_ops, s.bytes_transferred, s.total_duration_ns, s.busy_ns) == (0, 0, 0, 0)
    assert (s.busy_bytes_per_sec, s.busy_fraction, s.mean_duration_ns) == (0.0, 0.0, 0)
    assert all(t["num_ops"] == 0 for t in s.by_backend.values())
    monitor.stop()


def test_a_failed_call_is_counted_as_an_error(a_file):
    path, data = a_file
    with kvikio.SummaryMonitor() as monitor:
        with kvikio.CuFile(path, "r") as f:
            with pytest.raises(RuntimeError):
                f.write(data)
    s = monitor.get()
    assert (s.num_ops, s.num_writes, s.num_errors) == (1, 1, 1)
    assert (s.bytes_requested, s.bytes_transferred, s.bytes_written) == (N, 0, 0)
    assert sum(t["num_errors"] for t in s.by_backend.values()) == 1
    assert s.by_backend["POSIX"]["num_errors"] == 1


def test_each_backend_is_counted_apart(a_file):
    path, data = a_file
    with kvikio.SummaryMonitor() as monitor:
        read(path, 4096)
        out = np.empty(1000, np.uint8)
        with kvikio.Mmap(path, "r") as m:
            assert m.read(out, out.nbytes, 10) == out.nbytes
    assert (out == data[10:1010]).all()
    s = monitor.get()
    assert s.num_ops == 2 and s.bytes_transferred == 4096 + 1000
    assert (s.by_backend["POSIX"]["num_ops"], s.by_backend["POSIX"]["bytes_transferred"]) == (
        1, 4096)
    assert (s.by_backend["MMAP"]["num_ops"], s.by_backend["MMAP"]["bytes_transferred"]) == (
        1, 1000)
    for name in ("GDS", "REMOTE_HTTP", "REMOTE_HDFS"):
        assert s.by_backend[name] == dict.fromkeys(BACKEND_KEYS, 0)
    for key, total in (("num_ops", s.num_ops), ("bytes_transferred", s.bytes_transferred),
                       ("total_duration_ns", s.total_duration_ns), ("num_errors", s.num_errors)):
        assert sum(t[key] for t in s.by_backend.values()) == total


def test_monitors_are_independent(a_file):
    path, _ = a_file
    outer = kvikio.SummaryMonitor()
    read(path)
    inner = kvikio.SummaryMonitor()
    read(path)
    assert outer.get().num_ops == 2 and inner.get().num_ops == 1
    before = outer.get()
    outer.reset()
    after = outer.get()
    assert (after.num_ops, after.bytes_transferred, after.busy_ns) == (0, 0, 0)
    assert after.start_unix_ns > before.start_unix_ns
    assert inner.get().num_ops == 1  # untouched by the other's reset
    inner.stop()
    read(path)
    assert outer.get().num_ops == 1 and inner.get().num_ops == 1
    outer.stop()


def test_the_context_manager_stops_on_exit(a_file):
    path, _ = a_file
    with kvikio.SummaryMonitor() as monitor:
        assert isinstance(monitor, kvikio.SummaryMonitor)
        read(path)
    at_exit = monitor.get()
    read(path)
    monitor.stop()  # again: nothing happens
    later = monitor.get()
    assert at_exit.num_ops == later.num_ops == 1
    assert (later.end_unix_ns, later.wall_ns, later.busy_ns) == (
        at_exit.end_unix_ns, at_exit.wall_ns, at_exit.busy_ns)
    assert monitor.since(at_exit).num_ops == 0
    assert monitor.since(at_exit).end_unix_ns == at_exit.end_unix_ns


def test_an_exception_leaves_the_block_and_the_monitor_is_stopped(a_file):
    path, _ = a_file
    with pytest.raises(KeyError, match="inside"):
        with kvikio.SummaryMonitor() as monitor:
            read(path)
            raise KeyError("inside")
    read(path)
    assert monitor.get().num_ops == 1


def test_a_monitor_cannot_be_pickled_or_extended():
    monitor = kvikio.SummaryMonitor()
    with pytest.raises(TypeError):
        pickle.dumps(monitor)
    with pytest.raises(AttributeError):
        monitor.anything = 1
    assert kvikio.SummaryMonitor.__slots__ == ("_handle",)
    with pytest.raises(AttributeError):
        monitor.since(None)  # no reading to subtract
    monitor.stop()


def test_a_summary_is_a_frozen_dataclass(a_file):
    path, _ = a_file
    with kvikio.SummaryMonitor() as monitor:
        read(path)
    s = monitor.get()
    assert tuple(f.name for f in dataclasses.fields(kvikio.Summary)) == FIELDS
    unhashed = {f.name for f in dataclasses.fields(kvikio.Summary) if f.hash is False}
    assert unhashed == {"by_backend", "counters"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.num_ops = 5
    assert "num_ops=1" in repr(s)
    assert hash(s) == hash(monitor.get()) and s == monitor.get()  # stopped: the same reading
    assert tuple(s.by_backend) == BACKENDS == _native._BACKEND_NAMES
    assert tuple(s.counters) == COUNTERS


def test_derived_values(a_file):
    path, _ = a_file
    with kvikio.SummaryMonitor() as monitor:
        for i in range(4):
            read(path, N // 4, i * (N // 4))
    s = monitor.get()
    assert s.num_ops == 4 and s.bytes_transferred == N
    # One operation at a time: their spans do not overlap, so busy time holds them all.
    assert 0 < s.total_duration_ns <= s.busy_ns <= s.wall_ns
    assert s.mean_duration_ns == s.total_duration_ns // s.num_ops
    for key, total in (("num_ops", s.num_ops), ("bytes_transferred", s.bytes_transferred),
                       ("total_duration_ns", s.total_duration_ns), ("num_errors", s.num_errors)):
        assert sum(t[key] for t in s.by_backend.values()) == total
    assert 0 < s.busy_fraction <= 1
    assert s.busy_fraction == pytest.approx(s.busy_ns / s.wall_ns)
    assert s.busy_bytes_per_sec == pytest.approx(s.bytes_transferred * 1e9 / s.busy_ns)
    assert s.busy_bytes_per_sec * s.busy_fraction == pytest.approx(
        s.bytes_transferred * 1e9 / s.wall_ns, rel=0.01)


def test_consecutive_intervals_partition_the_run(a_file):
    path, _ = a_file
    monitor = kvikio.SummaryMonitor()
    first = baseline = monitor.get()
    intervals = []
    for size in (N, N // 2, N // 4):
        read(path, size)
        now = monitor.get()
        intervals.append(now.since(baseline))
        baseline = now
    last = baseline
    monitor.stop()
    assert [i.num_ops for i in intervals] == [1, 1, 1]
    assert [i.bytes_transferred for i in intervals] == [N, N // 2, N // 4]
    assert all(i.busy_ns <= i.wall_ns for i in intervals)
    assert sum(i.num_ops for i in intervals) == last.num_ops - first.num_ops == 3
    assert sum(i.busy_ns for i in intervals) == last.busy_ns - first.busy_ns
    assert (sum(i.total_duration_ns for i in intervals)
            == last.total_duration_ns - first.total_duration_ns)
    assert intervals[0].start_unix_ns == first.end_unix_ns
    assert intervals[-1].end_unix_ns == last.end_unix_ns
    for a, b in zip(intervals, intervals[1:]):
        assert a.end_unix_ns == b.start_unix_ns  # they abut
    with pytest.raises(ValueError, match="earlier reading"):
        baseline.since(intervals[0])


def test_since_refuses_a_baseline_it_cannot_subtract(a_file):
    path, _ = a_file
    monitor, other = kvikio.SummaryMonitor(), kvikio.SummaryMonitor()
    first = monitor.get()
    read(path)
    interval = monitor.since(first)
    assert interval.num_ops == 1
    later = monitor.get()
    for previous in (interval, other.get()):
        with pytest.raises(ValueError):
            monitor.since(previous)
    with pytest.raises(ValueError):
        first.since(later)  # a later reading
    monitor.reset()
    with pytest.raises(ValueError):
        monitor.since(first)  # from before the reset
    with pytest.raises(AttributeError):
        later.since(None)
    monitor.stop()
    other.stop()


def test_the_report_and_the_json(a_file):
    path, _ = a_file
    with kvikio.SummaryMonitor() as monitor:
        read(path)
    s = monitor.get()
    text = str(s)
    assert text == s.report() == s.report(all_rows=False)
    assert text.startswith("KvikIO I/O summary\n") and text.endswith("\n")
    for label in ("wall time", "busy time", "busy bandwidth", "operations", "mean duration",
                  "bytes", "errors", "backend POSIX", "1 MiB", "% of the wall time"):
        assert label in text
    assert "backend MMAP" not in text and "http" not in text  # unused rows are left out
    every = s.report(all_rows=True)
    assert "backend MMAP" in every and "unused" in every and "http retries" in every

    j = json.loads(s.to_json())
    assert "\n" not in s.to_json()
    assert list(j) == ["start_unix_ns", "end_unix_ns", "wall_ns", "num_ops", "num_reads",
                       "num_writes", "bytes_requested", "bytes_transferred", "bytes_read",
                       "bytes_written", "num_errors", "busy_ns", "total_duration_ns",
                       "busy_bytes_per_sec", "busy_fraction", "mean_duration_ns", "counters",
                       "by_backend"]
    for name in FIELDS:
        if name in ("busy_bytes_per_sec", "busy_fraction"):  # printed to 6 digits
            assert j[name] == pytest.approx(getattr(s, name), rel=1e-5)
        else:
            assert j[name] == getattr(s, name), name
    assert (j["num_ops"], j["num_reads"], j["bytes_read"]) == (1, 1, N)
    assert abs(j["start_unix_ns"] - time.time_ns()) < 60 * 10**9
    assert j["total_duration_ns"] > 0


def test_a_summary_survives_bytes_pickle_and_copies(a_file):
    path, _ = a_file
    monitor = kvikio.SummaryMonitor()
    read(path)
    s = monitor.get()
    raw = s.serialize()
    assert isinstance(raw, bytes) and raw[:4] == b"KVSM" and len(raw) == 352
    back = kvikio.Summary.deserialize(raw)
    assert back == s and hash(back) == hash(s) and back.serialize() == raw
    assert str(back) == str(s) and back.to_json() == s.to_json()
    for other in (pickle.loads(pickle.dumps(s)), copy.copy(s), copy.deepcopy(s)):
        assert type(other) is kvikio.Summary and other == s
        assert other.to_json() == s.to_json()
    read(path)
    assert monitor.since(back).num_ops == 1  # still a reading of the monitor's span
    assert monitor.since(pickle.loads(pickle.dumps(s))).num_ops == 1
    monitor.stop()


def test_bytes_that_are_no_summary_are_refused():
    raw = kvikio.SummaryMonitor().get().serialize()
    for junk in (b"", b"not a summary", raw[:-1], raw + b"\0", b"X" + raw[1:],
                 raw[:4] + bytes([99]) + raw[5:]):
        with pytest.raises(ValueError):
            kvikio.Summary.deserialize(junk)
    for not_bytes in (bytearray(raw), memoryview(raw), raw.decode("latin-1"), None):
        with pytest.raises(TypeError):
            kvikio.Summary.deserialize(not_bytes)


def test_a_monitor_counts_every_thread(a_file):
    path, data = a_file
    threads, calls, size = 8, 6, N // 8
    errors = []
    done = threading.Event()

    def work(f, t):
        try:
            for k in range(calls):
                offset = ((t * calls + k) * size) % N
                out = np.empty(size, np.uint8)
                # Small tasks: one call made of several reads is still one operation.
                assert f.pread(out, size, offset, task_size=size // 4).get() == size
                assert (out == data[offset:offset + size]).all()
        except BaseException as e:  # reported below, on the test's thread
            errors.append(e)

    def watch(monitor):
        try:  # a reading taken while the work runs is consistent in itself
            while not done.is_set():
                s = monitor.get()
                assert s.busy_ns <= s.wall_ns and s.bytes_transferred <= s.bytes_requested
                assert s.num_reads == s.num_ops
        except BaseException as e:
            errors.append(e)

    with kvikio.CuFile(path, "r") as f, kvikio.SummaryMonitor() as monitor:
        workers = [threading.Thread(target=work, args=(f, t)) for t in range(threads)]
        watcher = threading.Thread(target=watch, args=(monitor,))
        watcher.start()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        done.set()
        watcher.join()
    assert not errors, errors
    s = monitor.get()
    assert s.num_ops == s.num_reads == threads * calls
    assert s.bytes_transferred == s.bytes_read == threads * calls * size
    assert s.by_backend["POSIX"]["num_ops"] == threads * calls
    assert 0 < s.busy_ns <= s.wall_ns


def test_monitors_on_several_threads_at_once(a_file):
    path, _ = a_file
    results, errors = [], []

    def own_monitor(reads):
        try:
            with kvikio.SummaryMonitor() as monitor:
                start = monitor.get()
                for _ in range(reads):
                    read(path, 4096)
            results.append((reads, start, monitor.get(), monitor.since(start)))
        except BaseException as e:
            errors.append(e)

    workers = [threading.Thread(target=own_monitor, args=(r,)) for r in (1, 2, 3, 4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    # Each monitor counts the whole process: at least its own thread's reads, at most all.
    assert len(results) == 4
    for reads, start, s, interval in results:
        assert reads <= s.num_ops <= 10
        assert interval.num_ops == s.num_ops - start.num_ops
        assert interval.start_unix_ns == start.end_unix_ns
