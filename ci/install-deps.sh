#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs what building and testing KvikIO needs: Debian's packages, then the PyPI packages of
# the tests (moto's S3 server, zarr, numcodecs, dask, pytest) into a virtual environment made
# from Debian's /usr/bin/python3 with --system-site-packages, so the python3-* packages stay
# visible. Usage: ci/install-deps.sh [VENV] (default build/venv; ./build.sh passes
# $BUILD_ROOT/venv); ci/install-deps.sh --demo installs only what the library and its demo need
# (./build.sh demo: six Debian packages, no virtual environment). Idempotent: when everything is
# present it changes nothing and needs no network. dependencies.yaml lists each package with its
# purpose and pin; ci/check-dependencies.py fails when the two are out of step.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=false
if [[ ${1:-} == --demo ]]; then
  demo=true
  shift
fi
venv=${1:-build/venv}

# What the library needs to build (and its demo, cpp/examples/basic_io, to run).
packages=(
  g++                   # C++20 compiler
  cmake                 # build system (>= 3.25)
  ninja-build           # build tool
  ccache                # compiler cache of ./build.sh: a rebuild compiles only what changed
  libcurl4-openssl-dev  # libcurl, the HTTP/S3 client of remote I/O
  liburing-dev          # liburing (static), the io_uring local backend
)
# What the tests, the Python package, the docs and the benchmarks need besides.
if [[ $demo == false ]]; then packages+=(
  git                   # kvikio.__git_commit__: the commit a build was made from
  libgtest-dev          # GoogleTest, the C++ test framework
  libcli11-dev          # CLI11, the command line of kvikio_bench
  clang-format          # the formatting check of ./build.sh test
  clang                 # compiles the libFuzzer targets of cpp/fuzz
  libclang-rt-14-dev    # libFuzzer and the sanitizer runtimes for clang
  nginx-light           # the real HTTP server of the remote I/O tests
  python3               # Debian's /usr/bin/python3: the venv below, ci/check-dependencies.py
  python3-yaml          # ci/check-dependencies.py reads dependencies.yaml
  python3-venv          # the virtual environment of the PyPI packages (below)
  python3-matplotlib    # docs/benchmarks/plot.py (Debian's /usr/bin/python3)
  python3-dev           # the Python headers the extension kvikio._lib compiles against
  pybind11-dev          # pybind11, the C++ side of kvikio._lib
  python3-numpy         # NumPy, which the kvikio package uses for host buffers
  doxygen               # the C++ API of the docs (XML from the public headers)
  python3-sphinx        # the docs site (./build.sh docs)
  python3-breathe       # Doxygen XML into Sphinx
  python3-myst-parser   # the Markdown pages of docs/ in Sphinx
  graphviz              # the design page's diagrams (sphinx.ext.graphviz)
); fi
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# PyPI, pinned; ci/pypi-constraints.txt pins everything they pull in, so two installs on
# different days get the same packages. A stamp of the pins in the environment makes a second run
# a no-op that needs no network.
pypi_packages=(
  "moto[server]==5.2.5" # the S3 protocol peer of the remote I/O tests (moto_server on loopback)
  zarr==3.1.6           # kvikio.zarr.GDSStore and its tests (zarr.testing.store.StoreTests)
  numcodecs==0.16.6     # kvikio.numcodecs and the codecs of zarr
  dask==2026.8.0        # the Dask example and its test (docs/dask.md)
  distributed==2026.8.0 # dask.distributed's LocalCluster of worker processes
  pytest==9.2.0         # the Python package's test suite
  pytest-asyncio==1.5.0 # zarr's store tests are coroutines
  scikit-build-core==1.1.2 # the build backend of the libkvikio and kvikio wheels (pip wheel)
  pybind11==3.1.0       # kvikio._lib's binding, as the kvikio wheel's isolated build gets it
)
stamp="$venv/.kvikio-pypi-pins"
if [[ $demo == true ]]; then
  pypi_packages=()
fi
wanted="$(printf '%s\n' "${pypi_packages[@]}"; cat ci/pypi-constraints.txt)"
if [[ $demo == false && (! -x $venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$wanted") ]]; then
  echo "install-deps: installing ${pypi_packages[*]} from PyPI into $venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -c ci/pypi-constraints.txt \
    "${pypi_packages[@]}"
  printf '%s\n' "$wanted" >"$stamp"
fi

# The CUDA toolkit is not a Debian package here: its headers (cuda.h, nvtx3) must already be
# installed. The driver is not needed to build: libkvikio loads it at run time.
cuda_root=${CUDAToolkit_ROOT:-${CUDA_HOME:-/usr/local/cuda}}
if [[ ! -f "$cuda_root/include/cuda.h" || ! -d "$cuda_root/include/nvtx3" ]]; then
  echo "install-deps: the CUDA toolkit headers were not found under $cuda_root/include" >&2
  echo "  (cuda.h and nvtx3/). Install the CUDA toolkit or set CUDAToolkit_ROOT." >&2
  exit 1
fi
