# SPDX-License-Identifier: Apache-2.0
"""Settings, by upstream's names: ``get(name)``, and ``set(name, value)`` or ``set({...})``,
which applies at once and, used as a context manager, restores the old values on exit.

The environment variables (``KVIKIO_*``) give the initial values; docs/settings.md has the
table. A bad value raises ValueError naming the setting and the value; an unknown name raises
KeyError, as upstream's does.
"""

from __future__ import annotations

import enum
from typing import Any, Literal, NamedTuple, overload

from kvikio import _lib
from kvikio._buffers import unsigned

_d = _lib.defaults


class CompatMode(enum.IntEnum):
    """Whether file I/O goes through POSIX (ON), cuFile (OFF), or cuFile where it works (AUTO)."""

    OFF = 0
    ON = 1
    AUTO = 2


class RemoteIOBackend(enum.IntEnum):
    """Remote transport: libcurl easy handles on the thread pool, or multi-poll reactors."""

    EASY_THREADPOOL = 0
    MULTI_POLL = 1


class RemoteReactorDispatch(enum.IntEnum):
    """How one remote pread's chunks are dealt to multi-poll reactors."""

    PER_CHUNK = 0
    PER_PREAD = 1


def _enum_setting(name: str, kind: type[enum.IntEnum], aliases: dict[str, int]):
    """(getter, setter) of a setting kept as an integer in _lib, shown as `kind`; the setter
    takes a member, its value, or a name (any case; `aliases` adds names)."""

    def setter(value) -> None:
        if isinstance(value, str):
            key = value.strip().upper()
            if key in kind.__members__:
                value = kind[key]
            elif key in aliases:
                value = aliases[key]
            else:
                names = ", ".join(list(kind.__members__) + list(aliases))
                raise ValueError(f"{name}: unknown value {value!r}; expected one of {names}")
        try:  # checked here: the C++ setter takes the enum's narrow type, where 256 would be 0
            member = kind(int(value))
        except ValueError:
            values = ", ".join(f"{m.value} ({m.name})" for m in kind)
            raise ValueError(f"{name}: unknown value {value!r}; expected one of {values}") from None
        getattr(_d, "set_" + name)(int(member))

    return (lambda: kind(getattr(_d, name)())), setter


def _unsigned(name: str, setter):
    """`setter` of an unsigned setting: a negative value is an OverflowError, as upstream's
    conversion to an unsigned C type raises; a float or a string a TypeError, 2^64 or more an
    OverflowError, each naming the setting; the bounds are the C++ setter's (ValueError)."""

    def checked(value) -> None:
        setter(unsigned("kvikio.defaults.set", name, value))

    return checked


_BOOLEAN_COMPAT = {"TRUE": 1, "YES": 1, "1": 1, "FALSE": 0, "NO": 0, "0": 0}
_REMOTE_ALIASES = {"LIBCURL_EASY": 0, "LIBCURL_MULTI_POLL": 1}

# Each setting: (getter, setter). Upstream's names first, then ours; "num_threads" and
# "remote_backend" are other names of "thread_pool_nthreads" and "remote_io_backend".
_SETTINGS: dict[str, tuple[Any, Any]] = {
    "compat_mode": _enum_setting("compat_mode", CompatMode, _BOOLEAN_COMPAT),
    "thread_pool_nthreads": (_d.num_threads, _unsigned("num_threads", _d.set_num_threads)),
    "remote_io_backend": _enum_setting("remote_io_backend", RemoteIOBackend, _REMOTE_ALIASES),
    "remote_io_reactor_dispatch": _enum_setting(
        "remote_io_reactor_dispatch", RemoteReactorDispatch, {}),
}
_SETTINGS["num_threads"] = _SETTINGS["thread_pool_nthreads"]
_SETTINGS["remote_backend"] = _SETTINGS["remote_io_backend"]


# The plain settings (integers and booleans) come from the library's table of settings.
for _name, _kind in _d.plain_settings:
    _setter = getattr(_d, "set_" + _name)
    _SETTINGS[_name] = (getattr(_d, _name),
                        _unsigned(_name, _setter) if _kind == "integer" else _setter)
