#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plots and tables from the JSON lines kvikio_bench writes (GB/s against threads, one line per
variant), and the check that docs/benchmarks.md shows exactly the plots of the manifest.

One plot (as before):
    plot.py RESULTS.jsonl OUT.png [--op read] [--mem device] [--where KEY=VALUE] [--variant RE]
A Markdown table (rows: threads, columns: variants, cells: median GB/s, 2 decimals):
    plot.py RESULTS.jsonl --table [--op read] [--mem device] [--where KEY=VALUE] [--value FIELD]
Every plot of the manifest (docs/benchmarks/plots.json), into docs/benchmarks/ or DIR:
    plot.py --all [--out-dir DIR]
The check (a ctest): every manifest plot made into DIR (a temporary folder if none is given;
never the source tree), every png the page names is in the manifest and every manifest png is
shown as an image, each manifest entry's jsonl exists and gives rows (one per variant and
thread count. (Headings and in-page links are the docs build's to check: MyST warns, -W fails.)
    plot.py --check-doc docs/benchmarks/log.md [--out-dir DIR]

Run it with Debian's /usr/bin/python3 (it has matplotlib).
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The manifest is a JSON file beside the script rather than a list in it: it is data that
# changes with each run written up (a png, its jsonl, its filters), so it can be edited and
# reviewed without touching code, and other tools (the docs build, CMake) can read it.
MANIFEST = os.path.join(HERE, "plots.json")


class Error(Exception):
    pass


def load_rows(path):
    """The JSON lines of one kvikio_bench file; blank lines skipped. Lines may lack fields that
    later versions write (driver, gpu, date)."""
    if not os.path.isfile(path):
        raise Error(f"{path}: no such file")
    rows = []
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise Error(f"{path}:{number}: not JSON ({e})") from None
    return rows


def parse_where(items):
    """KEY=VALUE strings to a dict; VALUE read as JSON when it is (numbers, true), else a string."""
    where = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise Error(f"--where {item!r}: expected KEY=VALUE")
        try:
            where[key] = json.loads(value)
        except json.JSONDecodeError:
            where[key] = value
    return where


def select(rows, where, variant_regex=None):
    def match(r, k, v):  # a list: any of its values
        return r.get(k) in v if isinstance(v, list) else r.get(k) == v

    out = [r for r in rows if all(match(r, k, v) for k, v in where.items())]
    if variant_regex:
        out = [r for r in out if re.search(variant_regex, str(r.get("variant", "")))]
    return out


def series(rows, value="gbps_median"):
    """{variant: [(threads, row), ...]} in first-seen variant order; one row per variant and
    thread count, or the filter is ambiguous (say, random and sequential reads in one file)."""
    out = {}
    for r in rows:
        if "threads" not in r or value not in r:
            raise Error(f"a line without threads or {value}: {json.dumps(r)[:120]}")
        points = out.setdefault(r["variant"], {})
        if r["threads"] in points:
            raise Error(f"variant {r['variant']!r} at {r['threads']} threads appears twice: "
                        "add a where filter (bytes, task_size, date, ...)")
        points[r["threads"]] = r
    return {v: sorted(p.items()) for v, p in out.items()}


def _known(values):
    return list(dict.fromkeys(v for v in values if v not in (None, "", "none")))


def describe(rows, all_rows):
    """(gpu, driver or None, date) of the selected lines. Lines of host-memory runs record GPU
    'none' (no GPU was touched): then the GPU of the other lines of the same file is named."""
    gpu = _known(r.get("gpu") for r in rows) or _known(r.get("gpu") for r in all_rows)
    driver = _known(r.get("driver") for r in rows) or _known(r.get("driver") for r in all_rows)
    dates = sorted(r["date"] for r in rows if r.get("date"))
    if not dates:
        date = "date not recorded"
    else:
        first, last = dates[0], dates[-1]
        date = f"{first[:10]} {first[11:16]}"
        if last[:16] != first[:16]:
            same_day = last[:10] == first[:10]
            date += f"–{last[11:16]}" if same_day else f" – {last[:10]} {last[11:16]}"
        date += " UTC"
    return (", ".join(gpu) or "GPU not recorded"), (", ".join(driver) or None), date


def _size(n):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n / 1e6:.1f} MB"


def plot(rows, all_rows, out, title=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    lines = series(rows)
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    try:
        for variant, points in lines.items():
            threads = [t for t, _ in points]
            median = [r["gbps_median"] for _, r in points]
            err = [[r["gbps_median"] - r.get("gbps_min", r["gbps_median"]) for _, r in points],
                   [r.get("gbps_max", r["gbps_median"]) - r["gbps_median"] for _, r in points]]
            ax.errorbar(threads, median, yerr=err, marker="o", capsize=3, label=variant)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r["threads"] for r in rows}))
        ax.get_xaxis().set_major_formatter(ScalarFormatter())
        ax.set_xlabel("threads")
        ax.set_ylabel("GB/s (median, bars min–max)")
        gpu, driver, date = describe(rows, all_rows)
        ops = "/".join(dict.fromkeys(str(r.get("op")) for r in rows))
        mems = "/".join(dict.fromkeys(str(r.get("mem")) for r in rows))
        sizes = "/".join(_size(b) for b in dict.fromkeys(r["bytes"] for r in rows if "bytes" in r))
        what = f"{ops} {sizes}, {mems} memory"
        machine = f"{gpu}, driver {driver}" if driver else gpu
        first = title or what
        second = f"{what}; {machine}; {date}" if title else f"{machine}; {date}"
        ax.set_title(f"{first}\n{second}", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out, dpi=120, metadata={"Software": None})
    finally:
        plt.close(fig)


