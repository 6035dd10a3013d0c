#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs what building and testing KvikIO needs, from Debian's packages. Idempotent: when
# everything is present it changes nothing and needs no network. dependencies.yaml lists each
# package with its purpose; ci/check-dependencies.py fails when the two are out of step.
set -euo pipefail

packages=(
  g++                   # C++20 compiler
  cmake                 # build system (>= 3.25)
  ninja-build           # build tool
  ccache                # compiler cache of ./build.sh: a rebuild compiles only what changed
  git                   # kvikio.__git_commit__: the commit a build was made from
  libgtest-dev          # GoogleTest, the C++ test framework
  libcurl4-openssl-dev  # libcurl, the HTTP/S3 client of remote I/O
  liburing-dev          # liburing (static), the io_uring local backend
  libcli11-dev          # CLI11, the command line of kvikio_bench
  clang-format          # the formatting check of ./build.sh test
  clang                 # compiles the libFuzzer targets of cpp/fuzz
  libclang-rt-14-dev    # libFuzzer and the sanitizer runtimes for clang
  nginx-light           # the real HTTP server of the remote I/O tests
  python3               # Debian's /usr/bin/python3: the test servers, ci/check-dependencies.py
  python3-yaml          # ci/check-dependencies.py reads dependencies.yaml
  python3-botocore      # the independent SigV4 check of the S3 test server (servers/s3_sigv4.py)
  python3-matplotlib    # docs/benchmarks/plot.py (Debian's /usr/bin/python3)
  python3-dev           # the Python headers the extension kvikio._lib compiles against
  pybind11-dev          # pybind11, the C++ side of kvikio._lib
  python3-numpy         # NumPy, which the kvikio package uses for host buffers
  python3-pytest        # the Python package's test suite
  doxygen               # the C++ API of the docs (XML from the public headers)
  python3-sphinx        # the docs site (./build.sh docs)
  python3-breathe       # Doxygen XML into Sphinx
  python3-myst-parser   # the Markdown pages of docs/ in Sphinx
  graphviz              # the design page's diagrams (sphinx.ext.graphviz)
)
# npm runs s3rver (below); a machine that already has node and npm (from NodeSource, say) keeps
# them, so npm is asked of Debian only when it is missing.
if ! command -v npm >/dev/null; then packages+=(npm); fi

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

# s3rver, the S3 protocol peer of the remote I/O tests, comes from the npm registry (Debian has
# no package of it). Pinned: the tests rely on its behaviour (see dependencies.yaml).
s3rver_version=3.7.1
if [[ "$(s3rver --version 2>/dev/null)" != "$s3rver_version" ]]; then
  echo "install-deps: installing s3rver@$s3rver_version from npm"
  "${sudo_cmd[@]}" npm install --global --no-audit --no-fund "s3rver@$s3rver_version"
fi

# The CUDA toolkit is not a Debian package here: its headers (cuda.h, nvtx3) must already be
# installed. The driver is not needed to build: libkvikio loads it at run time.
cuda_root=${CUDAToolkit_ROOT:-${CUDA_HOME:-/usr/local/cuda}}
if [[ ! -f "$cuda_root/include/cuda.h" || ! -d "$cuda_root/include/nvtx3" ]]; then
  echo "install-deps: the CUDA toolkit headers were not found under $cuda_root/include" >&2
  echo "  (cuda.h and nvtx3/). Install the CUDA toolkit or set CUDAToolkit_ROOT." >&2
  exit 1
fi
