# SPDX-License-Identifier: Apache-2.0
"""Upstream KvikIO's Python API, name by name: every public name of its package exists here with
a signature that upstream's callers can use unchanged (its parameters, in its order, with its
defaults; ours may add optional ones after them), and each behaves as upstream documents."""

from __future__ import annotations

import importlib
import inspect
import os

import numpy as np
import pytest

import kvikio
import kvikio.buffer
import kvikio.cufile_driver
import kvikio.defaults
import kvikio.numpy
import kvikio.utils

from conftest import pattern

_ = inspect.Parameter.empty
# Upstream's signatures, written out from its documentation and sources: (module, name) ->
# [(parameter, default)], `_` where there is no default; None for a name without a signature
# check (an enum, a constant, a module).
UPSTREAM = {
    ("kvikio", "__git_commit__"): None,
    ("kvikio", "__version__"): None,
    ("kvikio", "CompatMode"): None,
    ("kvikio", "RemoteIOBackend"): None,
    ("kvikio", "RemoteEndpointType"): None,
    ("kvikio", "CuFile"): [("file", _), ("flags", "r")],
    ("kvikio", "Mmap"): [("file_path", _), ("flags", "r"), ("initial_map_size", None),
                         ("initial_map_offset", 0), ("mode", 0o644), ("map_flags", None)],
    ("kvikio", "RemoteFile"): None,
    ("kvikio", "clear_page_cache"): [("reclaim_dentries_and_inodes", True),
                                     ("clear_dirty_pages", True)],
    ("kvikio", "drop_system_page_cache"): [("reclaim_dentries_and_inodes", True),
                                           ("sync_first", True)],
    ("kvikio", "drop_file_page_cache"): [("file", _), ("offset", 0), ("length", 0),
                                         ("sync_first", True)],
    ("kvikio", "get_page_cache_info"): [("file", _), ("offset", 0), ("length", 0)],
    ("kvikio", "infer_remote_endpoint_type"): [("url", _)],
    ("kvikio", "is_remote_file_available"): [],
    ("kvikio", "kvikio_deprecation_notice"): [("msg", "This function is deprecated."),
                                              ("since", _)],
    ("kvikio", "nsys_plugin_search_dir"): [],
    ("kvikio", "stream_register"): [("raw_stream", _), ("flags", _)],
    ("kvikio", "stream_deregister"): [("raw_stream", _)],
    ("kvikio", "memory_register"): [("buf", _)],
    ("kvikio", "memory_deregister"): [("buf", _)],
    ("kvikio", "bounce_buffer_free"): [],
    ("kvikio.defaults", "ConfigContextManager"): [("config", _)],
    ("kvikio.defaults", "set"): None,  # set(*config): a dict, or a key and a value
    ("kvikio.defaults", "get"): [("config_name", _)],
    ("kvikio.defaults", "is_compat_mode_preferred"): [],
    ("kvikio.utils", "LocalHttpServer"): [("root_path", _), ("range_support", True),
                                          ("max_lifetime", 120), ("handler", None),
                                          ("handler_options", None)],
    ("kvikio.utils", "call_once"): [("func", _)],
    ("kvikio.utils", "kvikio_deprecation_notice"): [("msg", "This function is deprecated."),
                                                    ("since", _)],
    ("kvikio.utils", "kvikio_deprecate_module"): [("msg", ""), ("since", _)],
    ("kvikio.cufile_driver", "ConfigContextManager"): [("config", _)],
    ("kvikio.cufile_driver", "set"): None,
    ("kvikio.cufile_driver", "get"): [("config_name", _)],
    ("kvikio.cufile_driver", "libcufile_version"): [],
    ("kvikio.cufile_driver", "driver_open"): [],
    ("kvikio.cufile_driver", "driver_close"): [],
    ("kvikio.cufile_driver", "initialize"): [],
    ("kvikio.cufile_driver", "properties"): None,
    ("kvikio.buffer", "memory_register"): [("buf", _)],
    ("kvikio.buffer", "memory_deregister"): [("buf", _)],
    ("kvikio.buffer", "bounce_buffer_free"): [],
    ("kvikio.stream", "stream_register"): [("raw_stream", _), ("flags", _)],
    ("kvikio.stream", "stream_deregister"): [("raw_stream", _)],
    ("kvikio.cufile", "IOFuture"): None,
    ("kvikio.cufile", "IOFutureStream"): None,
    ("kvikio.numpy", "LikeWrapper"): [("like", _)],
    ("kvikio.numpy", "fromfile"): [("file", _), ("dtype", float), ("count", -1), ("sep", ""),
                                   ("offset", 0), ("like", None)],
    ("kvikio.numpy", "tofile"): [("ary", _), ("file", _)],
    ("kvikio.remote_file", "is_remote_file_available"): [],
    ("kvikio.benchmarks.single_node_io", "main"): [("args", _)],
    ("kvikio.benchmarks.http_io", "main"): [("args", _)],
    ("kvikio.benchmarks.s3_io", "main"): [("args", _)],
    ("kvikio.benchmarks.zarr_io", "main"): [("args", _)],
    ("kvikio.benchmarks.utils", "drop_vm_cache"): [],
    ("kvikio.benchmarks.utils", "pprint_sys_info"): [],
    ("kvikio.benchmarks.utils", "parse_directory"): [("x", _)],
}

