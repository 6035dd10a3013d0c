# SPDX-License-Identifier: Apache-2.0
"""Tests per module of a pytest JUnit XML file: passed, failed (failures and errors), skipped.

Usage: python3 ci/junit-summary.py RESULTS.xml
"""
import collections
import sys
import xml.etree.ElementTree as ET


def main(path):
    counts = collections.defaultdict(lambda: [0, 0, 0])
    for case in ET.parse(path).iter("testcase"):
        # A collection error has no class name; its name is the module's path.
        module = (case.get("classname") or case.get("name", "?")).split(".")[0].split("/")[-1]
        kinds = {child.tag for child in case}
        slot = 1 if kinds & {"failure", "error"} else 2 if "skipped" in kinds else 0
        counts[module][slot] += 1
    print(f"{'module':32} passed failed skipped")
    for module, (p, f, s) in sorted(counts.items()):
        print(f"{module:32} {p:6} {f:6} {s:7}")
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    print(f"{'all (' + str(len(counts)) + ' modules)':32} {total[0]:6} {total[1]:6} {total[2]:7}")


if __name__ == "__main__":
    main(sys.argv[1])
