#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs on the GPU machine (device tool), from the repository root, with build/release carried:
# the Release test suite against the real CUDA driver, then the demo. Logs go to $OUT.
# The build folder's absolute paths point at /work/main, so the checkout is linked there.
# The simulator is removed from the carried build, so the device tests' dlopen finds the real
# driver; the jitter variants (a simulator knob) and the injected failures are not run. The
# PyPI packages that machine's Python lacks (moto, boto3, zarr, numcodecs, dask, ...) and
# upstream's released packages come packed in .device-run/python (ci/device-python.sh; carry
# .device-run): they are unpacked to /tmp/deps (on PYTHONPATH; the test servers run on that
# python3) and /tmp/upstream. The remote tests start /usr/sbin/nginx: where it is missing,
# Debian's package carried in .device-run (ci/device-bundle.sh) is unpacked to /tmp/nginx-deb and
# linked there.
set -uo pipefail
OUT=${OUT:-/tmp/kvikio-gpu-out}
mkdir -p "$OUT"
root=$PWD
if [[ ! -e /work/main/build/release ]]; then
  mkdir -p /work && ln -sfn "$root" /work/main
fi
cd /work/main
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
status=0
if [[ ! -x /usr/sbin/nginx ]]; then
  deb=$(ls "$root"/.device-run/nginx_*.deb 2>/dev/null | head -n 1)
  if [[ -n $deb ]]; then
    dpkg -x "$deb" /tmp/nginx-deb && ln -sfn /tmp/nginx-deb/usr/sbin/nginx /usr/sbin/nginx
  else
    echo "no /usr/sbin/nginx and no .device-run/nginx_*.deb: the tests that start nginx fail"
  fi
fi
rm -f build/release/cudasim/libcuda.so*
# Simulator-only entries (failure injection, shared hardware queues, the label "simulator") need
# the simulator; the checks of the project's records (project.*) need PyYAML, which that machine
# lacks, and test nothing of the machine.
exclude="injected_failure|shared_hardware_queue|project\\."
if [[ -f $root/.device-run/python/deps.tar.xz ]]; then
  mkdir -p /tmp/deps && tar -C /tmp/deps -xJf "$root/.device-run/python/deps.tar.xz"
  export PYTHONPATH=/tmp/deps${PYTHONPATH:+:$PYTHONPATH} TEST_SERVER_PYTHON=$(command -v python3)
else
  exclude+="|S3|Moto"
fi
if [[ -f $root/.device-run/python/upstream.tar.xz ]]; then
  # shellcheck source=ci/released-upstream.sh
  source "$root/ci/released-upstream.sh"
  unpack_released_upstream "$root"
fi
echo "ctest excludes: $exclude" | tee "$OUT/excluded.txt"
# The python label: the extension built here is for this machine's venv (Python 3.11); PY=1
# below builds the package there with pip instead.
if [[ ${TESTS:-1} == 1 ]]; then
  timeout 400 ctest --test-dir build/release -j 8 --output-on-failure --timeout 120 \
    -LE "device-jitter|python|simulator" -E "$exclude" >"$OUT/ctest.log" 2>&1 || status=1
  tail -n 25 "$OUT/ctest.log"
fi
# The Python package (PY=1): pip install python/kvikio against the carried install tree
# (build/install, from cmake --install) into /tmp/ours, then its pytest suite with CuPy (zarr,
# dask and numcodecs from /tmp/deps), from outside the repo.
if [[ ${PY:-0} == 1 ]]; then
  CMAKE_PREFIX_PATH=$root/build/install timeout 300 python3 -m pip install --no-build-isolation \
    --no-deps --target /tmp/ours -v "$root/python/kvikio" >"$OUT/pip.log" 2>&1 || status=1
  tail -n 5 "$OUT/pip.log"
  export PYTHONPATH=/tmp/ours${PYTHONPATH:+:$PYTHONPATH}
  (cd /tmp && timeout 300 python3 -m pytest -q -p no:cacheprovider -rs "$root/python/kvikio/tests") \
    >"$OUT/pytest.log" 2>&1 || status=1
  tail -n 15 "$OUT/pytest.log"
