#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# What one call costs, here, without a GPU: cpp/benchmarks/upstream/per_call.cpp compiled against
# upstream's released library and against ours (ci/upstream-harness.sh first), run with the
# project's driver simulator standing in for libcuda.so.1, beside the plain way (pread(2), one
# libcurl easy handle per caller), interleaved (upstream, ours, plain; then the other way round)
# for ROUNDS rounds (2). Rows: local reads of SIZES (4 KiB to 8 MiB) and remote reads of
# REMOTE_SIZES (64 KiB, 1 MiB) over loopback nginx with both of ours' transports (upstream's
# one), THREADS callers (1) with a pool of as many, one read at a time and 8 in flight. The
# table (ci/per-call-table.py) and the log go to $OUT. Root mounts tracefs for the system-call
# counts where it is not mounted. On the GPU machine DRIVER=real runs the real driver instead.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-/tmp/kvikio-per-call}
mkdir -p "$OUT"
log=$OUT/per-call.log
: >"$log"
cmp=$root/.device-run/compare
sim=${CUDASIM_DIR:-$root/build/release/cudasim}
[[ -x $cmp/ours/per_call && -x $cmp/upstream/bin/per_call ]] ||
  { echo "no per_call harnesses: run ci/upstream-harness.sh first" >&2; exit 1; }
if [[ ${DRIVER:-simulator} == real ]]; then
  sim=
elif [[ ! -e $sim/libcuda.so.1 ]]; then
  echo "no driver simulator in $sim: run ./build.sh" >&2
  exit 1
fi
# Upstream's libraries where its harness looks for them (its RUNPATH), from the wheels
# ci/upstream-harness.sh downloaded.
if [[ ! -d /tmp/upstream/libkvikio ]]; then
  mkdir -p /tmp/upstream
  for w in "$root"/.device-run/wheels/libkvikio_cu13-*.whl "$root"/.device-run/wheels/rapids_logger-*.whl; do
    (cd /tmp/upstream && unzip -q -o "$w")
  done
fi
if [[ $(id -u) == 0 && ! -e /sys/kernel/tracing/events ]]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
for v in $(env | sed -n 's/^\(KVIKIO_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

work=$(mktemp -d /tmp/kvikio-per-call.XXXX)
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck source=ci/loopback-nginx.sh
source "$root/ci/loopback-nginx.sh"
mkdir -p "$work/www"
head -c $((256 << 20)) /dev/urandom >"$work/www/obj.bin"
file=$work/www/obj.bin
start_loopback_nginx "$work" 18093
url=http://127.0.0.1:18093/obj.bin
for _ in $(seq 50); do curl -sfo /dev/null -r 0-0 "$url" && break; sleep 0.1; done

# calls <size>: how many calls a row makes, about the same bytes for every size.
calls() { echo $((${1} >= 1048576 ? 400 : ${1} >= 65536 ? 3000 : 20000)); }
# row <library> <kind> <size> [settings...]: one harness run.
row() {
  local lib=$1 kind=$2 size=$3
  shift 3
  local bin=$cmp/ours/per_call label=$lib
  [[ $lib == upstream ]] && bin=$cmp/upstream/bin/per_call
  [[ $lib == ours-* ]] && label=$lib
  local n
  n=$(calls "$size")
  [[ $kind == *8 ]] && n=$((n / 8 > 0 ? n / 8 : 1))
  echo "+ $lib $kind $size $* ($n calls)" >>"$log"
  env ${sim:+LD_LIBRARY_PATH=$sim CUDASIM_DEVICES=1} "$@" timeout 300 "$bin" "$label" "$kind" "$file" \
    "$size" "${THREADS:-1}" "$n" "$url" >>"$log" 2>&1 || echo "FAILED: $lib $kind $size" | tee -a "$log"
}
libs=(upstream ours plain)
for round in $(seq 1 "${ROUNDS:-2}"); do
  echo "=== round $round" >>"$log"
  order=("${libs[@]}")
  ((round % 2 == 0)) && order=(plain ours upstream)
  for kind in local local8; do
    for size in ${SIZES:-4096 65536 1048576 8388608}; do
      for lib in "${order[@]}"; do row "$lib" "$kind" "$size"; done
    done
  done
  for kind in remote remote8; do
    for size in ${REMOTE_SIZES:-65536 1048576}; do
      for lib in "${order[@]}"; do
        if [[ $lib == ours ]]; then
          row ours-easy "$kind" "$size" KVIKIO_REMOTE_IO_BACKEND=EASY_THREADPOOL
          row ours-multi "$kind" "$size" KVIKIO_REMOTE_IO_BACKEND=MULTI_POLL
        else
          row "$lib" "$kind" "$size"
        fi
      done
    done
  done
done
python3 "$root/ci/per-call-table.py" "$log" | tee "$OUT/per-call.md"
