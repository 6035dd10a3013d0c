#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Fills .device-run/ (git-ignored) with what ci/gpu-run.sh needs on the GPU machine beside the
# carried build: Debian's nginx package (extracted there to /usr/sbin/nginx) and, in
# .device-run/pylib, the pure-Python modules that servers/s3_sigv4.py imports (botocore without
# its service models, and what it imports), because that machine's /usr/bin/python3 has no
# botocore and no network. Run here after ci/install-deps.sh; carry .device-run with the build.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device-run
if ! ls .device-run/nginx_*.deb >/dev/null 2>&1; then
  (cd .device-run && apt-get download nginx)
fi
dist=/usr/lib/python3/dist-packages
rm -rf .device-run/pylib
mkdir -p .device-run/pylib
modules=(botocore dateutil jmespath urllib3 six.py requests idna certifi chardet charset_normalizer)
present=()
for m in "${modules[@]}"; do [[ -e $dist/$m ]] && present+=("$m"); done
tar -C "$dist" -cf - --exclude=botocore/data --exclude=__pycache__ "${present[@]}" |
  tar -C .device-run/pylib -xf -
# The bundle must be enough on its own: import what the server imports with site-packages off.
PYTHONPATH=.device-run/pylib /usr/bin/python3 -S -c \
  "from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth; from botocore.awsrequest import AWSRequest; from botocore.credentials import Credentials"
du -sh .device-run