for _name in ("http_status_codes", "local_io_backend"):
    _SETTINGS[_name] = (getattr(_d, _name), getattr(_d, "set_" + _name))
del _name, _kind, _setter


def _setting(name: str):
    try:
        return _SETTINGS[name]
    except KeyError:
        raise KeyError(
            f"unknown setting {name!r}; known: {', '.join(sorted(_SETTINGS))}"
        ) from None


class ConfigContextManager:
    """Applies ``config`` (name -> value) when made; on ``with`` exit restores the values it
    replaced. All names are checked before anything is set, and a value that fails undoes the
    ones set before it. Restoring restores every value, whatever fails, then raises the first
    failure."""

    def __init__(self, config: dict[str, Any]):
        pairs = [(name, _setting(name)) for name in config]
        self._old_properties = {name: getter() for name, (getter, _) in pairs}
        done = []
        try:
            for name, (_, setter) in pairs:
                setter(config[name])
                done.append(name)
        except Exception:
            self._restore(done)
            raise

    def __enter__(self) -> None:
        return None

    def __exit__(self, type_unused, value, traceback_unused) -> None:
        self._restore(self._old_properties)

    def _restore(self, names) -> None:
        """Restores every one of ``names``, whatever fails; then raises the first failure."""
        errors = []
        for name in names:
            try:
                _SETTINGS[name][1](self._old_properties[name])
            except Exception as e:  # noqa: BLE001 - the others are restored first
                errors.append(e)
        if errors:
            raise errors[0]


_SET_USAGE = (
    "Valid arguments are kvikio.defaults.set(config: dict) or "
    "kvikio.defaults.set(key: str, value: Any)"
)


# Upstream fixes these for the process once its reactors start, so its set() takes them one at a
# time, returns None for them (no context manager: nothing to revert to) and refuses a dict
# holding one. Here they may change at any time; set() answers as upstream's does.
_PROCESS_LIFETIME_PROPERTIES = frozenset(
    {"remote_io_num_reactors", "remote_io_reactor_dispatch", "remote_io_max_concurrent_requests"}
)


@overload
def set(config: dict[str, Any], /) -> ConfigContextManager: ...


@overload
def set(
    key: Literal["remote_io_num_reactors", "remote_io_reactor_dispatch",
                 "remote_io_max_concurrent_requests"],
    value: Any,
    /,
) -> None: ...


@overload
def set(key: str, value: Any, /) -> ConfigContextManager: ...


def set(*config) -> ConfigContextManager | None:  # noqa: A001 - upstream's name
    """Sets ``set(name, value)`` or ``set({name: value, ...})`` now; used as a context manager,
    restores the previous values on exit. ``remote_io_num_reactors``,
    ``remote_io_reactor_dispatch`` and ``remote_io_max_concurrent_requests`` are set one at a
    time, ``set(key, value)``, which returns None for them, as upstream's does."""
    if len(config) == 1 and isinstance(config[0], dict):
        fixed = _PROCESS_LIFETIME_PROPERTIES.intersection(config[0])
        if fixed:
            raise ValueError(
                f"{sorted(fixed)} are fixed for the process's remaining lifetime once the first "
                "remote I/O has been issued, so they cannot be reverted and must be set "
                "individually with kvikio.defaults.set(key, value), not as part of a dict."
            )
        return ConfigContextManager(config[0])
    if len(config) == 2 and isinstance(config[0], str):
        if config[0] in _PROCESS_LIFETIME_PROPERTIES:
            _setting(config[0])[1](config[1])
            return None
        return ConfigContextManager({config[0]: config[1]})
    raise ValueError(_SET_USAGE)


