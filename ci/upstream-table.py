#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tables and a plot of a side-by-side run against upstream (ci/upstream-compare.sh).

Usage: upstream-table.py <compare.log> [gpu.txt] [plot.svg]

Reads the harnesses' lines (each round's median of its repetitions) and prints, per kind of
read and thread count, each library's medians by round and ours / upstream (the ratio of the
medians over the rounds), in Markdown. With a third argument, also writes an SVG line plot of
the ratios against the thread count (no plotting package needed).
"""
import re
import statistics
import sys
from collections import defaultdict

PREAD = re.compile(r"^(\S+)\s+(pread|pwrite) (\w+)\s+threads\s+(\d+) task\s+\d+ MiB: median\s+([\d.]+)")
REMOTE = re.compile(r"^(\S+)\s+remote (\w+)\s+threads\s+(\d+)(?: task\s+\d+ MiB: median\s+([\d.]+)|: error: (.*))")
DEFAULTS = re.compile(r"^(\S+)\s+defaults (\w+)\s*: median\s+([\d.]+)")
ASYNC = re.compile(r"^(\S+)\s+read_async (\d+) x (\d+)( \+ memset)?: median\s+([\d.]+).* after ([\d.]+) us"
                   r"(?: per call, first call ([\d.]+) us)?")
DEVICES = re.compile(r"^(\S+)\s+devices (\S+) threads\s+(\d+): alone\s+([\d.]+) GB/s, at once\s+([\d.]+)")
CPU = re.compile(r"^cpu (\w+) user ([\d.]+) sys ([\d.]+) wall ([\d.]+)")
TRANSPORT = {"EASY_THREADPOOL": "remote easy", "MULTI_POLL": "remote multi-poll"}


def parse(path):
    # results[(kind, mem)][lib][threads] -> [median per round]; errors likewise
    results = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    errors = defaultdict(set)
    cpu = defaultdict(list)
    command = None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("+ "):
            command = line
            continue
        if m := PREAD.match(line):
            lib, verb, mem, t, med = m.groups()
            results[(verb, mem)][lib][int(t)].append(float(med))
        elif m := DEVICES.match(line):
            lib, names, t, alone, together = m.groups()
            results[("devices", names)][lib][int(t)].append((float(alone), float(together)))
        elif m := ASYNC.match(line):
            lib, size, count, memset, med, held, first = m.groups()
            what = f"{int(size) >> 10} KiB x {count}{' + memset' if memset else ''}"
            results[("read_async", what)][lib][0].append(
                (float(med), float(held), float(first) if first else None))
        elif m := REMOTE.match(line):
            label, mem, t, med, err = m.groups()
            lib, _, backend = label.partition("/")
            kind = TRANSPORT.get(backend, "remote " + backend)
            if err is not None:
                errors[(kind, mem, lib)].add(err.strip())
            else:
                results[(kind, mem)][lib][int(t)].append(float(med))
        elif m := DEFAULTS.match(line):
            lib, mem, med = m.groups()
            results[("defaults", mem)][lib][0].append(float(med))
        elif (m := CPU.match(line)) and command:
            lib, user, sys_, wall = m.groups()
            what = command.split(": ", 1)[1].split()[0].rsplit("/", 1)[-1]
            cpu[(lib, what)].append((float(user) + float(sys_), float(wall)))
    return results, errors, cpu


def ratio(ours, upstream):
    if not ours or not upstream:
        return None
    return statistics.median(ours) / statistics.median(upstream)


def table(results, errors):
    out = []
    ratios = {}
    for (kind, mem), libs in sorted(results.items()):
        if kind in ("defaults", "read_async", "devices"):
            continue
        # "ours" and its variants ("ours-posix": another setting of ours), each against upstream
        variants = ["ours"] + sorted(lib for lib in libs if lib not in ("upstream", "ours"))
        threads = sorted(set().union(*(set(libs[lib]) for lib in ["upstream"] + variants)))
        out.append(f"\n**{kind} → {mem}** (GB/s, medians by round)\n")
        out.append("| | " + " | ".join(str(t) for t in threads) + " |")
        out.append("|---|" + "---|" * len(threads))
        for lib in ["upstream"] + variants:
            cells = [", ".join(f"{v:.2f}" for v in libs[lib].get(t, [])) or "–" for t in threads]
            out.append(f"| {lib} | " + " | ".join(cells) + " |")
        for lib in variants:
            cells = []
            for t in threads:
                r = ratio(libs[lib].get(t), libs["upstream"].get(t))
                if lib == "ours":
                    ratios.setdefault((kind, mem), {})[t] = r
                cells.append("–" if r is None else f"**{r:.2f}**")
            out.append(f"| {lib} / upstream | " + " | ".join(cells) + " |")
        for lib in ("upstream", "ours"):
            for err in sorted(errors.get((kind, mem, lib), ())):
                out.append(f"\n{lib}: error: {err}")
    for (kind, mem, lib), errs in sorted(errors.items()):
        if (kind, mem) not in results:
            out.append(f"\n**{kind} → {mem}**: {lib}: error: {'; '.join(sorted(errs))}")
    defaults = {mem: libs for (kind, mem), libs in results.items() if kind == "defaults"}
    if defaults:
        out.append("\n**no settings at all** (each library's defaults; GB/s, medians by round)\n")
        out.append("| | upstream | ours | ours / upstream |")
        out.append("|---|---|---|---|")
        for mem, libs in sorted(defaults.items()):
            up, ours = libs["upstream"].get(0, []), libs["ours"].get(0, [])
            r = ratio(ours, up)
            out.append(f"| {mem} | {', '.join(f'{v:.2f}' for v in up)} | "
                       f"{', '.join(f'{v:.2f}' for v in ours)} | "
                       f"{'–' if r is None else f'**{r:.2f}**'} |")
    several = {names: libs for (kind, names), libs in results.items() if kind == "devices"}
    for names, libs in sorted(several.items()):
        out.append(f"\n**GPUs {names} at once from one process** (GB/s in total by round; the "
                   "first GPU alone in brackets)\n")
        threads = sorted(set().union(*(set(v) for v in libs.values())))
        out.append("| | " + " | ".join(str(t) for t in threads) + " |")
        out.append("|---|" + "---|" * len(threads))
        for lib in sorted(libs, key=lambda name: (name != "upstream", name)):
            cells = [", ".join(f"{b:.2f} ({a:.2f})" for a, b in libs[lib].get(t, [])) or "–"
                     for t in threads]
            out.append(f"| {lib} | " + " | ".join(cells) + " |")
        for lib in sorted(lib for lib in libs if lib != "upstream"):
            cells = []
            for t in threads:
                r = ratio([b for _, b in libs[lib].get(t, [])],
                          [b for _, b in libs.get("upstream", {}).get(t, [])])
                cells.append("–" if r is None else f"**{r:.2f}**")
            out.append(f"| {lib} / upstream | " + " | ".join(cells) + " |")
    stream = {what: libs for (kind, what), libs in results.items() if kind == "read_async"}
    if stream:
        out.append("\n**read_async** on one stream (GB/s by round; the caller back after, us per "
                   "call, median; the process's first call, us)\n")
        out.append("| reads | upstream GB/s | ours GB/s | ours / upstream | upstream us | ours us "
                   "| upstream first us | ours first us |")
        out.append("|---|---|---|---|---|---|---|---|")
        firsts = lambda runs: ", ".join("–" if f is None else f"{f:.0f}" for _, _, f in runs)
        for what, libs in sorted(stream.items()):
            up, ours = libs["upstream"].get(0, []), libs["ours"].get(0, [])
            r = ratio([g for g, _, _ in ours], [g for g, _, _ in up])
            out.append(f"| {what} | {', '.join(f'{g:.2f}' for g, _, _ in up)} | "
                       f"{', '.join(f'{g:.2f}' for g, _, _ in ours)} | "
                       f"{'–' if r is None else f'**{r:.2f}**'} | "
                       f"{', '.join(f'{h:.0f}' for _, h, _ in up)} | "
                       f"{', '.join(f'{h:.1f}' for _, h, _ in ours)} | {firsts(up)} | "
                       f"{firsts(ours)} |")
    return "\n".join(out), ratios


def svg(ratios, path):
    width, height, left, bottom, top, right = 640, 400, 60, 50, 20, 190
    series = [(f"{kind} → {mem}", pts) for (kind, mem), pts in sorted(ratios.items())]
    values = [r for _, pts in series for r in pts.values() if r is not None] + [1.0]
    lo, hi = min(0.5, min(values)), max(1.5, max(values))
    xs = sorted({t for _, pts in series for t in pts})
    def x(t):
        return left + (width - left - right) * (xs.index(t) / max(1, len(xs) - 1))
    def y(r):
        return top + (height - top - bottom) * (1 - (r - lo) / (hi - lo))
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<line x1="{left}" x2="{width - right}" y1="{y(1):.1f}" y2="{y(1):.1f}" '
             'stroke="#888" stroke-dasharray="4 3"/>',
             f'<text x="{width - right + 4}" y="{y(1) + 4:.1f}" fill="#888">upstream</text>']
    for t in xs:
        parts.append(f'<text x="{x(t):.1f}" y="{height - bottom + 18}" text-anchor="middle">{t}</text>')
    parts.append(f'<text x="{(left + width - right) / 2:.1f}" y="{height - 12}" '
                 'text-anchor="middle">threads</text>')
    step = 0.25
    tick = step * round(lo / step)
    while tick <= hi + 1e-9:
        parts.append(f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
        tick += step
    parts.append(f'<text x="14" y="{top + 10}" >ours / upstream</text>')
    for i, (name, pts) in enumerate(series):
        color = colors[i % len(colors)]
        coords = [(x(t), y(r)) for t, r in sorted(pts.items()) if r is not None]
        if coords:
            d = " ".join(f"{a:.1f},{b:.1f}" for a, b in coords)
            parts.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts.append(f'<text x="{width - right + 4}" y="{top + 30 + 18 * i}" fill="{color}">{name}</text>')
    parts.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    results, errors, cpu = parse(argv[1])
    if len(argv) > 2 and argv[2]:
        print(open(argv[2], encoding="utf-8").read().strip().replace("\n", "; "))
    text, ratios = table(results, errors)
    print(text)
    if cpu:
        print("\n**CPU seconds (user + sys) per harness run, by round**\n")
        for (lib, what), runs in sorted(cpu.items()):
            print(f"- {lib} {what}: " + ", ".join(f"{c:.1f} s cpu / {w:.1f} s wall" for c, w in runs))
    if len(argv) > 3:
        svg(ratios, argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