METHODS = {
    "CuFile": {
        "close": [], "fileno": [], "open_flags": [], "is_direct_io_supported": [],
        "pread": [("buf", _), ("size", None), ("file_offset", 0), ("task_size", None)],
        "pwrite": [("buf", _), ("size", None), ("file_offset", 0), ("task_size", None)],
        "read": [("buf", _), ("size", None), ("file_offset", 0), ("task_size", None)],
        "write": [("buf", _), ("size", None), ("file_offset", 0), ("task_size", None)],
        "raw_read_async": [("buf", _), ("raw_stream", _), ("size", None), ("file_offset", 0),
                           ("dev_offset", 0)],
        "raw_write_async": [("buf", _), ("raw_stream", _), ("size", None), ("file_offset", 0),
                            ("dev_offset", 0)],
        "raw_read": [("buf", _), ("size", None), ("file_offset", 0), ("dev_offset", 0)],
        "raw_write": [("buf", _), ("size", None), ("file_offset", 0), ("dev_offset", 0)],
    },
    "Mmap": {
        "initial_map_size": [], "initial_map_offset": [], "file_size": [], "close": [],
        "closed": [],
        "read": [("buf", _), ("size", None), ("offset", 0)],
        "pread": [("buf", _), ("size", None), ("offset", 0), ("task_size", None)],
    },
    "RemoteFile": {
        "open_http": [("url", _), ("nbytes", None)],
        "open_s3": [("bucket_name", _), ("object_name", _), ("nbytes", None),
                    ("aws_region_name", None), ("aws_access_key_id", None),
                    ("aws_secret_access_key", None), ("aws_endpoint_url", None),
                    ("aws_session_token", None)],
        "open_s3_url": [("url", _), ("nbytes", None), ("aws_region_name", None),
                        ("aws_access_key_id", None), ("aws_secret_access_key", None),
                        ("aws_endpoint_url", None), ("aws_session_token", None)],
        "open_s3_public": [("url", _), ("nbytes", None)],
        "open_s3_presigned_url": [("presigned_url", _), ("nbytes", None)],
        "open_webhdfs": [("url", _), ("nbytes", None)],
        "open": [("url", _), ("remote_endpoint_type", kvikio.RemoteEndpointType.AUTO),
                 ("allow_list", None), ("nbytes", None)],
        "close": [], "nbytes": [], "remote_endpoint_type": [],
        "read": [("buf", _), ("size", None), ("file_offset", 0)],
        "pread": [("buf", _), ("size", None), ("file_offset", 0)],
    },
}


def check_signature(obj, expected, where: str) -> None:
    if inspect.isclass(obj):
        obj = obj.__init__
    params = [p for p in inspect.signature(obj).parameters.values() if p.name not in ("self", "cls")]
    for i, (name, default) in enumerate(expected):
        assert i < len(params), f"{where}: upstream's parameter {name!r} is missing"
        p = params[i]
        assert p.name == name, f"{where}: parameter {i} is {p.name!r}, upstream's is {name!r}"
        if default is _:
            assert p.default is _, f"{where}: {name} has a default here, none upstream"
        else:
            assert p.default == default, f"{where}: {name}={p.default!r}, upstream {default!r}"
    for p in params[len(expected):]:  # ours may add parameters, but optional ones only
        assert p.default is not _ or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD), \
            f"{where}: extra parameter {p.name!r} has no default"


@pytest.mark.parametrize("module,name", sorted(UPSTREAM), ids=lambda v: str(v))
def test_every_upstream_name(module, name):
    obj = getattr(importlib.import_module(module), name)
    if UPSTREAM[(module, name)] is not None:
        check_signature(obj, UPSTREAM[(module, name)], f"{module}.{name}")


@pytest.mark.parametrize("cls,method", [(c, m) for c in METHODS for m in METHODS[c]])
def test_every_upstream_method(cls, method):
    check_signature(getattr(getattr(kvikio, cls), method), METHODS[cls][method],
                    f"kvikio.{cls}.{method}")


