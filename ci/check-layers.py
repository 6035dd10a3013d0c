#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layering check of ./build.sh test: every #include of cpp/src and cpp/include must point
to the including file's own layer or to a layer below it; one between sibling layers (the same
level) or upward fails.

The layers, their order and which folders of cpp/src and headers of cpp/include/kvikio belong
to each are read from docs/design.md, the table after the marker line
"<!-- layers: read by ci/check-layers.py -->" (columns: level, folders, headers, description);
the includes allowed by exception, each with its reason, from the table after
"<!-- layer exceptions: read by ci/check-layers.py -->" (columns: file, include, why). An
exception that no longer matches an include is an error too, so the list only shrinks. A
source whose first include is a kvikio header (this project's convention: the header it
implements comes first) must be of that header's layer; sources that begin with a standard or
local header are not held to this.

Usage: ci/check-layers.py [--root DIR]   (DIR: the repository, default this script's parent)
"""

import argparse
import fnmatch
import pathlib
import re
import sys

LAYERS_MARKER = "<!-- layers: read by ci/check-layers.py -->"
EXCEPTIONS_MARKER = "<!-- layer exceptions: read by ci/check-layers.py -->"
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
TICKED = re.compile(r"`([^`]+)`")


class Layer:
    def __init__(self, index, level, folders, headers):
        self.index = index
        self.level = level
        self.folders = folders
        self.headers = headers

    @property
    def name(self):
        return self.folders[0]


def table_after(text, marker, path, may_be_empty=False):
    """The rows (lists of cells) of the Markdown table that follows `marker`, without its
    heading; a table of the heading alone is an error unless `may_be_empty`."""
    at = text.find(marker)
    if at < 0:
        sys.exit(f"{path}: no line {marker!r}")
    rows = []
    for line in text[at + len(marker) :].lstrip("\n").splitlines():
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue  # the separator row
        rows.append(cells)
    if not rows or (len(rows) < 2 and not may_be_empty):
        sys.exit(f"{path}: the table after {marker!r} has no rows")
    return rows[1:]  # without the heading


def read_design(path):
    text = path.read_text()
    layers = []
    for i, cells in enumerate(table_after(text, LAYERS_MARKER, path)):
        if len(cells) < 3 or not cells[0].isdigit():
            sys.exit(f"{path}: layer row {i + 1}: expected | level | folders | headers | ...")
        folders = [f.rstrip("/") for f in TICKED.findall(cells[1])]
        if not folders:
            sys.exit(f"{path}: layer row {i + 1} names no folder")
        layers.append(Layer(i, int(cells[0]), folders, TICKED.findall(cells[2])))
    exceptions = {}
    for cells in table_after(text, EXCEPTIONS_MARKER, path, may_be_empty=True):
        ticked = [TICKED.findall(c) for c in cells[:2]]
        if len(cells) < 3 or len(ticked[0]) != 1 or len(ticked[1]) != 1 or not cells[2]:
            sys.exit(f"{path}: exception row {cells}: expected | `file` | `include` | why |")
        exceptions[(ticked[0][0], ticked[1][0])] = False  # not matched yet
    return layers, exceptions


def layer_of_source(rel, layers):
    """The layer of cpp/src/<rel>: the one whose folder is the longest prefix of it."""
    best = None
    for layer in layers:
        for folder in layer.folders:
            if rel.startswith(folder + "/") and (best is None or len(folder) > len(best[1])):
                best = (layer, folder)
    return best[0] if best else None


def layer_of_header(rel, layers):
    """The layer of cpp/include/kvikio/<rel>: an exact name first, then a pattern."""
    for exact in (True, False):
        for layer in layers:
            for pattern in layer.headers:
                if (rel == pattern) if exact else fnmatch.fnmatchcase(rel, pattern):
                    return layer
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    root = parser.parse_args().root.resolve()
    design = root / "docs" / "design.md"
    layers, exceptions = read_design(design)
    src, inc = root / "cpp" / "src", root / "cpp" / "include" / "kvikio"
    errors = []

    files = []  # (path shown, its layer, its directory)
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src).as_posix()
        if path.suffix not in (".cpp", ".hpp"):
            errors.append(f"cpp/src/{rel}: not a .cpp or .hpp, which this check reads")
            continue
        layer = layer_of_source(rel, layers)
        if layer is None:
            errors.append(f"cpp/src/{rel}: in no layer of {design.name} (add its folder)")
            continue
        files.append((path, layer))
    for path in sorted(p for p in inc.rglob("*") if p.is_file()):
        if not path.name.endswith((".hpp", ".hpp.in")):
            errors.append(f"{path.relative_to(root).as_posix()}: not a .hpp, which this check reads")
            continue
        rel = path.relative_to(inc).as_posix().removesuffix(".in")
        layer = layer_of_header(rel, layers)
        if layer is None:
            errors.append(f"cpp/include/kvikio/{rel}: in no layer of {design.name} (add it)")
            continue
        files.append((path, layer))

    for path, layer in files:
        shown = path.relative_to(root).as_posix()
        first = True
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(2)
            # A source's first include is the header it implements: it must be of its layer,
            # so that a header cannot be listed in a lower layer than its code.
            own, first = first and path.suffix == ".cpp" and name.startswith("kvikio/"), False
            if own and layer_of_header(name.removeprefix("kvikio/"), layers) not in (layer, None):
                errors.append(f"{shown}:{number}: implements {name}, which {design.name} puts in "
                              f"{layer_of_header(name.removeprefix('kvikio/'), layers).name}/, "
                              f"not {layer.name}/")
            if name.startswith("kvikio/"):
                target = layer_of_header(name.removeprefix("kvikio/"), layers)
            elif m.group(1) == '"' and ((path.parent / name).exists() or (src / name).exists()):
                # beside the including file, or a library header named from cpp/src
                local = ((path.parent / name) if (path.parent / name).exists()
                         else (src / name)).resolve()
                target = layer_of_source(local.relative_to(src).as_posix(), layers) \
                    if local.is_relative_to(src) else None
            else:
                continue  # the standard library, CUDA, libcurl, liburing, ...
            if target is None:
                errors.append(f"{shown}:{number}: includes {name}, which is in no layer")
                continue
            if target is layer or target.level < layer.level:
                continue
            if (shown, name) in exceptions:
                exceptions[(shown, name)] = True
                continue
            how = "a sibling layer" if target.level == layer.level else "a higher layer"
            errors.append(f"{shown}:{number}: {layer.name}/ (level {layer.level}) includes "
                          f"{name} of {how}, {target.name}/ (level {target.level})")
    for (shown, name), used in exceptions.items():
        if not used:
            errors.append(f"{design.name}: the exception for {shown} including {name} matches "
                          "no wrong-way include: remove it")
    for e in errors:
        print(e)
    if errors:
        print(f"layering: {len(errors)} error(s); the layers are in docs/design.md")
        return 1
    print(f"layering: {len(files)} files, every include goes down or stays in its layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
