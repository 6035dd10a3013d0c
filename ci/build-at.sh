#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# An earlier build of this project for a regression check on the GPU machine: ci/build-at.sh
# COMMIT [DIR] builds libkvikio at COMMIT (a git worktree under /tmp, Release, the compiler cache
# shared with ./build.sh) and compiles this tree's public-API harnesses (the ones
# ci/upstream-harness.sh compiles) against it into DIR (default .device-run/at-<commit>), with
# the library in DIR/lib, found through the harnesses' RUNPATH ($ORIGIN/lib). Carry DIR and pass
# it as BEFORE=DIR to ci/upstream-compare.sh; several such folders bisect a regression. A harness
# that the earlier library's API cannot build is left out, with a line saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short "${1:?usage: ci/build-at.sh COMMIT [DIR]}")
out=${2:-.device-run/at-$commit}
src=${UPSTREAM_SRC:-../shared/anchors/upstream-kvikio/src}
tree=/tmp/kvikio-at-$commit
[[ -d $tree ]] || git worktree add --detach "$tree" "$commit" >/dev/null
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$tree CCACHE_NOHASHDIR=1
fi
cmake -S "$tree/cpp" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build "$tree/build" -j "$(nproc)" >/dev/null
cmake --install "$tree/build" --prefix "$tree/install" >/dev/null
libdir=$(ls -d "$tree"/install/lib* | head -n 1)
rm -rf "$out"
mkdir -p "$out/lib"
cp -a "$libdir"/libkvikio.so* "$out/lib/"
cuda=/usr/local/cuda
for source in "$src/pread_bench.cpp" "$src/remote_bench.cpp" cpp/benchmarks/upstream/*.cpp; do
  name=$(basename "$source" .cpp)
  if ! g++ -std=c++20 -O2 -DKVIKIO_BENCH_REMOTE -I "$tree/install/include" -I "$cuda/include" \
    "$source" -o "$out/$name" -L "$libdir" -lkvikio -Wl,-rpath,'$ORIGIN/lib' \
    "$cuda/lib64/libcudart_static.a" -ldl -lrt -lpthread -L "$cuda/lib64/stubs" -lcuda -lcurl \
    2>/dev/null; then
    echo "build-at: $name does not build against $commit: left out"
  fi
done
strip "$out"/lib/libkvikio.so.*.* "$out"/* 2>/dev/null || true
echo "$commit" >"$out/COMMIT"
du -sh "$out"