def test_all_holds_upstreams_names():
    upstream_all = {"__git_commit__", "__version__", "clear_page_cache", "CuFile",
                    "drop_file_page_cache", "drop_system_page_cache", "Mmap",
                    "get_page_cache_info", "infer_remote_endpoint_type",
                    "is_remote_file_available", "kvikio_deprecation_notice",
                    "nsys_plugin_search_dir", "RemoteEndpointType", "RemoteFile",
                    "stream_register", "stream_deregister", "memory_register",
                    "memory_deregister", "bounce_buffer_free"}
    assert upstream_all <= set(kvikio.__all__)
    for name in kvikio.__all__:
        assert hasattr(kvikio, name), name
    assert isinstance(kvikio.__git_commit__, str) and isinstance(kvikio.__version__, str)
    assert kvikio.__version__


def test_defaults_with_compat_mode_and_context():
    assert [m.name for m in kvikio.CompatMode] == ["OFF", "ON", "AUTO"]
    before = kvikio.defaults.get("compat_mode")
    with kvikio.defaults.set("compat_mode", kvikio.CompatMode.ON) as entered:
        assert entered is None  # upstream's __enter__ returns None
        assert kvikio.defaults.get("compat_mode") == kvikio.CompatMode.ON
        assert kvikio.defaults.is_compat_mode_preferred()
    assert kvikio.defaults.get("compat_mode") == before
    threads, task = kvikio.defaults.get("num_threads"), kvikio.defaults.get("task_size")
    kvikio.defaults.set({"thread_pool_nthreads": 3, "task_size": 1 << 20})  # no `with`: stays
    assert kvikio.defaults.get("num_threads") == 3
    kvikio.defaults.set({"num_threads": threads, "task_size": task})
    backend = kvikio.defaults.get("remote_io_backend")
    with kvikio.defaults.set("remote_io_backend", kvikio.RemoteIOBackend.MULTI_POLL):
        assert kvikio.defaults.get("remote_io_backend") == kvikio.RemoteIOBackend.MULTI_POLL
    assert kvikio.defaults.get("remote_io_backend") == backend
    # The three keys upstream fixes once its reactors start: set one at a time, None back, and
    # refused in a dict (upstream's words).
    dispatch = kvikio.defaults.get("remote_io_reactor_dispatch")
    for key, value in (("remote_io_reactor_dispatch", kvikio.RemoteReactorDispatch.PER_PREAD),
                       ("remote_io_num_reactors", 3),
                       ("remote_io_max_concurrent_requests", 77)):
        assert kvikio.defaults.set(key, value) is None
        assert kvikio.defaults.get(key) == value
        with pytest.raises(ValueError, match=rf"\['{key}'\] are fixed for the process's remaining"):
            kvikio.defaults.set({key: value, "task_size": 1 << 20})
    kvikio.defaults.set("remote_io_reactor_dispatch", dispatch)
    with pytest.raises(KeyError):
        kvikio.defaults.set("set_task_size", 1)
    with pytest.raises(ValueError, match="Valid arguments are kvikio.defaults.set"):
        kvikio.defaults.set("task_size")
    with pytest.raises(ValueError, match="positive integer"):
        kvikio.defaults.set("num_threads", 0)
    with pytest.raises(OverflowError):
        kvikio.defaults.set("task_size", -1)


def test_utils_call_once_and_deprecations():
    calls = []

    @kvikio.utils.call_once
    def f(x):
        calls.append(x)
        return x * 2

    assert f(1) == 2 and f(5) == 2 and calls == [1]

    @kvikio.kvikio_deprecation_notice("my deprecation notice", since="my_version")
    def old():
        """Old."""
        return 7

    assert ".. deprecated:: my_version" in old.__doc__
    with pytest.warns(FutureWarning, match="my deprecation notice"):
        assert old() == 7
    with pytest.warns(FutureWarning, match="my_version.*my deprecation notice"):
        kvikio.utils.kvikio_deprecate_module("my deprecation notice", since="my_version")


def test_local_http_server_serves_ranges_to_remote_file(tmp_path):
    data = pattern(3 << 20, 21)
    data.tofile(tmp_path / "data.bin")
    with kvikio.utils.LocalHttpServer(tmp_path, max_lifetime=60) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with kvikio.RemoteFile.open_http(f"{server.url}/data.bin") as f:
            assert f.nbytes() == data.size
            assert str(f).startswith('<RemoteFile "') and "data.bin" in str(f)
            out = np.full(data.size + 2, 0xEE, np.uint8)
            assert f.pread(out[1:-1], task_size=1 << 20).get() == data.size
            np.testing.assert_array_equal(out[1:-1], data)
            assert out[0] == 0xEE and out[-1] == 0xEE
            f.close()
            part = np.zeros(1000, np.uint8)
            assert f.read(part, file_offset=12345) == 1000  # still usable after close()
            np.testing.assert_array_equal(part, data[12345:13345])


