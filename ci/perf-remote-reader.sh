#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Where one library's time goes in the reader's workload over HTTP, on the GPU machine: perf
# (this development machine's binary and its libraries, copied to .device-run/perf, as that
# machine has none) records reader_workload (ci/upstream-harness.sh) reading a 1 GiB object from
# loopback nginx with READER_URL, 4 callers x 8 in flight of SIZE (65536) bytes into MEM (host)
# memory for 3 s, with the settings given as arguments (e.g. KVIKIO_REMOTE_IO_BACKEND=MULTI_POLL).
# BINARY (.device-run/compare/ours/reader_workload) and LIB_PATH choose the library. Prints the
# busiest threads, then the symbols of the busiest one and of the whole process, to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/kvikio-perf}
mkdir -p "$OUT"
root=$PWD
perf_dir=$root/.device-run/perf
work=$(mktemp -d /tmp/kvikio-perf.XXXX)
# shellcheck source=ci/loopback-nginx.sh
source "$root/ci/loopback-nginx.sh"
mkdir -p "$work/www"
head -c $((1 << 30)) /dev/urandom >"$work/www/obj.bin"
start_loopback_nginx "$work" 18092
sleep 1
data=$OUT/perf-${LABEL:-run}.data
LD_LIBRARY_PATH=$perf_dir "$perf_dir/perf" record -F 2999 -o "$data" -- \
  env LD_LIBRARY_PATH="${LIB_PATH:-}" KVIKIO_COMPAT_MODE=ON READER_URL=http://127.0.0.1:18092/obj.bin "$@" \
  "${BINARY:-$root/.device-run/compare/ours/reader_workload}" "${LABEL:-run}" "$work/www/obj.bin" \
  "${MEM:-host}" 4 8 8 3 "${SIZE:-65536}" 2>&1 | grep -v "^\[ perf record"
report() { LD_LIBRARY_PATH=$perf_dir "$perf_dir/perf" report -i "$data" --no-children "$@" 2>/dev/null; }
report --sort pid --stdio | grep -E '^# Samples|^ +[0-9]' | head -8
tid=$(report --sort pid | grep -E '^ +[0-9]' | head -1 | awk '{print $2}' | sed 's/:.*//')
echo "=== busiest thread $tid: by library, then by symbol"
report --tid "$tid" --sort dso --stdio | grep -E '^ +[0-9]' | head -12
report --tid "$tid" --sort dso,sym | grep -E '^ +[0-9]' | head -${SYMBOLS:-60}
echo "=== whole process"
report --sort dso,sym | grep -E '^ +[0-9]' | head -40
kill "$nginx_pid" 2>/dev/null
wait 2>/dev/null
rm -rf "$work"
