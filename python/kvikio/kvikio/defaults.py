# SPDX-License-Identifier: Apache-2.0
"""Settings, by upstream's names: ``get(name)``, and ``set(name, value)`` or ``set({...})``,
which applies at once and, used as a context manager, restores the old values on exit.

The environment variables (``KVIKIO_*``) give the initial values; docs/settings.md has the
table. A bad value raises ValueError naming the setting and the value.
"""

from __future__ import annotations

from typing import Any

from kvikio import _lib

_d = _lib.defaults

# Upstream's names, and ours for the settings upstream lacks; each has a getter `name` and a
# setter `set_name` in kvikio._lib.defaults.
_NAMES = (
    "compat_mode", "num_threads", "task_size", "gds_threshold", "bounce_buffer_size",
    "num_bounce_buffers", "http_max_attempts", "http_timeout", "http_status_codes",
    "auto_direct_io_read", "auto_direct_io_read_overread", "auto_direct_io_write",
    "thread_pool_per_block_device", "local_io_backend", "remote_backend",
    "remote_max_connections", "remote_io_num_reactors", "remote_io_max_concurrent_requests",
    "event_pool_max_per_context", "ipc_export_cache_size", "ipc_open_cache_size",
)
_SETTINGS = {name: (getattr(_d, name), getattr(_d, "set_" + name)) for name in _NAMES}


def _setting(name: str):
    try:
        return _SETTINGS[name]
    except KeyError:
        raise ValueError(
            f"unknown setting {name!r}; known: {', '.join(sorted(_SETTINGS))}"
        ) from None


def get(name: str) -> Any:
    """The current value of setting ``name``."""
    return _setting(name)[0]()


class set:  # noqa: A001 - upstream's name
    """Sets ``set(name, value)`` or ``set({name: value, ...})`` now; as a context manager,
    restores the previous values on exit. All names are checked before anything is set."""

    def __init__(self, *args):
        if len(args) == 2 and isinstance(args[0], str):
            values = {args[0]: args[1]}
        elif len(args) == 1 and isinstance(args[0], dict):
            values = dict(args[0])
        else:
            raise ValueError("set(name, value) or set({name: value, ...})")
        pairs = [(name, _setting(name)) for name in values]
        self._old = {name: getter() for name, (getter, _) in pairs}
        done = []
        try:
            for name, (_, setter) in pairs:
                setter(values[name])
                done.append(name)
        except Exception:
            for name in done:  # all or nothing
                _SETTINGS[name][1](self._old[name])
            raise

    def __enter__(self) -> "set":
        return self

    def __exit__(self, *exc) -> None:
        for name, value in self._old.items():
            _SETTINGS[name][1](value)
