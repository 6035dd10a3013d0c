#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The reader's workload rows of an upstream-compare.sh log as Markdown tables: per point the
median over the rounds of each library, and ours / upstream (throughput: higher is better;
latency and memory: lower is better), and ours / before where the log has an earlier build of
ours labelled "before"; and the plain way (no library) beside them, where the log
has it: the reads/s of N threads of pread(2) (plus a copy per read into device memory) against
each library's pool of 8, and one thread's synchronous plain reads.

Usage: reader-table.py compare.log
"""
import re
import statistics
import sys
from collections import defaultdict

RANDOM = re.compile(r"^(\S+) random (\S+) (\d+) c(\d+)x(\d+) pool(\d+): (\d+) reads/s ([\d.]+) GB/s")
LATENCY = re.compile(r"^(\S+) latency (\S+) (\d+): p50 ([\d.]+) us p99 ([\d.]+) us")
PLAIN = re.compile(r"^plain random (\S+) (\d+) threads(\d+): (\d+) reads/s ([\d.]+) GB/s")
RSS = re.compile(r"^(\S+) peak-rss (\S+) pool(\d+): (\d+) MiB")


def size_text(n):
    n = int(n)
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def paired(table, order=None):
    """(key, upstream's values, ours) for every key both libraries have, in `order`."""
    for key in sorted({k for (_, k) in table}, key=order):
        up, ours = table.get(("upstream", key)), table.get(("ours", key))
        if up and ours:
            yield key, up, ours


def main():
    rates, gbps, p50, p99, rss, plain = (defaultdict(list) for _ in range(6))
    with open(sys.argv[1]) as log:
        for line in log:
            if m := PLAIN.match(line):
                mem, size, threads, r, g = m.groups()
                plain[(mem, int(size), int(threads))].append((float(r), float(g)))
            elif m := RANDOM.match(line):
                lib, mem, size, c, q, pool, r, g = m.groups()
                key = (mem, int(size), f"{c} x {q}", "pool 8, compat ON" if pool != "0" else "no settings")
                rates[(lib, key)].append(float(r))
                gbps[(lib, key)].append(float(g))
            elif m := LATENCY.match(line):
                lib, mem, size, a, b = m.groups()
                p50[(lib, (mem, int(size)))].append(float(a))
                p99[(lib, (mem, int(size)))].append(float(b))
            elif m := RSS.match(line):
                lib, mem, pool, mib = m.groups()
                rss[(lib, (mem, "no settings" if pool == "0" else "pool 8"))].append(float(mib))
    med = statistics.median
    # A third library, "before" (an earlier build of ours), where the log has one.
    before = any(lib == "before" for (lib, _) in rates)
    extra_head = " before reads/s | ours / before |" if before else ""
    print("| memory | size | callers x in flight | settings | upstream reads/s | ours reads/s | ours GB/s | ours / upstream |" + extra_head)
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if before else ""))
    for key, up, ours in paired(rates, lambda k: (k[3], k[0], k[1])):
        extra = ""
        if before:
            b = rates.get(("before", key))
            extra = f" {med(b):.0f} | {med(ours) / med(b):.2f} |" if b else " - | - |"
        print(f"| {key[0]} | {size_text(key[1])} | {key[2]} | {key[3]} | {med(up):.0f} | {med(ours):.0f} | "
              f"{med(gbps[('ours', key)]):.2f} | **{med(ours) / med(up):.2f}** |" + extra)
    print()
    if plain:
        print("| memory | size | plain threads | plain reads/s | plain GB/s | upstream, pool 8, 4 x 8 | ours, pool 8, 4 x 8 | plain / upstream |")
        print("|---|---|---|---|---|---|---|---|")
        for (mem, size, threads), runs in sorted(plain.items()):
            key = (mem, size, "4 x 8", "pool 8, compat ON")
            up, ours = rates.get(("upstream", key)), rates.get(("ours", key))
            r = med(x for x, _ in runs)
            ratio = f"**{r / med(up):.2f}**" if up else "-"
            print(f"| {mem} | {size_text(size)} | {threads} | {r:.0f} | {med(g for _, g in runs):.2f} | "
                  f"{med(up) if up else 0:.0f} | {med(ours) if ours else 0:.0f} | {ratio} |")
        print()
    print("| synchronous read | upstream p50 (us) | ours p50 (us) | ours / upstream | upstream p99 | ours p99 | plain p50 |")
    print("|---|---|---|---|---|---|---|")
    for key, up, ours in paired(p50):
        where = "host memory by pread(2)" if key[0] == "bare-pread" else key[0] + " memory"
        bare = p50.get(("plain", key))
        print(f"| {size_text(key[1])} into {where} | {med(up):.1f} | {med(ours):.1f} | **{med(ours) / med(up):.2f}** | "
              f"{med(p99[('upstream', key)]):.1f} | {med(p99[('ours', key)]):.1f} | "
              f"{f'{med(bare):.1f}' if bare else '-'} |")
    print()
    print("| peak RSS of the program | upstream (MiB) | ours (MiB) |")
    print("|---|---|---|")
    for key, up, ours in paired(rss):
        print(f"| {key[0]}, {key[1]} | {med(up):.0f} | {med(ours):.0f} |")


if __name__ == "__main__":
    main()
