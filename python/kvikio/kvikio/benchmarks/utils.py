# SPDX-License-Identifier: Apache-2.0
"""What upstream's benchmark scripts share: system information, result lines, arguments."""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics

import numpy

import kvikio
import kvikio.cufile_driver
import kvikio.defaults
from kvikio.bench import parse_size  # noqa: F401 - upstream's scripts parse sizes with it


def drop_vm_cache() -> None:
    """Drops the system's page cache (needs root or password-less sudo)."""
    if not kvikio.drop_system_page_cache():
        raise RuntimeError("dropping the page cache needs root or password-less sudo")


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


def pprint_sys_info() -> None:
    """Prints the GPU, cuFile and compatibility-mode lines of upstream's scripts."""
    props = kvikio.cufile_driver.properties
    if kvikio.defaults.is_compat_mode_preferred():
        print("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!")
        print("   WARNING - KvikIO compat mode   ")
        print("      libcufile.so not used       ")
        print("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!")
    elif not props.is_gds_available:
        print("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!")
        print("   WARNING - cuFile compat mode   ")
        print("         GDS not enabled          ")
        print("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!")
    try:
        import pynvml

        pynvml.nvmlInit()
        dev = pynvml.nvmlDeviceGetHandleByIndex(0)
        gpu_name = pynvml.nvmlDeviceGetName(dev)
        mem_total = format_bytes(pynvml.nvmlDeviceGetMemoryInfo(dev).total)
        bar1_total = format_bytes(pynvml.nvmlDeviceGetBAR1MemoryInfo(dev).bar1Total)
    except ImportError:
        gpu_name = mem_total = bar1_total = "Unknown (install nvidia-ml-py)"
    major, minor = kvikio.cufile_driver.libcufile_version()
    if major:
        version = f"{major}.{minor}"
    elif not kvikio.cufile_driver._c.is_cufile_library_available():
        version = "none (libcufile.so.0 does not load)"
    else:
        version = "unknown (earlier than cuFile 1.8)"
    gds = (f"v{props.major_version}.{props.minor_version}" if props.is_gds_available
           else "N/A (Compatibility Mode)")
    config = os.path.realpath(os.getenv("CUFILE_ENV_PATH_JSON", "/etc/cufile.json"))
    print(f"GPU               | {gpu_name}")
    print(f"GPU Memory Total  | {mem_total}")
    print(f"BAR1 Memory Total | {bar1_total}")
    print(f"libcufile version | {version}")
    print(f"GDS driver        | {gds}")
    print(f"GDS config.json   | {config}")


def pprint_api_res(name: str, samples: list[float], *, harmonic: bool = False) -> None:
    """One result line: the mean throughput (bytes/s) and, for several runs, its spread."""
    mean = statistics.harmonic_mean(samples) if harmonic else statistics.mean(samples)
    line = f"{name}".ljust(18) + f"| {format_bytes(mean).rjust(10)}/s".ljust(14)
    if len(samples) > 1:
        stdev = statistics.stdev(samples) / mean * 100
        line += " ± %5.2f %%" % stdev
        line += " (" + ", ".join(f"{format_bytes(s)}/s" for s in samples) + ")"
    print(line)


def parse_directory(x: str | None) -> pathlib.Path | None:
    """An existing directory (or None)."""
    if x is None:
        return x
    path = pathlib.Path(x)
    if not path.is_dir():
        raise argparse.ArgumentTypeError("Must be a directory")
    return path


def array_module(api: str = "cupy"):
    """CuPy for the device APIs where it is importable, else NumPy."""
    if api != "numpy":
        try:
            import cupy

            return cupy
        except ImportError:
            pass
    import numpy

    return numpy


def add_array_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the array benchmarks (http_io, s3_io): -n/--nelem, --dtype, --nruns,
    -t/--nthreads, as upstream's."""
    parser.add_argument("-n", "--nelem", metavar="NELEM", default="1024", type=int,
                        help="Number of elements (default: %(default)s).")
    parser.add_argument("--dtype", metavar="DATATYPE", default="float32", type=numpy.dtype,
                        help="The data type of each element (default: %(default)s).")
    parser.add_argument("--nruns", metavar="RUNS", default=1, type=int,
                        help="Number of runs per API (default: %(default)s).")
    parser.add_argument("-t", "--nthreads", metavar="THREADS", default=1, type=int,
                        help="Number of threads to use (default: %(default)s).")
