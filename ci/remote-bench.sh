#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The remote benchmarks of docs/benchmarks.md, on the GPU machine (device tool), from the
# repository root with build/release and .device-run carried (ci/device-bundle.sh):
#   1. bandwidth: loopback nginx (8 workers, sendfile) serving a 2 GiB object from the page
#      cache, 4 MiB tasks, host and device memory (MEMS): easy with R threads against multi-poll
#      with R reactors of C transfers, R = 1, 4, 8, 16 (BANDWIDTH_R), C = 8 (BANDWIDTH_C),
#      beside plain libcurl and one plain GET;
#   2. latency: cpp/benchmarks/latency_server.py with 0 ms (checked against nginx: the server
#      must not be the bottleneck) and 50 ms first-byte delay, a 128 MiB object, 1 MiB tasks,
#      N = 1..128 in flight: easy with N threads against multi-poll with N/8 reactors;
#   3. the reader's workload (READER=1; kvikio_bench remote random): 4 callers x 8 ranged reads
#      in flight at random offsets of the 2 GiB object, READER_SIZES (64KiB,1MiB,8MiB), easy
#      with R threads against multi-poll with R reactors (READER_R: 1,4,8) of READER_C transfers
#      each (the setting's default, 8), beside one thread of plain libcurl multi, MEMS.
# BENCH=<kvikio_bench> measures another build (with its library on LD_LIBRARY_PATH).
# Output: $OUT/remote-bench.log (tables) and $OUT/remote-bench.jsonl.
set -uo pipefail
OUT=${OUT:-/tmp/kvikio-remote-bench}
mkdir -p "$OUT"
root=$PWD
bench=${BENCH:-$root/build/release/cpp/benchmarks/kvikio_bench}
work=$(mktemp -d)
status=0

# shellcheck source=ci/loopback-nginx.sh
source "$root/ci/loopback-nginx.sh"
mkdir -p "$work/www"
head -c $((2 << 30)) /dev/urandom >"$work/www/obj.bin"
head -c $((128 << 20)) /dev/urandom >"$work/www/small.bin"
cat "$work/www/obj.bin" "$work/www/small.bin" >/dev/null  # into the page cache
start_loopback_nginx "$work" 18080
python3 "$root/cpp/benchmarks/latency_server.py" 18081 "$work/www" 0 >/dev/null &
fast_pid=$!
python3 "$root/cpp/benchmarks/latency_server.py" 18082 "$work/www" 50 >/dev/null &
slow_pid=$!
sleep 2

run() {
  echo "+ kvikio_bench $*" | tee -a "$OUT/remote-bench.log"
  timeout 300 "$bench" "$@" --json "$OUT/remote-bench.jsonl" 2>&1 | tee -a "$OUT/remote-bench.log" \
    || status=1
}

if [[ ${BANDWIDTH:-1} == 1 ]]; then
  for mem in ${MEMS:-host device}; do
    for r in ${BANDWIDTH_R:-1 4 8 16}; do
      run remote read --url http://127.0.0.1:18080/obj.bin --backend easy,multi_poll --threads $r \
        --reactors $r --connections ${BANDWIDTH_C:-8} --task-size 4MiB --repeat 3 --mem $mem
    done
  done
fi
if [[ ${READER:-0} == 1 ]]; then
  for mem in ${MEMS:-host device}; do
    run remote random --url http://127.0.0.1:18080/obj.bin --reference "$work/www/obj.bin" \
      --backend easy,multi_poll --threads "${READER_R:-1,4,8}" --reactors "${READER_R:-1,4,8}" \
      --connections "${READER_C:-0}" --io-size "${READER_SIZES:-64KiB,1MiB,8MiB}" --callers 4 \
      --in-flight 8 --seconds 2 --repeat 2 --latency-size 4KiB,64KiB --latency-reads 1000 \
      --mem "$mem"
  done
fi
if [[ ${LATENCY:-1} == 1 ]]; then
  # The latency server without delay against nginx: it must not be what limits the curve.
  for url in http://127.0.0.1:18080/small.bin http://127.0.0.1:18081/small.bin; do
    run remote read --url $url --backend easy --threads 8,32 --task-size 1MiB --repeat 3
  done
  run remote read --url http://127.0.0.1:18082/small.bin --backend easy,multi_poll \
    --threads ${LATENCY_N:-1,2,4,8,16,32,64,128} --task-size 1MiB --repeat 2
fi

kill "$nginx_pid" "$fast_pid" "$slow_pid" 2>/dev/null
wait 2>/dev/null
rm -rf "$work"
exit $status
