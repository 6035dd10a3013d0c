#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The Python side by side on the GPU machine: the same scripts run against upstream's released
# kvikio-cu13 (unpacked to /tmp/upstream) and against this project's package
# (/tmp/ours, installed by PY=1 ci/gpu-run.sh), both with /tmp/deps, interleaved for ROUNDS (2)
# rounds, the order alternating between rounds:
#   single_node_io  upstream's own benchmarks/single_node_io.py (from its wheel, the same file
#                   for both): -n SNIO_SIZE (1GiB) -t 8 --nruns 3 --api cufile posix
#   pyreader        ci/python-reader-workload.py: 4 Python threads x 8 preads in flight of
#                   64 KiB and 1 MiB at random offsets of a hot 4 GiB file, pool of 8, device
#                   (CuPy) and host (NumPy) memory, 2 s a point, then a synchronous read's p50
# Both with KVIKIO_COMPAT_MODE=ON and no other KVIKIO_* setting. Log: $OUT/python-compare.log.
set -uo pipefail
OUT=${OUT:-/tmp/kvikio-compare}
mkdir -p "$OUT"
root=$PWD
log=$OUT/python-compare.log
for v in $(env | sed -n 's/^\(KVIKIO_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
work=$(mktemp -d /tmp/kvikio-pycompare.XXXX)
trap 'rm -rf "$work"' EXIT
status=0
# shellcheck source=ci/released-upstream.sh
source "$root/ci/released-upstream.sh"
unpack_released_upstream "$root"
[[ -d /tmp/ours/kvikio ]] || { echo "/tmp/ours is missing: run PY=1 ci/gpu-run.sh first" >&2; exit 1; }
cp /tmp/upstream/kvikio/benchmarks/single_node_io.py "$work/single_node_io.py"
head -c 4294967296 /dev/urandom >"$work/hot.bin"
cat "$work/hot.bin" >/dev/null
mkdir -p "$work/snio"
path_of() { if [[ $1 == upstream ]]; then echo /tmp/upstream:/tmp/deps; else echo /tmp/ours:/tmp/deps; fi; }
for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "=== round $round" >>"$log"
  libs="upstream ours"
  ((round % 2 == 0)) && libs="ours upstream"
  for lib in $libs; do
    echo "+ $lib single_node_io" >>"$log"
    PYTHONPATH=$(path_of "$lib") KVIKIO_COMPAT_MODE=ON timeout 200 python3 "$work/single_node_io.py" \
      -n "${SNIO_SIZE:-1GiB}" -t 8 --nruns 3 --api cufile posix -d "$work/snio" >>"$log" 2>&1 ||
      status=1
    for mem in device host; do
      PYTHONPATH=$(path_of "$lib") KVIKIO_COMPAT_MODE=ON timeout 200 python3 \
        "$root/ci/python-reader-workload.py" "$lib" "$work/hot.bin" "$mem" 65536,1048576 4 8 8 2 \
        >>"$log" 2>&1 || status=1
    done
  done
done
grep -E "^(=== round|\+ |pyreader|cufile (read|write)|posix (read|write)|GPU  )" "$log"
exit $status
