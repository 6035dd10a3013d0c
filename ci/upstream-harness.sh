#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Prepares the side-by-side run against upstream KvikIO (ci/upstream-compare.sh) in
# .device-run/compare/ (git-ignored, carried to the GPU machine with build/install):
#   upstream/bin, upstream/lib   upstream's harness binaries and library, from the anchor
#                                (UPSTREAM_KVIKIO, default ../shared/anchors/upstream-kvikio)
#   upstream/bin/defaults_read, upstream/bin/reader_workload
#                                cpp/benchmarks/upstream/*.cpp against upstream
#   ours/{pread,remote}_bench, ours/defaults_read, ours/reader_workload
#                                the same sources against this project's install tree
#                                (cmake --install build/release --prefix build/install first)
# Run here; the binaries load their library at run time (RUNPATH), the CUDA driver too.
set -euo pipefail
cd "$(dirname "$0")/.."
anchor=${UPSTREAM_KVIKIO:-../shared/anchors/upstream-kvikio}
out=.device-run/compare
[[ -f build/install/lib/libkvikio.so || -f build/install/lib64/libkvikio.so ]] ||
  { echo "build/install is missing: cmake --install build/release --prefix build/install" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/upstream" "$out/ours"
cp -r "$anchor/bin" "$anchor/lib" "$out/upstream/"
chmod -R u+w "$out/upstream"
cuda=/usr/local/cuda
libdir=$(ls -d "$PWD"/build/install/lib* | head -n 1)
link=("$cuda/lib64/libcudart_static.a" -ldl -lrt -lpthread)
# Upstream's CMake exports these; without them its thread pool's layout differs (anchor README).
upstream_defs=(-DBS_THREAD_POOL_ENABLE_PAUSE=1 -DKVIKIO_LIBCURL_FOUND -DKVIKIO_CUFILE_FOUND
  -DKVIKIO_CUFILE_VERSION_API_FOUND)
# Both libraries read remote objects (reader_workload.hpp's READER_URL).
bench_defs=(-DKVIKIO_BENCH_REMOTE)
# reader_workload calls the driver API itself (the stub to link; the driver at run time).
driver=(-L "$cuda/lib64/stubs" -lcuda)
g++ -std=c++20 -O2 "${bench_defs[@]}" "${upstream_defs[@]}" -I "$anchor/include" -I "$cuda/include" \
  cpp/benchmarks/upstream/defaults_read.cpp -o "$out/upstream/bin/defaults_read" \
  -L "$anchor/lib" -lkvikio -Wl,-rpath,'$ORIGIN/../lib' "${link[@]}"
g++ -std=c++20 -O2 "${bench_defs[@]}" "${upstream_defs[@]}" -I "$anchor/include" -I "$cuda/include" \
  cpp/benchmarks/upstream/reader_workload.cpp -o "$out/upstream/bin/reader_workload" \
  -L "$anchor/lib" -lkvikio -Wl,-rpath,'$ORIGIN/../lib' "${driver[@]}" -lpthread
for src in "$anchor/src/pread_bench.cpp" "$anchor/src/remote_bench.cpp" \
  cpp/benchmarks/upstream/defaults_read.cpp cpp/benchmarks/upstream/reader_workload.cpp; do
  name=$(basename "$src" .cpp)
  # RUNPATH: the carried install tree, at the same place relative to the binary.
  g++ -std=c++20 -O2 "${bench_defs[@]}" -I build/install/include -I "$cuda/include" "$src" -o "$out/ours/$name" \
    -L "$libdir" -lkvikio -Wl,-rpath,'$ORIGIN/../../../build/install/'"$(basename "$libdir")" \
    "${link[@]}" "${driver[@]}"
done
strip "$out"/ours/* "$out"/upstream/bin/defaults_read "$out"/upstream/bin/reader_workload
du -sh "$out"
