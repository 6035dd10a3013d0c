#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Side by side with upstream KvikIO, on the GPU machine (device tool), from the repository root
# with build/install and .device-run carried (ci/device-bundle.sh, then ci/upstream-harness.sh):
# the same public-API harnesses compiled against each library (upstream's: its released
# libkvikio-cu13 wheel), interleaved (upstream, ours, upstream, ours) for ROUNDS rounds (2), in
# one run:
#   local   pread of a hot 8 GiB file (LOCAL_SIZE) into device and pinned host memory, 4 MiB
#           tasks, threads THREADS (1,2,4,8,16), medians of 5, KVIKIO_COMPAT_MODE=ON, and the
#           plain way beside them (cpp/benchmarks/upstream/whole_file.cpp);
#   write   pwrite of a 2 GiB file (WRITE_SIZE) over its hot pages from device and pinned host
#           memory, the same threads and tasks, medians of 3, the plain way beside them;
#   async   read_async on one stream: 1024 x 64 KiB and 64 x 1 MiB of the hot file, pool of 4,
#           and 16 x 64 MiB each followed by a memset on the stream, pool of 8 (ASYNC_MEMSET_POOL),
#           medians of 5, how long each call keeps its caller and how long the process's first
#           call kept it; and a fresh process's first read_async of 64 KiB and of 64 MiB (pool
#           of 8), right after the file's opening and 5 ms after it (first_call.cpp);
#   remote  RemoteHandle::pread of a 2 GiB object from loopback nginx (8 workers, sendfile),
#           both transports (KVIKIO_REMOTE_IO_BACKEND), threads REMOTE_THREADS (THREADS),
#           medians of 3;
#   defaults  the same file read with no KVIKIO_* setting at all (each library's defaults);
#   reader  the reader's workload (cpp/benchmarks/reader_workload.hpp) on the same file: 4
#           callers x 8 reads in flight of 64 KiB, 1 MiB and 8 MiB at random unaligned offsets,
#           pool of 8, KVIKIO_COMPAT_MODE=ON, and 1 caller x 8 with no setting at all, into device
#           and pinned host memory (READER_SECONDS per point, 2; READER_SIZES, READER_ONE_CALLER=0
#           leaves the 1 x 8 rows out); synchronous 4 KiB and 64 KiB
#           reads (p50/p99); peak RSS; and the plain way with no library (PLAIN_THREADS threads,
#           "8 16": pread(2), plus one copy and its wait per read for device memory). Its table:
#           ci/reader-table.py.
# In every local part the order of the libraries alternates between rounds.
#   devices (DEVICES=0,1,2,3, off unless given) the hot file into every listed GPU at once from
#           one process, a pool of THREADS threads per GPU, beside the first GPU alone
#           (cpp/benchmarks/upstream/devices_read.cpp); one process per GPU is kvikio_bench's
#           `--devices` row (ours only).
# LOCAL=0, WRITE=0, ASYNC=0, REMOTE=0, DEFAULTS=0, READER=0 leave a part out.
# BEFORE=<dir> adds an earlier build of this project as library "before" (the same harnesses
# and its lib/ in that folder, found through their RUNPATH $ORIGIN/lib), interleaved with the
# others: the regression check of a change (ci/reader-table.py shows ours / before).
# OURS_VARIANTS="name:VAR=value,VAR=value name2:..." adds ours with those settings to the local
# rows (e.g. "posix:KVIKIO_LOCAL_IO_BACKEND=posix"), OURS_REMOTE_VARIANTS likewise to the remote
# rows.
# BALANCE=1 logs, once a second during each remote run, how many of the client's connections
# each nginx worker serves ("balance 5 3 2 ..."): a worker with many is a bottleneck of its own.
# Each library's own environment: the caller's KVIKIO_* variables are cleared first. Logs, the
# table (ci/upstream-table.py) and the plot go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/kvikio-compare}
mkdir -p "$OUT"
root=$PWD
cmp=$root/.device-run/compare
log=$OUT/compare.log
work=$(mktemp -d /tmp/kvikio-compare.XXXX)
status=0
# shellcheck source=ci/released-upstream.sh
source "$root/ci/released-upstream.sh"
start_comparison "$root"

file=$work/hot.bin
head -c "${LOCAL_SIZE:-8589934592}" /dev/urandom >"$file"
cat "$file" >/dev/null

