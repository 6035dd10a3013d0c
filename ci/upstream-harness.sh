#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Prepares the side-by-side run against upstream KvikIO (ci/upstream-compare.sh) in
# .device-run/compare/ (git-ignored, carried to the GPU machine with build/install). The
# yardstick is upstream's released C++ library, the one RAPIDS ships: the libkvikio-cu13 wheel
# from PyPI (UPSTREAM_VERSION, default 26.10.0), with rapids-logger, which it loads:
#   upstream/bin/{pread,remote}_bench   the anchor's measuring sources (UPSTREAM_SRC, default
#                                       ../shared/anchors/upstream-kvikio/src), public API only
#   upstream/bin/defaults_read, upstream/bin/reader_workload   cpp/benchmarks/upstream/*.cpp
#   ours/...                            the same sources against this project's install tree
#                                       (cmake --install build/release --prefix build/install)
# Upstream's binaries are compiled here against the wheel's headers (and cufile.h from PyPI's
# nvidia-cufile, which those headers include) and find its libraries at run time under
# /tmp/upstream, where ci/gpu-run.sh unpacks .device-run/python/upstream.tar.xz
# (ci/device-python.sh makes it). Run here; the binaries load the CUDA driver at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
upstream_version=${UPSTREAM_VERSION:-26.10.0}
src=${UPSTREAM_SRC:-../shared/anchors/upstream-kvikio/src}
out=.device-run/compare
wheels=.device-run/wheels
[[ -f build/install/lib/libkvikio.so || -f build/install/lib64/libkvikio.so ]] ||
  { echo "build/install is missing: cmake --install build/release --prefix build/install" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out/upstream/bin" "$out/ours" "$wheels"
# The released headers and libraries, unpacked for compiling and linking only.
released=$out/released
mkdir -p "$released"
/usr/bin/python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version 3.12 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$wheels" "libkvikio-cu13==$upstream_version" \
  rapids-logger==0.3.0 nvidia-cufile==1.15.1.6
for w in "$wheels"/libkvikio_cu13-"$upstream_version"-*.whl "$wheels"/rapids_logger-0.3.0-*.whl \
  "$wheels"/nvidia_cufile-1.15.1.6-*.whl; do
  (cd "$released" && unzip -q -o "$OLDPWD/$w")
done
cuda=/usr/local/cuda
libdir=$(ls -d "$PWD"/build/install/lib* | head -n 1)
link=("$cuda/lib64/libcudart_static.a" -ldl -lrt -lpthread)
# What upstream's CMake package exports to its users (kvikio-targets.cmake, bs_thread_pool).
upstream_defs=(-DBS_THREAD_POOL_ENABLE_PAUSE=1 -DKVIKIO_LIBCURL_FOUND -DKVIKIO_CUFILE_FOUND
  -DKVIKIO_CUFILE_VERSION_API_FOUND)
upstream_flags=(-I "$released/libkvikio/include" -I "$released/rapids_logger/include"
  -I "$released/nvidia/cu13/include" -L "$released/libkvikio/lib64"
  -L "$released/rapids_logger/lib64" -lkvikio -Wl,--no-as-needed -lrapids_logger -Wl,--as-needed
  -Wl,-rpath,/tmp/upstream/libkvikio/lib64:/tmp/upstream/rapids_logger/lib64)
# Both libraries read remote objects (reader_workload.hpp's READER_URL).
bench_defs=(-DKVIKIO_BENCH_REMOTE)
# reader_workload calls the driver API itself (the stub to link; the driver at run time), and
# libcurl for its plain way of one reactor.
driver=(-L "$cuda/lib64/stubs" -lcuda -lcurl)
for source in "$src/pread_bench.cpp" "$src/remote_bench.cpp" \
  cpp/benchmarks/upstream/defaults_read.cpp cpp/benchmarks/upstream/reader_workload.cpp \
  cpp/benchmarks/upstream/whole_file.cpp cpp/benchmarks/upstream/read_async_bench.cpp \
  cpp/benchmarks/upstream/devices_read.cpp cpp/benchmarks/upstream/parquet_workload.cpp \
  cpp/benchmarks/upstream/first_call.cpp cpp/benchmarks/upstream/per_call.cpp; do
  name=$(basename "$source" .cpp)
  g++ -std=c++20 -O2 "${bench_defs[@]}" "${upstream_defs[@]}" -I "$cuda/include" "$source" \
    -o "$out/upstream/bin/$name" "${upstream_flags[@]}" "${link[@]}" "${driver[@]}"
  # RUNPATH: the carried install tree, at the same place relative to the binary.
  g++ -std=c++20 -O2 "${bench_defs[@]}" -I build/install/include -I "$cuda/include" "$source" \
    -o "$out/ours/$name" -L "$libdir" -lkvikio \
    -Wl,-rpath,'$ORIGIN/../../../build/install/'"$(basename "$libdir")" "${link[@]}" "${driver[@]}"
done
rm -rf "$released"
strip "$out"/ours/* "$out"/upstream/bin/*
echo "upstream: libkvikio-cu13 $upstream_version (PyPI)" >"$out/upstream/VERSION"
du -sh "$out"