def get(config_name: str) -> Any:
    """The current value of setting ``config_name``, as it is configured (``"auto"``,
    ``CompatMode.AUTO``, ...); :func:`get_effective` gives what the library makes of it.

    Parameters
    ----------
    config_name
        One of the names of docs/settings.md: ``compat_mode``, ``thread_pool_nthreads``
        (``num_threads``), ``task_size``, ``gds_threshold``, ``bounce_buffer_size``,
        ``num_bounce_buffers``, ``http_max_attempts``, ``http_timeout``,
        ``http_status_codes``, ``auto_direct_io_read``, ``auto_direct_io_read_overread``,
        ``auto_direct_io_write``, ``thread_pool_per_block_device``, ``local_io_backend``,
        ``remote_io_backend`` (``remote_backend``), ``remote_max_connections``,
        ``remote_io_num_reactors``, ``remote_io_reactor_dispatch``,
        ``remote_io_max_concurrent_requests``, ``event_pool_max_per_context``,
        ``ipc_export_cache_size``, ``ipc_open_cache_size``.

    Raises
    ------
    KeyError
        ``config_name`` is not a setting (the message lists the names).

    Examples
    --------
    >>> kvikio.defaults.get("task_size") > 0
    True
    """
    return _setting(config_name)[0]()


class EffectiveSetting(NamedTuple):
    """One setting: its value as configured and the value the library acts on."""

    name: str
    variable: str  # the environment variable, e.g. "KVIKIO_COMPAT_MODE"
    configured: Any  # as get() returns it
    effective: Any  # of the same type; differs where the library decides (compat mode AUTO...)
    why: str  # why effective is what it is, where it differs ("" otherwise)

    def __str__(self) -> str:
        """``name: value`` where the library acts on the configured value, else ``name:
        configured -> effective (why)``; enumerations by their names."""

        def text(value: Any) -> str:
            if isinstance(value, enum.Enum):
                return value.name
            if isinstance(value, list):
                return ",".join(str(v) for v in value)
            return str(value)

        if self.effective == self.configured:
            return f"{self.name}: {text(self.effective)}"
        return f"{self.name}: {text(self.configured)} -> {text(self.effective)} ({self.why})"


# Other names of one setting.
_CANONICAL = {"num_threads": "thread_pool_nthreads", "remote_backend": "remote_io_backend"}


def _typed_like(configured: Any, text: str) -> Any:
    """`text`, the C++ library's spelling of a value, in the type get() gives."""
    if isinstance(configured, enum.IntEnum):
        return type(configured)[text]
    if isinstance(configured, bool):
        return text == "true"
    if isinstance(configured, int):
        return int(text)
    if isinstance(configured, list):
        return [int(code) for code in text.split(",") if code]
    return text


def effective() -> dict[str, EffectiveSetting]:
    """Every setting, by name: its configured value beside the value the library acts on.

    Where the library decides, the two differ and ``why`` says why: compat mode ``AUTO``
    becomes ``ON`` (POSIX) or ``OFF`` (cuFile) by whether GPUDirect Storage is available;
    ``local_io_backend`` ``"auto"`` becomes the backend of a large read into host memory by
    the current pool (``"io_uring"`` or ``"posix"``); ``bounce_buffer_size`` is the staging
    size in use. C++: ``kvikio::effective_settings()`` (``<kvikio/effective_settings.hpp>``).

    Examples
    --------
    >>> kvikio.defaults.effective()["compat_mode"].effective in (CompatMode.ON, CompatMode.OFF)
    True
    """
    out = {}
    for name, variable, _configured, effective_text, why in _d.effective_settings():
        configured = get(name)
        out[name] = EffectiveSetting(
            name, variable, configured, _typed_like(configured, effective_text), why)
    return out


def get_effective(config_name: str) -> Any:
    """The value setting ``config_name`` comes to: :func:`get`'s value where the library does
    not decide, else what it decided (see :func:`effective`).

    Raises
    ------
    KeyError
        ``config_name`` is not a setting.

    Examples
    --------
    >>> kvikio.defaults.get_effective("local_io_backend") in ("io_uring", "posix")
    True
    """
    _setting(config_name)
    return effective()[_CANONICAL.get(config_name, config_name)].effective


def is_compat_mode_preferred() -> bool:
    """Whether file I/O goes through POSIX rather than cuFile, as the compat_mode setting and
    this machine decide."""
    return _d.is_compat_mode_preferred()
