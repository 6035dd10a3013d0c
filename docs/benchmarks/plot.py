#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plots kvikio_bench JSON lines: GB/s against threads, one line per variant.

    python3 docs/benchmarks/plot.py RESULTS.jsonl OUT.png [--op read] [--mem device]
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results")
    parser.add_argument("out")
    parser.add_argument("--op", default="read")
    parser.add_argument("--mem", default="device")
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.results) if line.strip()]
    rows = [r for r in rows if r["op"] == args.op and r["mem"] == args.mem]
    if not rows:
        raise SystemExit(f"no rows with op={args.op} mem={args.mem} in {args.results}")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant in dict.fromkeys(r["variant"] for r in rows):
        points = sorted((r["threads"], r["gbps_median"], r["gbps_min"], r["gbps_max"]) for r in rows
                        if r["variant"] == variant)
        threads = [p[0] for p in points]
        median = [p[1] for p in points]
        err = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
        ax.errorbar(threads, median, yerr=err, marker="o", capsize=3, label=variant)
    first = rows[0]
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({r["threads"] for r in rows}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("threads")
    ax.set_ylabel("GB/s (median, min-max)")
    ax.set_title(f"{args.op} {first['bytes'] / 2**30:.0f} GiB, {args.mem} memory, {first['gpu']}, {first['date'][:10]}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
