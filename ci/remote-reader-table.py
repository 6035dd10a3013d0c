#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The rows of a remote-reader-bench.sh log as a Markdown table: per memory, size and variant,
each library's median reads/s over the rounds, ours against upstream (against "before" when the
log has it, and against the plain way where it ran), and each library's CPU seconds per GB read
(the process's user + system time, start-up and checks included, over the bytes its reads moved)
and peak resident memory (each size runs in its own process).

Usage: remote-reader-table.py remote-reader.log
"""
import re
import statistics
import sys
from collections import defaultdict

RANDOM = re.compile(r"^(\w+)/(\S+) random (\S+) (\d+) c\d+x\d+ pool\d+: (\d+) reads/s ([\d.]+) GB/s")
CPU = re.compile(r"^cpu (\w+)/(\S+) (\S+) (\d+) user ([\d.]+) sys ([\d.]+) wall ([\d.]+)")
RSS = re.compile(r"^(\w+)/(\S+) peak-rss (\S+) pool\d+: (\d+) MiB")
SECONDS = 2.0  # READER_SECONDS: the measured part of each run


def size_text(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def main():
    rates = defaultdict(list)
    cpu = defaultdict(list)
    last_rate = {}
    last_size = {}
    rss = defaultdict(list)
    with open(sys.argv[1]) as log:
        for line in log:
            if m := RANDOM.match(line):
                lib, variant, mem, size, rate, _ = m.groups()
                key = (mem, int(size), variant)
                rates[(lib, key)].append(float(rate))
                last_rate[(lib, key)] = float(rate)
                last_size[(lib, variant, mem)] = int(size)
            elif m := RSS.match(line):
                lib, variant, mem, mib = m.groups()
                if (lib, variant, mem) in last_size:
                    rss[(lib, (mem, last_size[(lib, variant, mem)], variant))].append(float(mib))
            elif m := CPU.match(line):
                lib, variant, mem, size, user, system, _ = m.groups()
                key = (mem, int(size), variant)
                rate = last_rate.pop((lib, key), None)
                if rate:
                    gigabytes = rate * SECONDS * int(size) / 1e9
                    cpu[(lib, key)].append((float(user) + float(system)) / gigabytes)
    libs = [lib for lib in ("upstream", "before", "ours", "plain")
            if any(k[0] == lib for k in rates)]
    keys = sorted({k for (_, k) in rates}, key=lambda k: (k[0], k[1], k[2]))
    head = ["memory", "size", "variant"]
    head += [f"{lib} reads/s" for lib in libs] + ["ours GB/s", "ours / upstream"]
    if "before" in libs:
        head.append("ours / before")
    if "plain" in libs:
        head.append("ours / plain")
    head += [f"{lib} CPU s/GB" for lib in libs]
    head += [f"{lib} peak RSS MiB" for lib in libs]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key in keys:
        med = {lib: statistics.median(rates[(lib, key)]) for lib in libs if rates.get((lib, key))}
        if "ours" not in med:
            continue
        row = [key[0], size_text(key[1]), key[2]]
        row += [f"{med[lib]:.0f}" if lib in med else "-" for lib in libs]
        row.append(f"{med['ours'] * key[1] / 1e9:.2f}")
        row.append(f"**{med['ours'] / med['upstream']:.2f}**" if "upstream" in med else "-")
        if "before" in libs:
            row.append(f"{med['ours'] / med['before']:.2f}" if "before" in med else "-")
        if "plain" in libs:
            row.append(f"**{med['ours'] / med['plain']:.2f}**" if "plain" in med else "-")
        for lib in libs:
            c = cpu.get((lib, key))
            row.append(f"{statistics.median(c):.3f}" if c else "-")
        for lib in libs:
            r = rss.get((lib, key))
            row.append(f"{statistics.median(r):.0f}" if r else "-")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
