# SPDX-License-Identifier: Apache-2.0
"""Sphinx configuration: the pages in docs/ (Markdown, through MyST), the C++ API from the
Doxygen XML of cpp/include (through Breathe) and the Python API from the package's docstrings.
./build.sh docs runs Doxygen, then sphinx-build with warnings as errors."""
import logging
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.environ.get("KVIKIO_DOCS_BUILD", os.path.join(ROOT, "build", "docs"))
# The Python package as staged by the Release build (build/release/python).
sys.path.insert(0, os.environ.get("KVIKIO_PYTHON_PATH", os.path.join(ROOT, "build", "release", "python")))

project = "KvikIO, rebuilt"
author = "the KvikIO, rebuilt authors"
copyright = "2026, " + author
with open(os.path.join(ROOT, "VERSION")) as f:
    release = f.read().strip()
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "breathe",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.graphviz",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["benchmarks/*.log", "benchmarks/*.jsonl"]
myst_heading_anchors = 3

# A page per public header (docs/api/cpp/<header>.md): a header without one fails the build.
_HEADERS = os.path.join(ROOT, "cpp", "include", "kvikio")
_missing = [h for h in sorted(os.listdir(_HEADERS)) if h.endswith(".hpp") and not
            os.path.exists(os.path.join(ROOT, "docs", "api", "cpp", h[:-4] + ".md"))]
if _missing:
    raise RuntimeError(f"docs/api/cpp has no page for {', '.join(_missing)}: add one as the "
                       "others are (a title, the header's @brief, a doxygenfile directive) and "
                       "list it in docs/api/cpp.md")

breathe_projects = {"kvikio": os.path.join(BUILD, "doxygen", "xml")}
breathe_default_project = "kvikio"
breathe_default_members = ("members",)

autodoc_member_order = "bysource"
autodoc_typehints = "none"

# The diagrams of the design page, drawn at build time by Graphviz (Debian graphviz).
graphviz_output_format = "svg"

html_theme = "alabaster"
# Wider than alabaster's 940 px: the benchmark tables and the command lines need the room.
html_theme_options = {"page_width": "1240px", "sidebar_width": "230px"}
html_title = f"{project} {release}"


def _check_table_rows(app, docname, source):
    """A `|` inside a code span still splits a Markdown table cell, silently shifting the rest of
    the row: warn (an error under -W) on any row whose cell count differs from its header's."""
    from sphinx.util import logging

    if not app.env.doc2path(docname).endswith(".md"):
        return
    header_cells = None
    for number, line in enumerate(source[0].splitlines(), start=1):
        if not line.startswith("|"):
            header_cells = None
            continue
        cells = len(line.replace("\\|", "").strip().strip("|").split("|"))
        if header_cells is None:
            header_cells = cells
        elif cells != header_cells:
            logging.getLogger(__name__).warning(
                f"table row has {cells} cells, its header {header_cells} (a '|' inside a cell?)",
                location=(docname, number))


class _NamespaceOnEveryPage(logging.Filter):
    """The C++ API is a page per header (docs/api/cpp/), and each page declares the namespace
    kvikio again (the statistics pages kvikio::statistics too): the C++ domain's report of those
    repeated declarations is dropped; every other duplicate is still an error."""

    def filter(self, record):
        text = record.getMessage()
        return not ("Duplicate C++ declaration" in text and ("'.. cpp:type:: kvikio'" in text or
                                                             "'.. cpp:type:: statistics'" in text))


def setup(app):
    app.connect("source-read", _check_table_rows)
    logging.getLogger("sphinx.sphinx.domains.cpp").addFilter(_NamespaceOnEveryPage())
