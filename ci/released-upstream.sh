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
