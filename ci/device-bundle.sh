#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Fills .device-run/ (git-ignored) with what ci/gpu-run.sh needs on the GPU machine beside the
# carried build: Debian's nginx package (extracted there to /usr/sbin/nginx) and, through
# ci/device-python.sh, the PyPI packages that machine's Python lacks (.device-run/python). Run
# here after ci/install-deps.sh; carry .device-run with the build.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device-run
if ! ls .device-run/nginx_*.deb >/dev/null 2>&1; then
  (cd .device-run && apt-get download nginx)
fi
ci/device-python.sh
du -sh .device-run