def test_page_cache_functions_take_paths_descriptors_and_files(tmp_path, monkeypatch):
    page = os.sysconf("SC_PAGESIZE")
    path = tmp_path / "f.bin"
    pattern(32 * page + 7, 5).tofile(path)
    with open(path, "rb") as fileobj:
        fileobj.read()
        for file in (path, str(path), fileobj.fileno(), fileobj):
            cached, total = kvikio.get_page_cache_info(file)
            assert total == 33
            assert 0 <= cached <= total
        assert kvikio.get_page_cache_info(fileobj, page, page) == (1, 1)
        assert kvikio.get_page_cache_info(path, 1 << 30) == (0, 0)
        kvikio.drop_file_page_cache(fileobj)
        kvikio.drop_file_page_cache(path, 0, page, sync_first=False)
    with pytest.raises(ValueError, match="The type of `file` must be"):
        kvikio.get_page_cache_info(3.5)
    # The system-wide drop is not run for real here (it would empty the machine's page cache;
    # the C++ suite runs it without privilege): the Python layer passes its arguments through.
    calls = []
    monkeypatch.setattr(kvikio._lib, "drop_system_page_cache",
                        lambda reclaim, sync: calls.append((reclaim, sync)) or False)
    assert kvikio.drop_system_page_cache(False, True) is False
    with pytest.warns(FutureWarning, match="drop_system_page_cache"):
        assert kvikio.clear_page_cache(True, False) is False
    assert calls == [(False, True), (True, False)]
    assert kvikio.bounce_buffer_free() >= 0


def test_cufile_driver():
    version = kvikio.cufile_driver.libcufile_version()
    assert isinstance(version, tuple) and len(version) == 2
    with pytest.raises(KeyError, match="read-only"):
        kvikio.cufile_driver.set("major_version", 3)
    with pytest.raises(KeyError):
        kvikio.cufile_driver.get("no_such_property")
    with pytest.raises(ValueError, match="Valid arguments are kvikio.cufile_driver.set"):
        kvikio.cufile_driver.set(1, 2, 3)
    assert isinstance(kvikio.cufile_driver.properties.is_gds_available, bool)
    if not kvikio.cufile_driver.is_cufile_usable():
        with pytest.raises(RuntimeError, match="cuFile"):
            kvikio.cufile_driver.driver_open()
    else:
        kvikio.cufile_driver.driver_open()
        kvikio.cufile_driver.driver_close()


def test_mmap_after_close(data_file):
    path, content = data_file
    m = kvikio.Mmap(path)
    assert m.file_size() == content.size and not m.closed()
    m.close()
    m.close()  # twice is fine
    assert m.closed() and m.file_size() == 0
    with pytest.raises(RuntimeError, match="Cannot read from a closed MmapHandle"):
        m.read(np.empty(10, np.uint8))
    with pytest.raises(RuntimeError, match="Cannot read from a closed MmapHandle"):
        m.pread(np.empty(10, np.uint8)).get()
    with pytest.raises(ValueError, match="Unknown file open flag"):
        kvikio.Mmap(path, "z")
    with pytest.raises(ValueError, match="File-backed mmap write is not supported yet"):
        kvikio.Mmap(path, "w")
    with pytest.raises(IndexError, match="Offset must be less than the file size"):
        kvikio.Mmap(path, initial_map_offset=content.size)
    with pytest.raises(RuntimeError, match="Unable to open file"):
        kvikio.Mmap(str(path) + ".missing")


def test_infer_remote_endpoint_type_errors():
    with pytest.raises(RuntimeError, match="Bad scheme"):
        kvikio.infer_remote_endpoint_type("example.com/path")
    with pytest.raises(RuntimeError, match="Unsupported endpoint URL"):
        kvikio.infer_remote_endpoint_type("unsupported://example.com/path")
    with pytest.raises(ValueError, match="Unsupported protocol"):
        kvikio.RemoteFile.open_s3_url("ftp://bucket/object")


def test_cufile_errors_as_upstream(tmp_path):
    path = tmp_path / "w.bin"
    with kvikio.CuFile(path, "w") as f:
        f.write(pattern(100, 1))
        with pytest.raises(RuntimeError, match="Operation not permitted"):
            f.read(np.empty(100, np.uint8))
    with pytest.raises(ValueError, match="Unknown file open flag"):
        kvikio.CuFile(path, "x")


