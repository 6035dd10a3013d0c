#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Fills .device-run/python/ (git-ignored, carried to the GPU machine) with the PyPI packages that
# machine's Python 3.12 lacks and cannot fetch, as installed trees packed with xz (the wheels
# alone exceed what a call carries):
#   deps.tar.xz      what the tests need there and that machine lacks: moto's S3 server and
#                    boto3 (botocore with only its S3 and STS models), zarr, numcodecs, dask,
#                    distributed, pytest-asyncio, at the versions of ci/pypi-constraints.txt, and
#                    rangehttpserver (upstream's test_http_io; not a dependency of ours). What
#                    they need beside these (werkzeug, jinja2, requests, numpy, toolz, psutil,
#                    ...) is taken from that machine's Python as it is.
#   upstream.tar.xz  upstream's released packages, the yardstick: kvikio-cu13 and libkvikio-cu13
#                    (UPSTREAM_VERSION, default 26.10.0) and rapids-logger, which libkvikio loads
# ci/gpu-run.sh unpacks them to /tmp/deps and /tmp/upstream. Wheels are kept in
# .device-run/wheels, so a second run downloads nothing. Run here, where pip reaches PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
upstream_version=${UPSTREAM_VERSION:-26.10.0}
out=.device-run/python
wheels=.device-run/wheels
mkdir -p "$out" "$wheels"
platform=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3
  --abi none --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64
  --platform any)

# name==version of each package, the version from ci/pypi-constraints.txt.
pinned() {
  local name
  for name in "$@"; do
    local pin
    pin=$(grep -i -m1 "^${name}==" ci/pypi-constraints.txt) ||
      { echo "device-python: $name is not in ci/pypi-constraints.txt" >&2; exit 1; }
    echo "$pin"
  done
}
deps=($(pinned moto boto3 botocore s3transfer jmespath xmltodict responses flask flask-cors \
  blinker itsdangerous cryptography cffi pycparser zarr numcodecs donfig google-crc32c dask \
  distributed partd locket tblib zict tornado pytest pytest-asyncio pluggy iniconfig)
  rangehttpserver==1.4.0)
upstream=(kvikio-cu13=="$upstream_version" libkvikio-cu13=="$upstream_version" rapids-logger==0.3.0)

# install_tree <folder> <pins...>: the wheels of the pins, installed without their dependencies
# (the lists above name what that machine lacks) into a fresh folder for Python 3.12 on x86-64.
install_tree() {
  local dir=$1
  shift
  /usr/bin/python3 -m pip download -q --disable-pip-version-check --no-deps "${platform[@]}" \
    -d "$wheels" "$@"
  rm -rf "$dir"
  /usr/bin/python3 -m pip install -q --disable-pip-version-check --no-deps --no-compile \
    --no-index --find-links "$wheels" "${platform[@]}" --target "$dir" "$@"
}

install_tree "$out/deps" "${deps[@]}"
# botocore's service models: only S3's and STS's are read by the tests' clients and moto's S3.
find "$out/deps/botocore/data" -mindepth 1 -maxdepth 1 -type d ! -name s3 ! -name sts \
  -exec rm -rf {} +
install_tree "$out/upstream" "${upstream[@]}"
for tree in deps upstream; do
  tar -C "$out/$tree" -cJf "$out/$tree.tar.xz" .
  rm -rf "${out:?}/$tree"
done
du -sh "$out"/*.tar.xz
