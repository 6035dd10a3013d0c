#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The installed wheels, as a new user gets them: run by ./build.sh test with the Python of a
fresh virtual environment that has only the libkvikio and kvikio wheels (and NumPy) installed,
from a folder outside the checkout. Imports the package from that environment, checks that
libkvikio.so comes from the libkvikio wheel, then reads a file into host memory (whole, and a
range through a future) and compares the bytes with the file's, around a poisoned guard.

Usage: wheel-check.py <scratch folder>
"""

import os
import sys
import sysconfig


def main(scratch):
    import numpy as np

    import kvikio
    import libkvikio

    site = sysconfig.get_paths()["purelib"]
    for module in (kvikio, libkvikio):
        if not os.path.realpath(module.__file__).startswith(os.path.realpath(site)):
            sys.exit(f"{module.__name__} imported from {module.__file__}, not from {site}")
    if libkvikio.__version__ != kvikio.__version__:
        sys.exit(f"libkvikio {libkvikio.__version__} beside kvikio {kvikio.__version__}")
    handle = libkvikio.load_library()
    wheel_library = os.path.join(os.path.dirname(libkvikio.__file__), "lib64", "libkvikio.so")
    if handle is None or os.path.realpath(handle._name) != os.path.realpath(wheel_library):
        sys.exit(f"load_library() loaded {getattr(handle, '_name', None)}, not {wheel_library}")
    with open("/proc/self/maps") as maps:
        loaded = {line.split()[-1] for line in maps if "libkvikio" in line}
    if {os.path.realpath(p) for p in loaded} != {os.path.realpath(wheel_library)}:
        sys.exit(f"the process maps {sorted(loaded)}, not only {wheel_library}")

    rng = np.random.default_rng(46)
    data = rng.integers(0, 256, size=(5 << 20) + 3, dtype=np.uint8)
    path = os.path.join(scratch, "wheel-check.bin")
    data.tofile(path)
    guard = 64
    with kvikio.CuFile(path, "r") as f:
        whole = np.full(data.size + 2 * guard, 0xEE, dtype=np.uint8)
        if f.read(whole[guard:-guard]) != data.size:
            sys.exit("CuFile.read returned a short count")
        offset, size = 12345, 3 << 20
        part = np.full(size + 2 * guard, 0xEE, dtype=np.uint8)
        if f.pread(part[guard:-guard], size, offset).get() != size:
            sys.exit("CuFile.pread returned a short count")
    if not np.array_equal(whole[guard:-guard], data):
        sys.exit("the whole read differs from the file")
    if not np.array_equal(part[guard:-guard], data[offset : offset + size]):
        sys.exit("the range read differs from the file")
    if (whole[:guard] != 0xEE).any() or (whole[-guard:] != 0xEE).any():
        sys.exit("the whole read wrote outside its destination")
    if (part[:guard] != 0xEE).any() or (part[-guard:] != 0xEE).any():
        sys.exit("the range read wrote outside its destination")
    print(f"wheels: kvikio {kvikio.__version__} from {os.path.dirname(kvikio.__file__)}, "
          f"libkvikio.so from the libkvikio wheel; {data.size} + {size} bytes read and checked")


if __name__ == "__main__":
    main(sys.argv[1])