fi
# Upstream's own tests (UPSTREAM=1, after PY=1's install; ci/upstream-tests.sh prepares them in
# .device-run/upstream-tests): each C++ test program built against upstream's library and against
# ours, run in turn (WebHDFS ones against the project's WebHDFS test server on upstream's port),
# then upstream's Python suite against our package. Results: $OUT/upstream-cpp.txt (program,
# library, exit status, GoogleTest's summary) and $OUT/upstream-pytest.log.
if [[ ${UPSTREAM:-0} == 1 ]]; then
  up=$root/.device-run/upstream-tests
  mkdir -p "$OUT/upstream-cpp" /tmp/webhdfs-root
  python3 cpp/tests/servers/webhdfs.py 9870 /tmp/webhdfs-root >"$OUT/webhdfs.log" 2>&1 &
  webhdfs=$!
  for program in "$up"/ours/*; do
    name=$(basename "$program")
    for side in upstream ours; do
      [[ -x $up/$side/$name ]] || { echo "$name $side not-built"; continue; }
      (cd /tmp && KVIKIO_WEBHDFS_USERNAME=kvikio timeout 300 "$up/$side/$name") \
        >"$OUT/upstream-cpp/$side-$name.log" 2>&1
      rc=$?
      echo "$name $side rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/upstream-cpp/$side-$name.log" |
        tr -s ' ' | tr '\n' ' ')"
    done
  done | tee "$OUT/upstream-cpp.txt"
  kill "$webhdfs" 2>/dev/null
  # Upstream's suite, on our package (PY=1) and /tmp/deps (boto3, moto, zarr, dask, ...);
  # zarr's store tests are coroutines, as in upstream's pytest configuration. Its
  # test_no_current_cuda_context imports cuda-python's old module `cuda.cuda`, which the
  # machine's cuda-bindings 13 has as cuda.bindings.driver only: /tmp/cuda-shim names it.
  if ! python3 -c "import cuda.cuda" 2>/dev/null && python3 -c "import cuda.bindings.driver"; then
    mkdir -p /tmp/cuda-shim/cuda
    echo "from cuda.bindings.driver import *  # noqa: F403" >/tmp/cuda-shim/cuda/cuda.py
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/cuda-shim
  fi
  (cd "$up/python" && timeout 420 python3 -m pytest -q -p no:cacheprovider -rfEs \
    -o asyncio_mode=auto --junitxml="$OUT/upstream-pytest.xml" --continue-on-collection-errors .) \
    >"$OUT/upstream-pytest.log" 2>&1
  tail -n 40 "$OUT/upstream-pytest.log"
  # Tests per module (every module collected): passed, failed, skipped.
  python3 "$root/ci/junit-summary.py" "$OUT/upstream-pytest.xml" | tee "$OUT/upstream-modules.txt"
fi
if [[ ${DEMO:-1} == 1 ]]; then
  timeout 120 build/release/cpp/examples/basic_io --size 4294967296 --dir /tmp 2>&1 | tee "$OUT/demo.log" \
    || status=1
fi

# Benchmarks (BENCH=1): reads of a hot 8 GiB file into host and device memory (BENCH_MEM),
# threads BENCH_THREADS (1-16), local backends BACKENDS (posix,io_uring), io_uring request
# shapes SHAPES (SIZE:DEPTH[:WORKERS],...), ring depths RING; BENCH_SIZE (8GiB), BENCH_FLAGS
# (say "--drop-cache --direct" for cold O_DIRECT reads); BENCH_READ=0 leaves the reads out.
if [[ ${BENCH:-0} == 1 ]]; then
  bench=build/release/cpp/benchmarks/kvikio_bench
  file=/tmp/kvikio-bench.bin
  shapes=()
  if [[ -n ${SHAPES:-} ]]; then shapes=(--io-uring-shape "$SHAPES"); fi
  for mem in ${BENCH_MEM:-host device}; do
    [[ ${BENCH_READ:-1} == 1 ]] || break
    # shellcheck disable=SC2086 # BENCH_FLAGS is a list of options
    timeout 400 $bench local read --file $file --size ${BENCH_SIZE:-8GiB} \
      --threads ${BENCH_THREADS:-1,2,4,8,16} ${BENCH_FLAGS:-} \
      --task-size 4MiB --ring-depth ${RING:-4} --backend ${BACKENDS:-posix} "${shapes[@]}" \
      --mem $mem --repeat ${REPEAT:-5} --create --json "$OUT/bench.jsonl" 2>&1 \
      | tee -a "$OUT/bench.log" || status=1
  done
  rm -f $file
  # Writes into the page cache (no fsync), smaller so that write-back keeps up; the same
  # backends, shapes and threads as the reads, WRITE_FLAGS.
  if [[ ${BENCH_WRITE:-0} == 1 ]]; then
    for mem in ${BENCH_MEM:-host device}; do
      # shellcheck disable=SC2086 # WRITE_FLAGS is a list of options
      timeout 300 $bench local write --file /tmp/kvikio-bench-w.bin --size 4GiB \
        --threads ${BENCH_THREADS:-1,2,4,8,16} ${WRITE_FLAGS:-} --task-size 4MiB \
        --ring-depth ${RING:-4} --backend ${BACKENDS:-posix} "${shapes[@]}" --mem $mem --repeat 3 \
        --json "$OUT/bench.jsonl" 2>&1 | tee -a "$OUT/bench.log" || status=1
    done
    rm -f /tmp/kvikio-bench-w.bin
  fi
fi
# Stream-ordered reads (ASYNC_BENCH=1): N read_async on one stream against pread().get(), for
# each of ASYNC_READS (the calls per 4 GiB: 8 is 512 MiB a call), ring depths RING (a list).
if [[ ${ASYNC_BENCH:-0} == 1 ]]; then
  for reads in ${ASYNC_READS:-8}; do
    timeout 300 build/release/cpp/benchmarks/kvikio_bench local read --file /tmp/kvikio-async.bin \
      --size 4GiB --threads ${ASYNC_THREADS:-1,2,4,8,16} --task-size 4MiB --mem device --api async \
      --async-reads "$reads" --ring-depth ${RING:-4} --repeat ${REPEAT:-3} --create \
      --json "$OUT/async-bench.jsonl" 2>&1 | tee -a "$OUT/async-bench.log" || status=1
  done
  rm -f /tmp/kvikio-async.bin
fi
# IPC handles (IPC_BENCH=1): export_memory and open, cached and not, beside the driver's calls.
if [[ ${IPC_BENCH:-0} == 1 ]]; then
  timeout 120 build/release/cpp/benchmarks/kvikio_bench ipc --calls ${IPC_CALLS:-5000} \
    --json "$OUT/ipc-bench.jsonl" 2>&1 | tee -a "$OUT/ipc-bench.log" || status=1
fi
exit $status