def table(rows, value="gbps_median"):
    lines = series(rows, value)
    threads = sorted({t for points in lines.values() for t, _ in points})
    out = ["| threads | " + " | ".join(lines) + " |", "|---" * (len(lines) + 1) + "|"]
    for t in threads:
        cells = []
        for points in lines.values():
            row = dict(points).get(t)
            cells.append(f"{row[value]:.2f}" if row else "—")
        out.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def load_manifest(path=MANIFEST):
    with open(path) as f:
        entries = json.load(f)["plots"]
    pngs = [e["png"] for e in entries]
    duplicates = sorted({p for p in pngs if pngs.count(p) > 1})
    if duplicates:
        raise Error(f"{path}: png listed twice: {', '.join(duplicates)}")
    return entries


def make(entry, out_dir):
    """Renders one manifest entry into out_dir; returns the number of lines plotted."""
    if "op" not in entry.get("where", {}) or "mem" not in entry.get("where", {}):
        raise Error(f"{entry['png']}: where must give op and mem")
    path = os.path.join(HERE, entry["jsonl"])
    all_rows = load_rows(path)
    rows = select(all_rows, entry["where"], entry.get("variant_regex"))
    if not rows:
        raise Error(f"{entry['png']}: no lines of {entry['jsonl']} match "
                    f"{json.dumps(entry['where'])}")
    plot(rows, all_rows, os.path.join(out_dir, entry["png"]), entry.get("title"))
    return len(rows)


def check_doc(doc, out_dir):
    errors = []
    entries = load_manifest()
    manifest = {e["png"] for e in entries}
    for entry in entries:
        try:
            make(entry, out_dir)
        except Error as e:
            errors.append(f"{MANIFEST}: {e}")
        except Exception as e:  # a plotting failure names the entry
            errors.append(f"{MANIFEST}: {entry['png']}: {type(e).__name__}: {e}")
    with open(doc) as f:
        text = f.read()
    images = {os.path.basename(p) for p in re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", text)}
    named = {os.path.basename(p) for p in re.findall(r"[\w./{},-]+\.png", text)}
    for png in sorted(named - manifest):
        errors.append(f"{doc}: names {png}, which is not in {MANIFEST}")
    for png in sorted(images):
        if not os.path.isfile(os.path.join(HERE, png)):
            errors.append(f"{doc}: shows {png}, missing from {HERE} (run plot.py --all)")
    for png in sorted(manifest - images):
        errors.append(f"{MANIFEST}: {png} is not shown as an image in {doc}")
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if not errors:
        print(f"{doc}: {len(entries)} plots made into {out_dir}; images and manifest agree")
    return 1 if errors else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="?", help="kvikio_bench JSON lines")
    parser.add_argument("out", nargs="?", help="the png to write")
    parser.add_argument("--op", default="read")
    parser.add_argument("--mem", default="device")
    parser.add_argument("--where", action="append", metavar="KEY=VALUE",
                        help="keep lines whose KEY equals VALUE (repeatable)")
    parser.add_argument("--variant", metavar="REGEX", help="keep variants matching REGEX")
    parser.add_argument("--title", help="first title line of a single plot")
    parser.add_argument("--table", action="store_true", help="print a Markdown table instead")
    parser.add_argument("--value", default="gbps_median", help="the field --table shows")
    parser.add_argument("--all", action="store_true", help="every plot of the manifest")
    parser.add_argument("--check-doc", metavar="DOC", help="check DOC against the manifest")
    parser.add_argument("--out-dir", help="where --all and --check-doc write the plots")
    args = parser.parse_args()
    try:
        if args.check_doc:
            if args.out_dir:
                os.makedirs(args.out_dir, exist_ok=True)
                return check_doc(args.check_doc, args.out_dir)
            tmp = tempfile.mkdtemp(prefix="kvikio-plots-")
            try:
                return check_doc(args.check_doc, tmp)
            finally:
                shutil.rmtree(tmp)
        if args.all:
            out_dir = args.out_dir or HERE
            os.makedirs(out_dir, exist_ok=True)
            for entry in load_manifest():
                n = make(entry, out_dir)
                print(f"{os.path.join(out_dir, entry['png'])}: {n} lines of {entry['jsonl']}")
            return 0
        if not args.results or (not args.table and not args.out):
            parser.error("give RESULTS.jsonl and OUT.png, RESULTS.jsonl --table, --all or "
                         "--check-doc")
        where = {"op": args.op, "mem": args.mem, **parse_where(args.where)}
        all_rows = load_rows(args.results)
        rows = select(all_rows, where, variant_regex=args.variant)
        if not rows:
            raise Error(f"no lines with {json.dumps(where)} in {args.results}")
        if args.table:
            print(table(rows, args.value))
        else:
            plot(rows, all_rows, args.out, args.title)
        return 0
    except Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
