# SPDX-License-Identifier: Apache-2.0
"""kvikio.defaults: get/set by upstream's names, the context manager restoring, bad names and
values rejected (KeyError for a name, ValueError for a value), all-or-nothing."""

import pytest

import kvikio


def test_get_set_and_restore():
    before = kvikio.defaults.get("task_size")
    with kvikio.defaults.set("task_size", 12345):
        assert kvikio.defaults.get("task_size") == 12345
        with kvikio.defaults.set({"num_threads": 3, "gds_threshold": 77}):
            assert kvikio.defaults.get("num_threads") == 3
            assert kvikio.defaults.get("gds_threshold") == 77
    assert kvikio.defaults.get("task_size") == before
    kvikio.defaults.set("http_status_codes", [500, 503])
    assert kvikio.defaults.get("http_status_codes") == [500, 503]
    with kvikio.defaults.set("local_io_backend", "io_uring"):
        assert kvikio.defaults.get("local_io_backend") == "io_uring"
    assert kvikio.defaults.get("local_io_backend") == "auto"


def test_bad_names_and_values():
    with pytest.raises(KeyError, match="unknown setting 'no_such'"):  # upstream: KeyError
        kvikio.defaults.get("no_such")
    before = kvikio.defaults.get("task_size")
    with pytest.raises(ValueError):
        kvikio.defaults.set({"task_size": 999, "num_threads": 0})  # 0 threads is invalid
    assert kvikio.defaults.get("task_size") == before, "a failed set() left a value behind"
    with pytest.raises(ValueError):
        kvikio.defaults.set("local_io_backend", "nonsense")
    with pytest.raises(ValueError):
        kvikio.defaults.set("task_size")
    # Enum settings by number: only their members' values (256 must not wrap round to OFF).
    mode = kvikio.defaults.get("compat_mode")
    for bad in (256, -1, 3):
        with pytest.raises(ValueError, match=f"compat_mode: unknown value {bad}"):
            kvikio.defaults.set("compat_mode", bad)
        assert kvikio.defaults.get("compat_mode") == mode
    with pytest.raises(ValueError, match="remote_io_backend: unknown value 257"):
        kvikio.defaults.set("remote_io_backend", 257)


def test_infer_remote_endpoint_type():
    infer = kvikio.infer_remote_endpoint_type
    assert infer("s3://bucket/key") == kvikio.RemoteEndpointType.S3
    assert infer("http://nn:9870/webhdfs/v1/x") == kvikio.RemoteEndpointType.WEBHDFS
    assert infer("http://example.com/x.bin") == kvikio.RemoteEndpointType.HTTP


def test_bench_runs(tmp_path, capsys):
    import kvikio.bench

    path = tmp_path / "b.bin"
    kvikio.bench.main(["local", "read", "--file", str(path), "--size", "3MiB", "--threads",
                       "1,2", "--task-size", "1MiB", "--repeat", "2"])
    assert path.stat().st_size == 3 << 20
    out = capsys.readouterr().out
    assert "kvikio (python)" in out and "baseline python pread" in out
    kvikio.bench.main(["local", "write", "--file", str(path), "--size", "2MiB", "--threads", "2",
                       "--repeat", "1"])
    assert "baseline python pwrite" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        kvikio.bench.main(["local", "read", "--file", str(path), "--size", "lots"])


def test_effective_settings_are_typed_and_explained():
    names = {n for n in kvikio.defaults._SETTINGS if n not in kvikio.defaults._CANONICAL}
    effective = kvikio.defaults.effective()
    assert set(effective) == names
    for name, s in effective.items():
        assert s.name == name and s.variable.startswith("KVIKIO_")
        assert s.configured == kvikio.defaults.get(name)
        assert type(s.effective) is type(s.configured), name
        assert s.effective == s.configured or s.why, name
    with kvikio.defaults.set({"compat_mode": "AUTO", "local_io_backend": "posix"}):
        compat = kvikio.defaults.effective()["compat_mode"]
        assert compat.configured == kvikio.CompatMode.AUTO
        assert compat.effective == (kvikio.CompatMode.ON if kvikio.defaults.is_compat_mode_preferred()
                                    else kvikio.CompatMode.OFF)
        assert compat.why
        assert kvikio.defaults.get_effective("local_io_backend") == "posix"
    with kvikio.defaults.set({"num_threads": 3}):
        assert kvikio.defaults.get_effective("num_threads") == 3
    with pytest.raises(KeyError, match="unknown setting"):
        kvikio.defaults.get_effective("no_such_setting")


def test_effective_settings_print_enumerations_by_name():
    with kvikio.defaults.set({"compat_mode": "AUTO", "remote_io_backend": "MULTI_POLL",
                              "num_threads": 3}):
        effective = kvikio.defaults.effective()
        compat = effective["compat_mode"]
        decided = compat.effective.name
        assert str(compat) == f"compat_mode: AUTO -> {decided} ({compat.why})"
        assert str(effective["remote_io_backend"]) == "remote_io_backend: MULTI_POLL"
        assert str(effective["thread_pool_nthreads"]) == "thread_pool_nthreads: 3"
        codes = ",".join(str(c) for c in kvikio.defaults.get("http_status_codes"))
        assert str(effective["http_status_codes"]) == f"http_status_codes: {codes}"


def test_system_info_names_a_missing_libcufile(capsys):
    from kvikio.benchmarks.utils import pprint_sys_info

    pprint_sys_info()
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("libcufile version"))
    major, minor = kvikio.cufile_driver.libcufile_version()
    if not kvikio.cufile_driver._c.is_cufile_library_available():
        assert line.endswith("| none (libcufile.so.0 does not load)"), line
    elif major:
        assert line.endswith(f"| {major}.{minor}"), line
    else:
        assert line.endswith("| unknown (earlier than cuFile 1.8)"), line


def test_bench_help_is_plain_text(capsys):
    import kvikio.bench

    with pytest.raises(SystemExit):
        kvikio.bench.main(["--help"])
    out = capsys.readouterr().out
    assert "python -m kvikio.bench local read|write" in out
    assert "``" not in out
