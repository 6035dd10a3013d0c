#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The reader's workload over HTTP (issue 34), on the GPU machine (device tool), from the
# repository root with build/install and .device-run carried (ci/device-bundle.sh, then
# ci/upstream-harness.sh): loopback nginx (8 workers, sendfile) serves a 2 GiB object from the
# page cache; the public-API program cpp/benchmarks/upstream/reader_workload.cpp, compiled
# against each library, reads it with READER_URL: 4 callers x 8 ranged reads in flight at
# random unaligned offsets, each size in its own process (its CPU time is that size's), into
# pinned host and device memory, rounds interleaved (ROUNDS, 2), READER_SECONDS (2) per point.
# Variants, each for every library:
#   easy-8      KVIKIO_REMOTE_IO_BACKEND=EASY_THREADPOOL, a pool of 8 threads
#   multi-R1    MULTI_POLL, one reactor, each library's default transfers in flight
#   multi-R1-32 MULTI_POLL, one reactor, 32 in flight (KVIKIO_REMOTE_MAX_CONNECTIONS for ours,
#               KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS for upstream)
#   multi-R4    MULTI_POLL, four reactors (multi-R<N>: N reactors)
# The plain way of one reactor (library "plain", variant multi-R1 only): one thread of libcurl's
# multi interface with all 32 transfers in flight, no I/O library (reader_workload's plain/ label).
# BEFORE=<dir> adds another build of this project (its reader_workload binary and lib/ in that
# folder) as library "before". SIZES (65536,1048576,8388608), MEMS (host device), VARIANTS.
# Output: $OUT/remote-reader.log, and its table (ci/remote-reader-table.py) in remote-reader.md.
set -uo pipefail
OUT=${OUT:-/tmp/kvikio-remote-reader}
mkdir -p "$OUT"
root=$PWD
cmp=$root/.device-run/compare
log=$OUT/remote-reader.log
work=$(mktemp -d /tmp/kvikio-remote-reader.XXXX)
status=0
# shellcheck source=ci/released-upstream.sh
source "$root/ci/released-upstream.sh"
start_comparison "$root"

# shellcheck source=ci/loopback-nginx.sh
source "$root/ci/loopback-nginx.sh"
mkdir -p "$work/www"
head -c $((2 << 30)) /dev/urandom >"$work/www/obj.bin"
cat "$work/www/obj.bin" >/dev/null
start_loopback_nginx "$work" 18091
sleep 1

libs=(upstream ours plain)
[[ -n ${BEFORE:-} ]] && libs=(upstream before ours plain)
binary_of() {
  case $1 in
    upstream) echo "$cmp/upstream/bin/reader_workload" ;;
    before) echo "$BEFORE/reader_workload" ;;
    ours | plain) echo "$cmp/ours/reader_workload" ;;
  esac
}
# settings_of <library> <variant>: the environment of that variant for that library.
settings_of() {
  case $2 in
    easy-8) echo "KVIKIO_REMOTE_IO_BACKEND=EASY_THREADPOOL" ;;
    multi-R1) echo "KVIKIO_REMOTE_IO_BACKEND=MULTI_POLL KVIKIO_REMOTE_IO_NUM_REACTORS=1" ;;
    multi-R1-32)
      if [[ $1 == upstream ]]; then
        echo "KVIKIO_REMOTE_IO_BACKEND=MULTI_POLL KVIKIO_REMOTE_IO_NUM_REACTORS=1 KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS=32"
      else
        echo "KVIKIO_REMOTE_IO_BACKEND=MULTI_POLL KVIKIO_REMOTE_IO_NUM_REACTORS=1 KVIKIO_REMOTE_MAX_CONNECTIONS=32"
      fi
      ;;
    multi-R*) echo "KVIKIO_REMOTE_IO_BACKEND=MULTI_POLL KVIKIO_REMOTE_IO_NUM_REACTORS=${2#multi-R}" ;;
  esac
}

for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "=== round $round" >>"$log"
  # The order of the libraries alternates between rounds: none always runs last.
  order=("${libs[@]}")
  ((round % 2 == 0)) && order=($(printf '%s\n' "${libs[@]}" | tac))
  for size in ${SIZES:-65536 1048576 8388608}; do
    for mem in ${MEMS:-host device}; do
      for variant in ${VARIANTS:-easy-8 multi-R1 multi-R1-32 multi-R4}; do
        for lib in "${order[@]}"; do
          [[ $lib == plain && $variant != multi-R1 ]] && continue
          label="$lib/$variant"
          lib_path=
          [[ $lib == before ]] && lib_path=$BEFORE/lib
          echo "+ $label $mem $size" >>"$log"
          TIMEFORMAT="cpu $label $mem $size user %U sys %S wall %R"
          # shellcheck disable=SC2046
          { time env $(settings_of "$lib" "$variant") KVIKIO_COMPAT_MODE=ON \
            READER_URL=http://127.0.0.1:18091/obj.bin LD_LIBRARY_PATH="$lib_path" \
            timeout 120 "$(binary_of "$lib")" "$label" "$work/www/obj.bin" "$mem" 4 8 8 \
            "${READER_SECONDS:-2}" "$size" >>"$log" 2>&1 || status=1; } 2>>"$log"
        done
      done
    done
  done
done
kill "$nginx_pid" 2>/dev/null
wait 2>/dev/null
rm -rf "$work"
python3 "$root/ci/remote-reader-table.py" "$log" >"$OUT/remote-reader.md" || status=1
cat "$OUT/remote-reader.md"
exit $status
