#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The code examples of the docs, run as printed (ctest docs.examples).

A fenced block whose info string is `python run` or `cpp run` is executed: Python with the
Python given (`--python`, the package on its path), C++ compiled against the library
(`--cxx`, `--include`, `--lib`) and run. A block marked `python gpu` or `cpp gpu` needs device
memory: it is parsed (Python) or compiled (C++, with the CUDA runtime) on every run, and
executed only where a GPU is there (CuPy imports and sees a device); otherwise the report says
it was not run and why. Each block runs alone, in a fresh folder, with a time limit; a block
that fails, prints to stderr a traceback, or exits non-zero fails the test, named by page and
line. Blocks without `run` or `gpu` are fragments and are not touched.

Usage: doc-examples.py --docs DIR --python PY --cxx CXX --include DIR [--include DIR...]
       --lib DIR [--cuda DIR] [--pages a.md,b.md]
"""

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w+)\s+(run|gpu)\s*$")


def blocks(path):
    """(line, language, kind, code) of each marked block of a Markdown page."""
    out = []
    lines = open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start = i + 1
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f"{path}:{start}: the block is not closed")
        out.append((start, m.group(1), m.group(2), "\n".join(body) + "\n"))
        i += 1
    return out


def have_gpu(python, env):
    probe = "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0"
    return subprocess.run([python, "-c", probe], env=env, capture_output=True).returncode == 0


def run(cmd, cwd, env, timeout=120):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"did not end within {timeout} s"
    return p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cuda", default="/usr/local/cuda")
    ap.add_argument("--pages", default="quickstart.md,python.md")
    args = ap.parse_args()
    # The blocks run in folders of their own: paths given relative to here are made absolute.
    absolute = lambda p: os.path.abspath(p) if os.sep in p else p  # noqa: E731
    args.python, args.cxx, args.lib = absolute(args.python), absolute(args.cxx), absolute(args.lib)
    args.include = [os.path.abspath(d) for d in args.include]

    env = dict(os.environ)
    gpu = have_gpu(args.python, env)
    failures, ran, compiled_only = [], 0, 0
    for page in args.pages.split(","):
        path = os.path.join(args.docs, page)
        found = blocks(path)
        if not found:
            failures.append(f"{page}: no example marked run or gpu")
        for line, language, kind, code in found:
            where = f"{page}:{line} ({language} {kind})"
            execute = kind == "run" or gpu
            with tempfile.TemporaryDirectory() as work:
                if language == "python":
                    source = os.path.join(work, "example.py")
                    with open(source, "w") as f:
                        f.write(code)
                    try:
                        ast.parse(code, filename=where)
                    except SyntaxError as e:
                        failures.append(f"{where}: {e}")
                        continue
                    if not execute:
                        compiled_only += 1
                        continue
                    ok, out = run([args.python, source], work, env)
                elif language == "cpp":
                    source = os.path.join(work, "example.cpp")
                    with open(source, "w") as f:
                        f.write(code)
                    binary = os.path.join(work, "example")
                    cmd = [args.cxx, "-std=c++20", source, "-o", binary]
                    cmd += [f"-I{d}" for d in args.include] + [f"-I{args.cuda}/include"]
                    cmd += [f"-L{args.lib}", f"-Wl,-rpath,{args.lib}", "-lkvikio"]
                    if kind == "gpu":
                        cmd += [f"-L{args.cuda}/lib64", "-lcudart"]
                    ok, out = run(cmd, work, env, timeout=300)
                    if not ok:
                        failures.append(f"{where}: does not compile:\n{out}")
                        continue
                    if not execute:
                        compiled_only += 1
                        continue
                    ok, out = run([binary], work, env)
                else:
                    failures.append(f"{where}: no runner for {language}")
                    continue
                ran += 1
                if not ok:
                    failures.append(f"{where}: failed:\n{out}")
                else:
                    print(f"ran {where}")
    for f in failures:
        print("FAILED", f)
    why = "" if gpu else " (no GPU with CuPy here: the gpu blocks were parsed or compiled only)"
    print(f"doc examples: {ran} ran, {compiled_only} not run{why}, {len(failures)} failed")
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
