#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The rows of a parquet-bench.sh log as a Markdown table: per place (local file, nginx, the
latency server) and memory, each library and mode's median ranges read per second over the
rounds, its ratio to upstream's one-pread-at-a-time (serial) and to upstream's all-in-flight,
and its CPU seconds per second of run (user + system over wall).

Usage: parquet-table.py parquet.log
"""
import re
import statistics
import sys
from collections import defaultdict

RESULT = re.compile(r"^(\w+)/(\S+)/(\w+) parquet \S+ (\w+) c\d+: (\d+) reads/s ([\d.]+) GB/s")
CPU = re.compile(r"^cpu (\w+)/(\S+)/(\w+) (\w+) user ([\d.]+) sys ([\d.]+) wall ([\d.]+)")


def main():
    rates = defaultdict(list)
    gbps = defaultdict(list)
    cpu = defaultdict(list)
    with open(sys.argv[1]) as log:
        for line in log:
            if m := RESULT.match(line):
                lib, variant, place, mem, rate, gb = m.groups()
                rates[(place, mem, lib, variant)].append(float(rate))
                gbps[(place, mem, lib, variant)].append(float(gb))
            elif m := CPU.match(line):
                lib, variant, place, mem, user, system, wall = m.groups()
                cpu[(place, mem, lib, variant)].append((float(user) + float(system)) / float(wall))
    print("| place | memory | library | mode | reads/s | GB/s | / upstream serial "
          "| / upstream inflight | CPU s/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    places = ["local", "nginx", "latency"]
    for key in sorted(rates, key=lambda k: (places.index(k[0]), k[1], k[2] != "upstream", k[3])):
        place, mem, lib, variant = key
        med = statistics.median(rates[key])
        serial = rates.get((place, mem, "upstream", "serial"))
        inflight = rates.get((place, mem, "upstream", "inflight"))
        row = [place, mem, lib, variant, f"{med:.0f}", f"{statistics.median(gbps[key]):.3f}",
               f"**{med / statistics.median(serial):.2f}**" if serial else "-",
               f"{med / statistics.median(inflight):.2f}" if inflight else "-",
               f"{statistics.median(cpu[key]):.2f}" if cpu.get(key) else "-"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
