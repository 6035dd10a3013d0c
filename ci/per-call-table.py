#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The per-call table of ci/per-call.sh's log: one row per (kind, size), each library's CPU
time per read (the range over rounds), context switches, system calls and heap allocations per
read (medians over rounds), and ours against upstream and the plain way (ratios of medians)."""
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(
    r"per_call (?P<lib>\S+)\s+(?P<kind>\S+)\s+size\s+(?P<size>\d+) threads\s+(?P<threads>\d+)"
    r" reads\s+\d+: cpu_us\s+(?P<cpu>[\d.]+) switches\s+(?P<sw>[\d.]+) syscalls\s+(?P<sys>\S+)"
    r" allocs\s+(?P<allocs>[\d.]+) reads_per_s\s+(?P<rate>[\d.]+)"
)


def size_text(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def main(path):
    rows = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        m = LINE.search(line)
        if m:
            key = (m["kind"], int(m["size"]), int(m["threads"]))
            rows[key][m["lib"]].append(m)
    kinds = ["local", "local8", "remote", "remote8"]
    print("| read | callers | library | CPU us per read | switches | syscalls | allocations |"
          " ours / upstream (CPU) | ours / plain (CPU) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in sorted(rows, key=lambda k: (kinds.index(k[0]) if k[0] in kinds else 9, k[1])):
        kind, size, threads = key
        libs = rows[key]
        med = {lib: statistics.median(float(m["cpu"]) for m in ms) for lib, ms in libs.items()}
        for lib in sorted(libs, key=lambda l: (l == "plain", l != "upstream", l)):
            ms = libs[lib]
            cpus = sorted(float(m["cpu"]) for m in ms)
            span = f"{cpus[0]:.1f}" if len(cpus) == 1 else f"{cpus[0]:.1f}–{cpus[-1]:.1f}"
            sys_values = [float(m["sys"]) for m in ms if m["sys"] != "-"]
            sys_text = f"{statistics.median(sys_values):.1f}" if sys_values else "-"
            sw = statistics.median(float(m["sw"]) for m in ms)
            allocs = statistics.median(float(m["allocs"]) for m in ms)
            up = pl = ""
            if lib.startswith("ours"):
                if "upstream" in med and med["upstream"] > 0:
                    up = f"{med[lib] / med['upstream']:.2f}"
                if "plain" in med and med["plain"] > 0:
                    pl = f"{med[lib] / med['plain']:.2f}"
            what = f"{kind} {size_text(size)}"
            print(f"| {what} | {threads} | {lib} | {span} | {sw:.2f} | {sys_text} | {allocs:.1f} |"
                  f" {up} | {pl} |")


if __name__ == "__main__":
    main(sys.argv[1])
