#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The code examples of the docs, checked as printed (ctest docs.examples).

Every Python and C++ block of the pages says how it is checked, after its language on the fence
line (a block that does not fails the check): `run` blocks are executed, Python with the Python
given (`--python`, the package on its path), C++ compiled against the library (`--cxx`,
`--include`, `--lib`) and run; `gpu` blocks need device memory: parsed (Python) or compiled (C++,
with the CUDA runtime) on every run and executed where a GPU is there (CuPy imports and sees a
device); `url` blocks are programs that read the URL of their first argument: run with the URL
of a local HTTP server (kvikio.utils.LocalHttpServer, range requests answered) of a file of
random bytes; `compile` blocks are compiled or parsed only. The report says how
many were not run and why. Each block runs alone, in a fresh folder, with a time limit; one that
fails or exits non-zero fails the test, named by page and line. Other blocks (commands, CMake)
are not examples.

Usage: doc-examples.py --docs DIR --python PY --cxx CXX --include DIR [--include DIR...]
       --lib DIR [--cuda DIR] [--pages a.md,b.md (default: every page)]
"""

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w+)(?:\s+(run|url|gpu|compile))?\s*$")
# The languages of examples: every block of these must say how it is checked.
CHECKED = ("python", "cpp")


def blocks(path):
    """(line, language, kind, code) of each Python and C++ block of a Markdown page; a block of
    those languages that says neither `run`, `gpu` nor `compile` is an error."""
    out, unmarked = [], []
    lines = open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        m = FENCE.match(lines[i])
        start = i + 1
        i += 1
        body = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f"{path}:{start}: the block is not closed")
        i += 1
        if not m or m.group(1) not in CHECKED:
            continue  # commands, CMake, directives: not examples
        if m.group(2) is None:
            unmarked.append(f"{os.path.basename(path)}:{start}: a {m.group(1)} block says "
                            "neither run, gpu nor compile")
            continue
        out.append((start, m.group(1), m.group(2), "\n".join(body) + "\n"))
    return out, unmarked


def have_gpu(python, env):
    probe = "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0"
    return subprocess.run([python, "-c", probe], env=env, capture_output=True).returncode == 0


def run(cmd, cwd, env, timeout=120):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"did not end within {timeout} s"
    return p.returncode == 0, (p.stdout + p.stderr)[-3000:]


# Serves a folder with range requests until its stdin closes; prints the URL of "object.bin".
SERVE = """
import sys
from kvikio.utils import LocalHttpServer
with LocalHttpServer(sys.argv[1], max_lifetime=300) as server:
    print(server.url + "/object.bin", flush=True)
    sys.stdin.read()
"""


def run_with_url(python, cmd, work, env):
    """`cmd` with the URL of a served file of random bytes as its last argument."""
    served = os.path.join(work, "served")
    os.makedirs(served)
    with open(os.path.join(served, "object.bin"), "wb") as f:
        f.write(os.urandom(3 << 20))
    server = subprocess.Popen([python, "-c", SERVE, served], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        url = server.stdout.readline().strip()
        if not url:
            return False, "the example's server did not start"
        return run(cmd + [url], work, env)
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cuda", default="/usr/local/cuda")
    ap.add_argument("--pages", default="", help="pages of --docs, a,b.md (default: all)")
    args = ap.parse_args()
    # The blocks run in folders of their own: paths given relative to here are made absolute.
    absolute = lambda p: os.path.abspath(p) if os.sep in p else p  # noqa: E731
    args.python, args.cxx, args.lib = absolute(args.python), absolute(args.cxx), absolute(args.lib)
    args.include = [os.path.abspath(d) for d in args.include]

    env = dict(os.environ)
    gpu = have_gpu(args.python, env)
    failures, ran, compiled_only = [], 0, 0
    pages = args.pages.split(",") if args.pages else sorted(
        p for p in os.listdir(args.docs) if p.endswith(".md"))
    for page in pages:
        found, unmarked = blocks(os.path.join(args.docs, page))
        failures += unmarked
        for line, language, kind, code in found:
            where = f"{page}:{line} ({language} {kind})"
            execute = kind in ("run", "url") or (kind == "gpu" and gpu)
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
                    if kind in ("compile", "url"):
                        cmd += ["-lcurl"]
                    ok, out = run(cmd, work, env, timeout=300)
                    if not ok:
                        failures.append(f"{where}: does not compile:\n{out}")
                        continue
                    if not execute:
                        compiled_only += 1
                        continue
                    if kind == "url":
                        ok, out = run_with_url(args.python, [binary], work, env)
                    else:
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
    why = " (compile blocks: compiled only" + (
        ")" if gpu else "; no GPU with CuPy here: the gpu blocks too)")
    print(f"doc examples: {ran} ran, {compiled_only} not run{why}, {len(failures)} failed")
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
