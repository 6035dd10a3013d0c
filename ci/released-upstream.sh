# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# Sourced by the GPU-machine scripts. unpack_released_upstream ROOT: upstream's released packages
# (ROOT/.device-run/python/upstream.tar.xz, made by ci/device-python.sh) unpacked to
# /tmp/upstream, where the harnesses of ci/upstream-harness.sh find libkvikio and rapids-logger
# and where PYTHONPATH=/tmp/upstream finds kvikio-cu13. Once per machine.
unpack_released_upstream() {
  [[ -d /tmp/upstream/libkvikio ]] && return 0
  mkdir -p /tmp/upstream && tar -C /tmp/upstream -xJf "$1/.device-run/python/upstream.tar.xz"
}

# start_comparison ROOT: what every side-by-side run does first: clears the caller's KVIKIO_*
# variables (each library runs with its own environment), records the GPU, driver, date and
# core count in $OUT/gpu.txt, unpacks upstream's release and records its version there too.
start_comparison() {
  local v
  for v in $(env | sed -n 's/^\(KVIKIO_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  host cores: $(nproc)" | tee -a "$OUT/gpu.txt"
  unpack_released_upstream "$1"
  tee -a "$OUT/gpu.txt" <"$1/.device-run/compare/upstream/VERSION"
}