# shellcheck source=ci/loopback-nginx.sh
source "$root/ci/loopback-nginx.sh"
mkdir -p "$work/www"
head -c $((2 << 30)) /dev/urandom >"$work/www/obj.bin"
cat "$work/www/obj.bin" >/dev/null
start_loopback_nginx "$work" 18090
sleep 1

# run <library> <command...>: one harness run, its lines prefixed, its CPU time noted.
run() {
  local lib=$1
  shift
  echo "+ $lib: $*" >>"$log"
  local TIMEFORMAT="cpu $lib user %U sys %S wall %R"
  local sampler=
  if [[ ${BALANCE:-0} == 1 && $1 == */remote_bench ]]; then
    # Once a second: how the client's connections spread over nginx's workers ("conns/worker").
    # (the server side of port 18090's established connections, /proc/net/tcp, found among
    # each worker's descriptors: ss shows no processes there).
    while sleep 1; do
      local conns
      conns=$(awk 'NR > 1 && $2 ~ /:46AA$/ && $4 == "01" {print "socket:[" $10 "]"}' /proc/net/tcp)
      echo "balance $(for w in $(pgrep -P "$nginx_pid"); do
        find /proc/"$w"/fd -printf '%l\n' 2>/dev/null | grep -cFx -f <(echo "$conns")
      done | sort -rn | tr '\n' ' ')"
    done >>"$log" &
    sampler=$!
  fi
  { time timeout 300 "$@" >>"$log" 2>&1 || status=1; } 2>>"$log"
  [[ -n $sampler ]] && kill "$sampler" 2>/dev/null
}
# run_variant <name:VAR=value,...> <command...>: ours, with the variant's settings added to the
# environment the caller gives it.
run_variant() {
  local settings
  IFS=, read -r -a settings <<<"${1#*:}"
  shift
  (
    export "${settings[@]}"
    run ours "$@"
    exit $status
  ) || status=1
}
bin_of() {
  case $1 in
    upstream) echo "$cmp/upstream/bin" ;;
    before) echo "$BEFORE" ;;
    *) echo "$cmp/ours" ;;
  esac
}
# has <library> <harness>: whether that library's folder has the harness (an earlier build kept
# as "before" may predate it).
has() { [[ -x $(bin_of "$1")/$2 ]]; }
libs=(upstream ours)
[[ -n ${BEFORE:-} ]] && libs=(upstream before ours)

