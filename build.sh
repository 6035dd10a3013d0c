#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The one entry point for building and testing KvikIO.
#
#   ./build.sh          install dependencies (ci/install-deps.sh) and build (Release)
#   ./build.sh test     ... and run everything: format check, the Release suite (pytest of the
#                       Python package included), the installed
#                       CMake package used by cpp/examples/downstream, then the suite again under
#                       AddressSanitizer+UndefinedBehaviorSanitizer and under ThreadSanitizer,
#                       then every libFuzzer target of cpp/fuzz for FUZZ_SECONDS (default 30),
#                       each going on from the corpus it kept in FUZZ_CORPUS_DIR
#   ./build.sh soak     ... and run the stress test (cpp/tests/test_stress.cpp) for SOAK_SECONDS
#                       (default 300) per local backend in the Release, ASan+UBSan and TSan builds
#   ./build.sh demo     only what the demo needs (ci/install-deps.sh --demo), the library and
#                       cpp/examples into build/demo, then run cpp/examples/basic_io
#   ./build.sh docs     ... and the docs site (Doxygen + Sphinx) into build/docs/html, with
#                       only the library and the Python package built
#   ./build.sh clean    remove the build folders
#   ./build.sh help     this text
#
# Environment: JOBS (parallel build jobs, default nproc), TEST_JOBS (tests at once, default
# 2 x JOBS), BUILD_ROOT (default ./build), FUZZ_CORPUS_DIR (default ~/.cache/kvikio/fuzz-corpus).
set -euo pipefail
cd "$(dirname "$0")"

command=${1:-build}
JOBS=${JOBS:-$(nproc)}
# Tests spend a fifth to a third of their time waiting (simulated streams, servers, timeouts):
# twice as many at once as cores keeps the cores busy (the Release suite: 218 s at 2, 174 s at 4).
TEST_JOBS=${TEST_JOBS:-$((2 * JOBS))}
BUILD_ROOT=${BUILD_ROOT:-$PWD/build}

