#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Prepares upstream KvikIO's own tests, unchanged, for a run against this project on the GPU
# machine (ci/gpu-run.sh UPSTREAM=1), in .device-run/upstream-tests/ (git-ignored, carried there):
#   python/   upstream's Python suite (python/kvikio/tests), run against our pip-installed package
#   examples/ upstream's Python examples, which its test_examples.py runs
#   kvikio/benchmarks/  upstream's benchmark scripts, which its test_benchmarks.py runs (against
#             the installed package, ours) from beside the tests, as in upstream's tree
#   src/      upstream's C++ tests (cpp/tests)
#   ours/     each C++ test file that includes only headers we install, built against this
#             project's install tree (cmake --install build/release --prefix build/install)
#   upstream/ the same files built against upstream's library (the anchor), to tell a test that
#             fails for us from one that fails on that machine for upstream too
#   lib/      the CUDA runtime those tests link (GoogleTest is linked statically)
#   upstream-lib/ upstream's libkvikio.so, from the anchor
# UPSTREAM_GIT: a git directory of rapidsai/kvikio (the search tool's `fetch` gives one), default
# /work/.mirror/rapidsai+kvikio/repo; its HEAD is used (the anchor's commit, 2e98113d).
# Nothing of upstream goes into the repository: .device-run is ignored by git.
set -euo pipefail
cd "$(dirname "$0")/.."
git_dir=${UPSTREAM_GIT:-/work/.mirror/rapidsai+kvikio/repo}
anchor=${UPSTREAM_KVIKIO:-../shared/anchors/upstream-kvikio}
out=.device-run/upstream-tests
[[ -f build/install/lib/libkvikio.so || -f build/install/lib64/libkvikio.so ]] ||
  { echo "build/install is missing: cmake --install build/release --prefix build/install" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/python" "$out/src" "$out/ours" "$out/upstream" "$out/lib" "$out/upstream-lib"
# The Python tests, and beside them the examples that test_examples.py imports from ../examples.
git --git-dir="$git_dir" archive HEAD python/kvikio/tests | tar -x -C "$out/python" --strip-components=3
mkdir -p "$out/examples" "$out/kvikio/benchmarks"
git --git-dir="$git_dir" archive HEAD python/kvikio/examples |
  tar -x -C "$out/examples" --strip-components=3
git --git-dir="$git_dir" archive HEAD python/kvikio/kvikio/benchmarks |
  tar -x -C "$out/kvikio/benchmarks" --strip-components=4
git --git-dir="$git_dir" archive HEAD cpp/tests | tar -x -C "$out/src" --strip-components=2
cuda=/usr/local/cuda
cp -L "$cuda/lib64/libcudart.so.13" "$out/lib/"
cp "$anchor/lib/libkvikio.so" "$out/upstream-lib/"
libdir=$(ls -d "$PWD"/build/install/lib* | head -n 1)
# Upstream's CMake exports these; without them its thread pool's layout differs (anchor README).
upstream_defs=(-DBS_THREAD_POOL_ENABLE_PAUSE=1 -DKVIKIO_LIBCURL_FOUND -DKVIKIO_CUFILE_FOUND
  -DKVIKIO_CUFILE_VERSION_API_FOUND)
common=(-std=c++20 -O1 -I "$out/src" -I "$cuda/include")
link=(-L "$cuda/lib64" -lcudart -Wl,-rpath,'$ORIGIN/../lib' -l:libgtest_main.a -l:libgtest.a
  -lcurl -lpthread)
# NAME SOURCES... of each test, from upstream's cpp/tests/CMakeLists.txt.
sed -nE 's/^ *kvikio_add_test\(NAME ([A-Z_]+) SOURCES ([^)]+)\).*/\1 \2/p' \
  "$out/src/CMakeLists.txt" >"$out/tests.txt"
built=0
while read -r name sources; do
  srcs=()
  for s in $sources; do srcs+=("$out/src/$s"); done
  # Only what includes nothing but the headers we install (the rest test upstream's internals).
  if ! g++ "${common[@]}" -I build/install/include -fsyntax-only "${srcs[@]}" 2>"$out/$name.skip"; then
    echo "not built: $name ($(grep -m1 -o 'fatal error: [^ ]*' "$out/$name.skip" || echo 'see log'))"
    continue
  fi
  rm -f "$out/$name.skip"
  g++ "${common[@]}" -I build/install/include "${srcs[@]}" -o "$out/ours/$name" \
    -L "$libdir" -lkvikio -Wl,-rpath,'$ORIGIN/../../../build/install/'"$(basename "$libdir")" \
    "${link[@]}"
  g++ "${common[@]}" "${upstream_defs[@]}" -I "$anchor/include" "${srcs[@]}" \
    -o "$out/upstream/$name" -L "$anchor/lib" -lkvikio \
    -Wl,-rpath,'$ORIGIN/../upstream-lib' "${link[@]}" 2>"$out/upstream/$name.log" ||
    echo "against upstream's library: $name does not build (see $out/upstream/$name.log)"
  built=$((built + 1))
done <"$out/tests.txt"
strip "$out"/ours/* "$out"/upstream/*_TEST 2>/dev/null || true

echo "$built of $(wc -l <"$out/tests.txt") upstream test programs built against this project"
du -sh "$out"