threads=${THREADS:-1,2,4,8,16}
reader_sizes=${READER_SIZES:-65536,1048576,8388608}
for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "=== round $round" >>"$log"
  # The order alternates between rounds: the run second in a round has read lower with the same
  # code (4-24% in some rows), so no library may always come second.
  order=("${libs[@]}")
  if ((round % 2 == 0)); then
    order=()
    for ((i = ${#libs[@]} - 1; i >= 0; i--)); do order+=("${libs[$i]}"); done
  fi
  for lib in "${order[@]}"; do
    [[ ${LOCAL:-1} == 1 ]] &&
      KVIKIO_COMPAT_MODE=ON run "$lib" "$(bin_of $lib)/pread_bench" "$lib" "$file" 4 "$threads" 5
  done
  [[ ${LOCAL:-1} == 1 ]] && run plain "$cmp/ours/whole_file" plain read "$file" "$threads" 5
  for lib in "${order[@]}"; do
    [[ -n ${DEVICES:-} ]] || break
    has "$lib" devices_read || continue
    KVIKIO_COMPAT_MODE=ON run "$lib" "$(bin_of "$lib")/devices_read" "$lib" "$file" "$DEVICES" \
      "$threads" 3
  done
  for lib in "${order[@]}" plain; do
    [[ ${WRITE:-1} == 1 ]] || break
    has "$lib" whole_file || continue
    KVIKIO_COMPAT_MODE=ON WHOLE_FILE_SIZE=${WRITE_SIZE:-2147483648} run "$lib" \
      "$(bin_of "$lib")/whole_file" "$lib" write "$work/written.bin" "$threads" 3
  done
  for lib in "${order[@]}"; do
    [[ ${ASYNC:-1} == 1 ]] || break
    has "$lib" read_async_bench || continue
    for reads in "65536 1024" "1048576 64"; do
      # shellcheck disable=SC2086 # size and count
      KVIKIO_COMPAT_MODE=ON KVIKIO_NTHREADS=4 run "$lib" "$(bin_of "$lib")/read_async_bench" "$lib" \
        "$file" $reads 5
    done
    KVIKIO_COMPAT_MODE=ON KVIKIO_NTHREADS=${ASYNC_MEMSET_POOL:-8} run "$lib" \
      "$(bin_of "$lib")/read_async_bench" "$lib" "$file" 67108864 16 5 memset
    has "$lib" first_call || continue
    for size in 65536 67108864; do
      for gap in 0 5; do
        KVIKIO_COMPAT_MODE=ON KVIKIO_NTHREADS=8 run "$lib" "$(bin_of "$lib")/first_call" "$lib" \
          "$file" "$size" "$gap"
      done
    done
  done
  # OURS_VARIANTS: ours once more per variant, with its settings, labelled ours-<name>.
  for variant in ${OURS_VARIANTS:-}; do
    [[ ${LOCAL:-1} == 1 ]] || break
    KVIKIO_COMPAT_MODE=ON run_variant "$variant" "$cmp/ours/pread_bench" "ours-${variant%%:*}" \
      "$file" 4 "$threads" 5
  done
  for backend in EASY_THREADPOOL MULTI_POLL; do
    [[ ${REMOTE:-1} == 1 ]] || break
    for lib in "${libs[@]}"; do
      KVIKIO_COMPAT_MODE=ON KVIKIO_REMOTE_IO_BACKEND=$backend \
        run "$lib" "$(bin_of $lib)/remote_bench" "$lib/$backend" http://127.0.0.1:18090/obj.bin 4 \
        "${REMOTE_THREADS:-$threads}" 3
    done
    for variant in ${OURS_REMOTE_VARIANTS:-}; do
      KVIKIO_COMPAT_MODE=ON KVIKIO_REMOTE_IO_BACKEND=$backend run_variant "$variant" \
        "$cmp/ours/remote_bench" "ours-${variant%%:*}/$backend" http://127.0.0.1:18090/obj.bin 4 \
        "${REMOTE_THREADS:-$threads}" 3
    done
  done
  for lib in "${libs[@]}"; do
    [[ ${DEFAULTS:-1} == 1 ]] && run "$lib" "$(bin_of $lib)/defaults_read" "$lib" "$file" 3
  done
  for lib in "${order[@]}"; do
    [[ ${READER:-1} == 1 ]] || break
    for mem in device host; do
      KVIKIO_COMPAT_MODE=ON run "$lib" "$(bin_of $lib)/reader_workload" "$lib" "$file" "$mem" 4 8 8 \
        "${READER_SECONDS:-2}" "$reader_sizes" 4096,65536 2000
      [[ ${READER_ONE_CALLER:-1} == 1 ]] || continue
      run "$lib" "$(bin_of $lib)/reader_workload" "$lib" "$file" "$mem" 1 8 0 \
        "${READER_SECONDS:-2}" "$reader_sizes"
    done
  done
  # The plain way beside them (no library): PLAIN_THREADS threads of pread(2) into the same
  # 4 x 8 destinations (and one copy per read for device memory), and one thread's synchronous
  # reads.
  for mem in device host; do
    [[ ${READER:-1} == 1 ]] || break
    lat=4096,65536  # with the first thread count only
    for t in ${PLAIN_THREADS:-8 16}; do
      run plain "$cmp/ours/reader_workload" plain "$file" "$mem" 4 8 "$t" "${READER_SECONDS:-2}" \
        "$reader_sizes" ${lat:+$lat 2000}
      lat=
    done
  done
done
kill "$nginx_pid" 2>/dev/null
wait 2>/dev/null
rm -rf "$work"
if [[ ${LOCAL:-1} == 1 || ${WRITE:-1} == 1 || ${ASYNC:-1} == 1 || ${REMOTE:-1} == 1 ||
  ${DEFAULTS:-1} == 1 ]]; then
  python3 "$root/ci/upstream-table.py" "$log" "$OUT/gpu.txt" "$OUT/compare.svg" >"$OUT/compare.md" ||
    status=1
  cat "$OUT/compare.md"
fi
if [[ ${READER:-1} == 1 ]]; then
  python3 "$root/ci/reader-table.py" "$log" >"$OUT/reader.md" || status=1
  cat "$OUT/reader.md"
fi
exit $status
