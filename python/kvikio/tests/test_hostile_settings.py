# SPDX-License-Identifier: Apache-2.0
"""Hostile cases, settings: a settings block restores every value it changed, whatever fails
(docs/python.md)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import kvikio.defaults as defaults


def test_a_settings_block_restores_everything_whatever_fails(monkeypatch):
    before = {name: defaults.get(name) for name in ("task_size", "gds_threshold", "num_threads")}
    getter, setter = defaults._SETTINGS["gds_threshold"]
    calls = []

    def refuses_to_restore(value):
        calls.append(value)
        if len(calls) > 1:  # the first call applies the block's value, the second restores
            raise RuntimeError("restore refused")
        setter(value)

    monkeypatch.setitem(defaults._SETTINGS, "gds_threshold", (getter, refuses_to_restore))
    with pytest.raises(RuntimeError, match="restore refused"):
        with defaults.set({"task_size": before["task_size"] * 2,
                           "gds_threshold": before["gds_threshold"] + 12345,
                           "num_threads": before["num_threads"] + 1}):
            assert defaults.get("num_threads") == before["num_threads"] + 1
    # The settings before and after the one that failed are back, in spite of the failure.
    assert defaults.get("task_size") == before["task_size"]
    assert defaults.get("num_threads") == before["num_threads"]
    setter(before["gds_threshold"])


def test_a_block_that_fails_to_apply_undoes_what_it_set():
    before = defaults.get("task_size")
    with pytest.raises((ValueError, OverflowError)):
        defaults.set({"task_size": before * 2, "num_threads": 0})
    assert defaults.get("task_size") == before


def test_a_misspelled_variable_is_warned_about_with_the_nearest_name():
    """KVIKIO_TASKSIZE is read by nothing: the first use of the settings says so, naming
    KVIKIO_TASK_SIZE, instead of silently running with the default."""
    env = {**os.environ, "KVIKIO_TASKSIZE": "65536"}
    child = subprocess.run(
        [sys.executable, "-c", "import kvikio.defaults as d; print(d.get('task_size'))"],
        capture_output=True, text=True, timeout=60, env=env)
    assert child.returncode == 0, child.stderr
    assert "KVIKIO_TASKSIZE is not a KvikIO setting" in child.stderr, child.stderr
    assert "did you mean KVIKIO_TASK_SIZE?" in child.stderr, child.stderr