# Each stage is announced by step; on exit, whatever the outcome, the wall time of each stage is
# printed, so that every run (CI's too) shows where its minutes went.
stage_names=()
stage_seconds=()
stage_started=
step() {
  end_stage
  printf '\n=== %s ===\n' "$*"
  stage_names+=("$*")
  stage_started=$SECONDS
}
end_stage() {
  if [[ -n $stage_started ]]; then
    stage_seconds+=($((SECONDS - stage_started)))
    stage_started=
  fi
}
stage_table() {
  local rc=$?
  end_stage
  ((${#stage_names[@]} > 0)) || return 0
  printf '\n=== Wall time per stage ===\n'
  local i
  for i in "${!stage_names[@]}"; do
    printf '%6s s  %s\n' "${stage_seconds[$i]}" "${stage_names[$i]}"
  done
  printf '%6s s  all (%s)\n' "$SECONDS" "$([[ $rc == 0 ]] && echo passed || echo "failed, exit $rc")"
}
trap stage_table EXIT

# The virtual environment of the PyPI packages (ci/install-deps.sh makes it): its Python builds
# the extension, runs pytest and the remote tests' servers.
VENV=$BUILD_ROOT/venv

dependencies() {
  step "Dependencies (ci/install-deps.sh)"
  ci/install-deps.sh "$VENV"
}

# The compiler cache: paths below the checkout are hashed relative to it (and the working
# directory not at all), so that clones in other folders share their objects.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi

# configure_and_build <name> [cmake arguments...]: a build folder per configuration; every
# target, or only those in the array build_targets.
build_targets=()
configure_and_build() {
  local name=$1
  shift
  cmake -S . -B "$BUILD_ROOT/$name" -G Ninja -DKvikIO_WARNINGS_AS_ERRORS=ON "${launcher[@]}" \
    -DKvikIO_TEST_PYTHON="$VENV/bin/python" "$@" >/dev/null
  cmake --build "$BUILD_ROOT/$name" -j "$JOBS" ${build_targets[@]+--target "${build_targets[@]}"}
}

# run_suite <name> [VAR=value...]: ctest in that build folder; any failure or sanitizer report
# fails. The log is kept in the build folder, and the slowest tests are listed after it.
run_suite() {
  local name=$1
  shift
  local log="$BUILD_ROOT/$name/ctest.log" status=0
  env "$@" ctest --test-dir "$BUILD_ROOT/$name" -j "$TEST_JOBS" --output-on-failure --no-tests=error \
    --timeout 300 2>&1 | tee "$log" || status=$?
  echo "--- the 10 slowest tests of this suite (seconds):"
  # (sed -n, not head: a reader that stops early would fail the pipe under pipefail)
  sed -nE 's/^.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' "$log" | sort -rn | sed -n 1,10p
  if [ "$status" -ne 0 ]; then
    # Last in the output, where a reader of only its end (CI's summary) still sees why.
    echo "--- the end of what each failed test printed (the whole of it is in $log):"
    failed_test_output "$log"
  fi
  return "$status"
}

# failed_test_output <ctest log>: the last 15 lines of each failed test's output but GoogleTest's
# progress lines (the first 3 failed tests); ctest prints a test's output after its result line.
failed_test_output() {
  awk '
    /^ *Start +[0-9]+: / || /^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: / {
      if (name != "") { flush() }
      if ($0 ~ /Test +#[0-9]+: / && $0 !~ / Passed +[0-9.]+ sec$/ && $0 !~ /Skipped|Not Run|Disabled/ &&
          shown < 3) {
        name = $0; sub(/^.*Test +#[0-9]+: /, "", name); sub(/ .*$/, "", name); n = 0
      }
      next
    }
    /tests passed, / { if (name != "") { flush() } exit }
    name != "" && $0 !~ /^\[[ =A-Z-]+\]/ && $0 != "" { lines[n++] = $0 }
    function flush(  i) {
      print "[" name "]"
      for (i = (n > 15 ? n - 15 : 0); i < n; ++i) { print "  " lines[i] }
      name = ""; ++shown
    }
    END { if (name != "") { flush() } }
  ' "$1"
}

# The Release build also builds the Python extension (pybind11) for the virtual environment's
# Python, Debian's /usr/bin/python3 (a python3 earlier on PATH may be another build).
build_release() {
  step "Release build"
  configure_and_build release "${release_options[@]}"
}
release_options=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$BUILD_ROOT/install"
  -DKvikIO_BUILD_PYTHON=ON -DPython3_EXECUTABLE="$VENV/bin/python")

# What the docs site needs of the Release build: the library and the staged Python package
# (autodoc imports it), not the tests, benchmarks and examples.
build_for_docs() {
  step "Release build: the library and the Python package (what the docs need)"
  build_targets=(_lib kvikio_python_sources)
  configure_and_build release "${release_options[@]}"
  build_targets=()
}

format_check() {
  step "Format check (clang-format)"
  git ls-files -z --cached --others --exclude-standard -- '*.cpp' '*.hpp' \
    | xargs -0 -r clang-format --dry-run --Werror
  echo "formatting is clean"
}

downstream_check() {
  step "Installed package used by cpp/examples/downstream (and each installed header alone)"
  cmake --install "$BUILD_ROOT/release" >/dev/null
  cmake -S cpp/examples/downstream -B "$BUILD_ROOT/downstream" -G Ninja "${launcher[@]}" \
    -DCMAKE_PREFIX_PATH="$BUILD_ROOT/install" >/dev/null
  cmake --build "$BUILD_ROOT/downstream" -j "$JOBS"
  "$BUILD_ROOT/downstream/downstream"
  # The way RAPIDS projects take the library: its source, SOURCE_SUBDIR cpp, no option given
  # (tests, examples and benchmarks must stay off: no GoogleTest or CLI11 is looked for).
  step "Source tree used by cpp/examples/downstream (FetchContent, SOURCE_SUBDIR cpp)"
  cmake -S cpp/examples/downstream -B "$BUILD_ROOT/downstream-source" -G Ninja "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DKVIKIO_SOURCE="$PWD" >"$BUILD_ROOT/downstream-source.log"
  grep -F "KvikIO $(cat VERSION): remote I/O ON, tests OFF, examples OFF, benchmarks OFF" \
    "$BUILD_ROOT/downstream-source.log"
  if grep -E "GTest|CLI11" "$BUILD_ROOT/downstream-source/CMakeCache.txt"; then
    echo "the library-only build looked for a test or benchmark dependency" >&2
    return 1
  fi
  cmake --build "$BUILD_ROOT/downstream-source" -j "$JOBS"
  "$BUILD_ROOT/downstream-source/downstream"
}

# The wheels, as pip users get them: libkvikio (python/libkvikio) and kvikio built by pip with
# build isolation (scikit-build-core and pybind11 from PyPI, pinned by ci/pypi-constraints.txt),
# installed into a fresh virtual environment of Debian's Python with nothing else but NumPy,
# then ci/wheel-check.py imports and reads from outside the checkout; and a CMake project finds
# the library in the libkvikio wheel, as a package that links it would.
wheels_check() {
  step "Wheels: libkvikio and kvikio built by pip, used from a fresh virtual environment"
  local dist=$BUILD_ROOT/wheels env=$BUILD_ROOT/wheel-env
  rm -rf "$dist" "$env" "$BUILD_ROOT/wheel-downstream"
  mkdir -p "$dist"
  local settings=()
  if ((${#launcher[@]} > 0)); then
    # Build folders inside the checkout, so that the compiler cache serves the next run.
    settings=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
      --config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache
      "--config-settings=build-dir=$BUILD_ROOT/wheel-build/{wheel_tag}")
  fi
  PIP_CONSTRAINT=$PWD/ci/pypi-constraints.txt "$VENV/bin/python" -m pip wheel -q \
    --disable-pip-version-check --no-deps -w "$dist" "${settings[@]}" python/libkvikio
  PIP_CONSTRAINT=$PWD/ci/pypi-constraints.txt "$VENV/bin/python" -m pip wheel -q \
    --disable-pip-version-check --no-deps --find-links "$dist" -w "$dist" "${settings[@]}" \
    python/kvikio
  ls -l "$dist"
  /usr/bin/python3 -m venv "$env"
  "$env/bin/python" -m pip install -q --disable-pip-version-check -c ci/pypi-constraints.txt \
    --find-links "$dist" kvikio
  local scratch
  scratch=$(mktemp -d)
  (cd "$scratch" && "$env/bin/python" "$OLDPWD/ci/wheel-check.py" "$scratch")
  rm -rf "$scratch"
  local prefix
  prefix=$("$env/bin/python" -c 'import libkvikio; print(libkvikio.cmake_prefix())')
  cmake -S cpp/examples/downstream -B "$BUILD_ROOT/wheel-downstream" -G Ninja "${launcher[@]}" \
    -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  cmake --build "$BUILD_ROOT/wheel-downstream" -j "$JOBS"
  "$BUILD_ROOT/wheel-downstream/downstream"
}

# The sanitizers' options, for both builds (each runtime reads only its own). ThreadSanitizer
# would otherwise sleep a second at every exit for threads still running to meet the exit's
# destructors; the library's threads are joined by them (the detached stream-ordered workers use
# an object never destroyed), and that second was half of the TSan suite's time.
sanitizer_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:check_initialization_order=1
  LSAN_OPTIONS=suppressions=$PWD/ci/lsan.supp
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:atexit_sleep_ms=0:suppressions=$PWD/ci/tsan.supp)

# Line tables only (-g1): the sanitizers' reports keep their file:line stacks, and a file
# compiles in two thirds of the time of full debug information (test_file_handle.cpp under ASan:
# 24.6 s against 35.8 s).
sanitizer_builds() {
  local asan="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  local optimized="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
  step "AddressSanitizer + UndefinedBehaviorSanitizer build"
  configure_and_build asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "$optimized" \
    -DCMAKE_CXX_FLAGS="$asan" -DCMAKE_EXE_LINKER_FLAGS="$asan" -DCMAKE_SHARED_LINKER_FLAGS="$asan"
  step "ThreadSanitizer build"
  configure_and_build tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo "$optimized" \
    -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread
}

sanitizer_suites() {
  sanitizer_builds
  step "Suite under AddressSanitizer + UndefinedBehaviorSanitizer"
  run_suite asan "${sanitizer_env[@]}"
  step "Suite under ThreadSanitizer"
  run_suite tsan "${sanitizer_env[@]}"
}

# Every libFuzzer target (clang, ASan+UBSan) for FUZZ_SECONDS, JOBS targets at a time (each
# fuzzes on one core, so each still gets its FUZZ_SECONDS of a core); a crash, a sanitizer report
# or an unexpected exception fails, and leaves its input in build/fuzz/crashes. Each target starts
# from its seeds and from the corpus that its earlier runs on this machine kept (in
# FUZZ_CORPUS_DIR, beside the compiler cache, outside any checkout): every run goes on where the
# last stopped instead of searching again from the seeds.
fuzz_targets() {
  local flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  local seconds=${FUZZ_SECONDS:-30}
  local corpus_root=${FUZZ_CORPUS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kvikio/fuzz-corpus}
  step "libFuzzer targets (clang), $seconds s each, $JOBS at a time, corpus kept in $corpus_root"
  cmake -S . -B "$BUILD_ROOT/fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "${launcher[@]}" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DKvikIO_BUILD_FUZZERS=ON \
    -DKvikIO_BUILD_TESTS=OFF -DKvikIO_BUILD_EXAMPLES=OFF -DKvikIO_BUILD_BENCHMARKS=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
  cmake --build "$BUILD_ROOT/fuzz" -j "$JOBS"
  mkdir -p "$BUILD_ROOT/fuzz/crashes"
  local running=() failed=0
  for seeds in cpp/fuzz/corpus/*/; do
    local target
    target=$(basename "$seeds")
    local corpus="$corpus_root/$target"
    mkdir -p "$corpus"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$BUILD_ROOT/fuzz/cpp/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$BUILD_ROOT/fuzz/crashes/$target-" \
      "$corpus" "$seeds" >"$BUILD_ROOT/fuzz/$target.log" 2>&1 &
    running+=("$!:$target")
    if ((${#running[@]} == JOBS)); then
      fuzz_report "${running[0]}" || failed=1
      running=("${running[@]:1}")
    fi
  done
  local entry
  for entry in "${running[@]}"; do fuzz_report "$entry" || failed=1; done
  return "$failed"
}

# fuzz_report <pid>:<target>: waits for that fuzzer and prints the end of its log.
fuzz_report() {
  local pid=${1%%:*} target=${1#*:} status=0
  wait "$pid" || status=$?
  echo "--- $target$([[ $status == 0 ]] || echo " FAILED (exit $status)")"
  tail -n 12 "$BUILD_ROOT/fuzz/$target.log"
  return "$status"
}

# The docs site: Doxygen XML of the public headers, then Sphinx (MyST pages, Breathe for C++,
# autodoc for the Python package staged by the Release build), warnings as errors. Sphinx is
# Debian's, run by the virtual environment's Python, where kvikio.zarr's zarr 3 is importable.
docs_site() {
  step "Docs (Doxygen + Sphinx, warnings as errors)"
  mkdir -p "$BUILD_ROOT/docs"
  sed "s|^QUIET .*|QUIET = YES\nOUTPUT_DIRECTORY = $BUILD_ROOT/docs/doxygen|" docs/Doxyfile \
    >"$BUILD_ROOT/docs/Doxyfile"
  rm -rf "$BUILD_ROOT/docs/doxygen" "$BUILD_ROOT/docs/html"
  doxygen "$BUILD_ROOT/docs/Doxyfile"
  KVIKIO_DOCS_BUILD="$BUILD_ROOT/docs" KVIKIO_PYTHON_PATH="$BUILD_ROOT/release/python" \
    "$VENV/bin/python" -m sphinx -W --keep-going -q -b html docs "$BUILD_ROOT/docs/html"
  echo "docs: $BUILD_ROOT/docs/html/index.html"
}

case "$command" in
  build)
    dependencies
    build_release
    ;;
  test)
    dependencies
    format_check
    build_release
    downstream_check
    wheels_check
    step "Suite (Release)"
    run_suite release
    docs_site
    sanitizer_suites
    fuzz_targets
    ;;
  docs)
    dependencies
    build_for_docs
    docs_site
    ;;
  soak)
    dependencies
    build_release
    sanitizer_builds
    for build in release asan tsan; do
      for backend in posix io_uring; do
        step "Soak: $build, $backend, ${SOAK_SECONDS:-300} s"
        env LD_LIBRARY_PATH="$BUILD_ROOT/$build/cudasim" KVIKIO_LOCAL_IO_BACKEND=$backend \
          KVIKIO_STRESS_SECONDS="${SOAK_SECONDS:-300}" "${sanitizer_env[@]}" \
          "$BUILD_ROOT/$build/cpp/tests/test_stress"
      done
    done
    ;;
  demo)
    # Only what the demo needs: six Debian packages, the library and the example.
    step "Dependencies of the demo (ci/install-deps.sh --demo)"
    ci/install-deps.sh --demo
    step "Demo build (the library and cpp/examples)"
    cmake -S cpp -B "$BUILD_ROOT/demo" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DKvikIO_BUILD_EXAMPLES=ON >/dev/null
    cmake --build "$BUILD_ROOT/demo" -j "$JOBS"
    step "Demo: cpp/examples/basic_io"
    "$BUILD_ROOT/demo/examples/basic_io"
    ;;
  clean)
    rm -rf "$BUILD_ROOT"
    ;;
  help | -h | --help)
    # This file's opening comment: each command and the environment it reads.
    sed -n '3,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
    ;;
  *)
    echo "usage: ./build.sh [build|test|soak|demo|docs|clean|help]" >&2
    exit 2
    ;;
esac
