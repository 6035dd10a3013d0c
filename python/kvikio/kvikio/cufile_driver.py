# SPDX-License-Identifier: Apache-2.0
"""The cuFile driver: opening and closing it, its version, and its properties by upstream's
names (``get(name)``, ``set(name, value)`` or ``set({...})``, which restores on ``with`` exit).

Without cuFile (compatibility mode) the properties raise RuntimeError, but
``is_gds_available``, which is False.
"""

from __future__ import annotations

import atexit
from typing import Any, overload

from kvikio import _lib

_c = _lib.cufile_driver


def is_cufile_usable() -> bool:
    """Whether libcufile.so.0 loads and its driver opens (else compatibility mode serves)."""
    return _c.is_cufile_usable()


def is_gds_available() -> bool:
    """Whether GPUDirect Storage is available (cuFile usable, not in compatibility mode)."""
    return _c.is_gds_available()


def libcufile_version() -> tuple[int, int]:
    """cuFile's version as (major, minor); (0, 0) without cuFile or before cuFile 1.8."""
    major, rest = divmod(_c.libcufile_version(), 1000)
    return major, rest // 10


def driver_open() -> None:
    """Opens the cuFile driver (each open needs its close). RuntimeError without cuFile."""
    _c.driver_open()


def driver_close() -> None:
    """Closes the cuFile driver. RuntimeError without cuFile."""
    _c.driver_close()


def initialize() -> None:
    """Opens the cuFile driver now and closes it when the interpreter exits."""
    driver_open()
    atexit.register(driver_close)


class DriverProperties:
    """The cuFile driver's properties; sizes are in KiB. Each is asked of the driver when read."""

    def __init__(self) -> None:
        self._props = _c.DriverProperties()

    @property
    def is_gds_available(self) -> bool:
        try:
            return self._props.is_gds_available()
        except RuntimeError:
            return False

    @property
    def major_version(self) -> int:
        return self._props.get_nvfs_major_version()

    @property
    def minor_version(self) -> int:
        return self._props.get_nvfs_minor_version()

    @property
    def allow_compat_mode(self) -> bool:
        return self._props.get_nvfs_allow_compat_mode()

    @property
    def poll_mode(self) -> bool:
        return self._props.get_nvfs_poll_mode()

    @poll_mode.setter
    def poll_mode(self, enable: bool) -> None:
        self._props.set_nvfs_poll_mode(enable)

    @property
    def poll_thresh_size(self) -> int:
        return self._props.get_nvfs_poll_thresh_size()

    @poll_thresh_size.setter
    def poll_thresh_size(self, size_in_kb: int) -> None:
        self._props.set_nvfs_poll_thresh_size(size_in_kb)

    @property
    def max_device_cache_size(self) -> int:
        return self._props.get_max_device_cache_size()

    @max_device_cache_size.setter
    def max_device_cache_size(self, size_in_kb: int) -> None:
        self._props.set_max_device_cache_size(size_in_kb)

    @property
    def per_buffer_cache_size(self) -> int:
        return self._props.get_per_buffer_cache_size()

    @property
    def max_pinned_memory_size(self) -> int:
        return self._props.get_max_pinned_memory_size()

    @max_pinned_memory_size.setter
    def max_pinned_memory_size(self, size_in_kb: int) -> None:
        self._props.set_max_pinned_memory_size(size_in_kb)


properties = DriverProperties()

_SETTABLE = ("poll_mode", "poll_thresh_size", "max_device_cache_size", "max_pinned_memory_size")
_READ_ONLY = ("is_gds_available", "major_version", "minor_version", "allow_compat_mode",
              "per_buffer_cache_size")


def _get_property(name: str) -> Any:
    if name not in _SETTABLE and name not in _READ_ONLY:
        raise KeyError(f"unknown cuFile driver property {name!r}; known: "
                       f"{', '.join(_SETTABLE + _READ_ONLY)}")
    return getattr(properties, name)


def _set_property(name: str, value: Any) -> None:
    if name in _READ_ONLY:
        raise KeyError("This property is read-only.")
    if name not in _SETTABLE:
        raise KeyError(f"unknown cuFile driver property {name!r}; settable: {', '.join(_SETTABLE)}")
    setattr(properties, name, value)


class ConfigContextManager:
    """Applies ``config`` (property -> value) when made; on ``with`` exit restores the values
    it replaced."""

    def __init__(self, config: dict[str, Any]):
        self._old_properties = {}
        for name in config:
            if name in _READ_ONLY:
                raise KeyError("This property is read-only.")
        for name, value in config.items():
            old = _get_property(name)
            _set_property(name, value)
            self._old_properties[name] = old

    def __enter__(self) -> None:
        return None

    def __exit__(self, type_unused, value, traceback_unused) -> None:
        for name, old in self._old_properties.items():
            _set_property(name, old)


@overload
def set(config: dict[str, Any], /) -> ConfigContextManager: ...


@overload
def set(key: str, value: Any, /) -> ConfigContextManager: ...


def set(*config) -> ConfigContextManager:  # noqa: A001 - upstream's name
    """Sets driver properties now: ``set(name, value)`` or ``set({name: value})``."""
    if len(config) == 1 and isinstance(config[0], dict):
        return ConfigContextManager(config[0])
    if len(config) == 2 and isinstance(config[0], str):
        return ConfigContextManager({config[0]: config[1]})
    raise ValueError(
        "Valid arguments are kvikio.cufile_driver.set(config: dict) or "
        "kvikio.cufile_driver.set(key: str, value: Any)"
    )


def get(config_name: str) -> Any:
    """The current value of driver property ``config_name``."""
    return _get_property(config_name)