def test_numpy_fromfile_tofile_with_file_objects_and_strides(tmp_path):
    path = tmp_path / "a.bin"
    src = np.arange(1000, dtype=np.int32)
    with open(path, "wb") as fileobj:
        kvikio.numpy.tofile(src[::2], fileobj)  # non-contiguous: written in C order
    assert path.read_bytes() == src[::2].tobytes()
    with open(path, "rb") as fileobj:
        got = kvikio.numpy.fromfile(fileobj, dtype=np.int32)
    np.testing.assert_array_equal(got, src[::2])
    np.testing.assert_array_equal(kvikio.numpy.fromfile(path, np.int32, count=10, offset=8),
                                  src[::2][2:12])
    np.testing.assert_array_equal(kvikio.numpy.fromfile(path, np.int32, count=10**6),
                                  src[::2])  # no more than the file holds
    with pytest.raises(NotImplementedError, match="sep"):
        kvikio.numpy.fromfile(path, sep=",")
    wrapped = np.fromfile(path, np.int32, like=kvikio.numpy.LikeWrapper(np.empty(())))
    np.testing.assert_array_equal(wrapped, src[::2])


def test_numpy_with_device_arrays(tmp_path):
    cupy = pytest.importorskip("cupy", reason="device arrays of kvikio.numpy need CuPy")
    src = cupy.arange(4096, dtype=cupy.float64)
    path = tmp_path / "d.bin"
    kvikio.numpy.tofile(src[::3], path)
    assert path.read_bytes() == cupy.asnumpy(src[::3]).tobytes()
    got = kvikio.numpy.fromfile(path, np.float64, like=cupy.empty(()))
    assert isinstance(got, cupy.ndarray)
    cupy.testing.assert_array_equal(got, src[::3])


def test_benchmarks_front_ends(tmp_path, capsys):
    from kvikio.benchmarks import http_io, single_node_io, zarr_io

    single_node_io.run(["-n", "2MiB", "-d", str(tmp_path), "-t", "2", "--nruns", "2",
                        "--api", "cufile", "cufile-mf", "cufile-ma", "cufile-mfma", "posix",
                        "zarr"])
    out = capsys.readouterr().out
    assert "Roundtrip benchmark" in out and "nthreads          | 2" in out
    for api in ("cufile", "cufile-mf", "cufile-ma", "cufile-mfma", "posix", "zarr"):
        assert f"{api} read" in out and f"{api} write" in out
    args = http_io.parse_args(["-n", "100000", "--api", "numpy", "--bundled-server-lifetime",
                               "60"])
    http_io.main(args)
    assert "numpy-read" in capsys.readouterr().out
    assert zarr_io.parse_args([]).api == ("kvikio", "posix")
    zarr_io.main(zarr_io.parse_args(["-n", "1MiB", "--chunksize", "256KiB", "-d", str(tmp_path)]))
    out = capsys.readouterr().out
    assert "kvikio read" in out and "posix write" in out and "chunksize         | 262144" in out
    with pytest.raises(SystemExit):
        single_node_io.parse_args(["--api", "nonsense"])


def test_s3_benchmark_with_the_bundled_server(capsys, monkeypatch):
    from kvikio.benchmarks import s3_io

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    s3_io.run(["-n", "100000", "--use-bundled-server", "--api", "numpy", "--nruns", "2"])
    out = capsys.readouterr().out
    assert "nelem       | 100000" in out and "numpy-read" in out
    assert "AWS_ENDPOINT_URL" not in os.environ  # the server's address went with it


def test_stream_registration_and_raw_async(device, tmp_path):
    path = tmp_path / "r.bin"
    data = pattern(1 << 16, 9)
    data.tofile(path)
    stream = device.stream()
    kvikio.stream_register(raw_stream=stream, flags=0x0F)  # keywords as upstream names them
    kvikio.stream_deregister(raw_stream=stream)
    out = device.empty(data.size)
    with kvikio.CuFile(path, "r") as f:
        assert f.raw_read_async(out, raw_stream=stream).check_bytes_done() == data.size
        back = device.empty(data.size)
        assert f.raw_read_async(back, stream, data.size - 1, 1).check_bytes_done() == data.size - 1
    np.testing.assert_array_equal(device.to_host(out), data)
    np.testing.assert_array_equal(device.to_host(back)[: data.size - 1], data[1:])


def test_nsys_plugin_search_dir():
    path = kvikio.nsys_plugin_search_dir()
    assert os.path.isabs(path) and path.endswith(os.path.join("kvikio", "nsys-plugins"))
