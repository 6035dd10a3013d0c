#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The columnar reader's workload (cpp/benchmarks/upstream/parquet_workload.cpp, issue 49) on the
# GPU machine (device tool), from the repository root with build/install and .device-run carried
# (ci/device-bundle.sh, then ci/upstream-harness.sh). A file of FILE_MIB (2048) random bytes, hot in the
# page cache, read row group after row group (18 ranges of 3 KB to 600 KB each, a few KB apart)
# from three places: the local file, loopback nginx (8 workers, sendfile), and
# cpp/benchmarks/latency_server.py with DELAY_MS (20) before each response's first byte.
# Both libraries' pools have THREADS (8) threads (KVIKIO_NTHREADS). Libraries and modes, each in
# its own process, rounds interleaved (ROUNDS, 2; the order of the
# runs reversed every other round), PARQUET_SECONDS (3) per point, into MEMS (device host):
#   upstream serial, upstream inflight   released upstream, one pread at a time / a row group's
#                                        preads all in flight
#   ours serial, ours inflight           the same calls against this project
#   ours batch-g<N>                      the row group as one batch, coalesce_max_gap N (GAPS,
#                                        "0 65536")
#   ours batch-g65536-multi              the same over the multi-poll transport (remote only)
# Output: $OUT/parquet.log, and its table (ci/parquet-table.py) in $OUT/parquet.md.
set -uo pipefail
OUT=${OUT:-/tmp/kvikio-parquet}
mkdir -p "$OUT"
root=$PWD
cmp=$root/.device-run/compare
log=$OUT/parquet.log
work=$(mktemp -d /tmp/kvikio-parquet.XXXX)
status=0
# shellcheck source=ci/released-upstream.sh
source "$root/ci/released-upstream.sh"
start_comparison "$root"

# shellcheck source=ci/loopback-nginx.sh
source "$root/ci/loopback-nginx.sh"
mkdir -p "$work/www"
head -c $((${FILE_MIB:-2048} << 20)) /dev/urandom >"$work/www/obj.bin"
cat "$work/www/obj.bin" >/dev/null
start_loopback_nginx "$work" 18093
python3 "$root/cpp/benchmarks/latency_server.py" 18094 "$work/www" "${DELAY_MS:-20}" >/dev/null &
latency_pid=$!
sleep 1

url_of() {
  case $1 in
    local) echo "" ;;
    nginx) echo "http://127.0.0.1:18093/obj.bin" ;;
    latency) echo "http://127.0.0.1:18094/obj.bin" ;;
  esac
}
runs=("upstream serial" "upstream inflight" "ours serial" "ours inflight")
for gap in ${GAPS:-0 65536}; do runs+=("ours batch-g$gap"); done
runs+=("ours batch-g65536-multi")

for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "=== round $round" >>"$log"
  order=("${runs[@]}")
  ((round % 2 == 0)) && mapfile -t order < <(printf '%s\n' "${runs[@]}" | tac)
  for place in ${PLACES:-local nginx latency}; do
    for mem in ${MEMS:-device host}; do
      for run in "${order[@]}"; do
        read -r lib variant <<<"$run"
        [[ $variant == *-multi && $place == local ]] && continue
        mode=${variant%%-*}
        gap=65536
        [[ $variant == batch-g* ]] && { gap=${variant#batch-g}; gap=${gap%%-*}; }
        backend=()
        [[ $variant == *-multi ]] && backend=(KVIKIO_REMOTE_BACKEND=LIBCURL_MULTI_POLL)
        bin=$cmp/ours/parquet_workload
        [[ $lib == upstream ]] && bin=$cmp/upstream/bin/parquet_workload
        label="$lib/$variant/$place"
        echo "+ $label $mem" >>"$log"
        TIMEFORMAT="cpu $label $mem user %U sys %S wall %R"
        { time env "${backend[@]}" KVIKIO_COMPAT_MODE=ON KVIKIO_NTHREADS="${THREADS:-8}" READER_URL="$(url_of "$place")" \
          timeout 120 "$bin" "$label" "$work/www/obj.bin" "$mem" "$mode" \
          "${PARQUET_SECONDS:-3}" "$gap" >>"$log" 2>&1 || status=1; } 2>>"$log"
      done
    done
  done
done
kill "$nginx_pid" "$latency_pid" 2>/dev/null
wait 2>/dev/null
rm -rf "$work"
python3 "$root/ci/parquet-table.py" "$log" >"$OUT/parquet.md" || status=1
cat "$OUT/parquet.md"
exit $status
