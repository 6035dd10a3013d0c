#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that dependencies.yaml, the single list of KvikIO's dependencies, agrees with what the
tree uses, and that the top-level VERSION file is the only place the version is written.

Usage: /usr/bin/python3 ci/check-dependencies.py [REPO_ROOT]
(REPO_ROOT defaults to the parent of this script's folder). Standard library and PyYAML only.
Exit status 0 when everything agrees, 1 naming each mismatch, 2 when a file cannot be read.

The rules, each checked in both directions:

a. ci/install-deps.sh: the packages of its `packages=( ... )` array and those it adds with
   `packages+=( ... )` are exactly the `debian:` entries of dependencies.yaml, and the
   `name==version` pins of its `pypi_packages=( ... )` array exactly its `pypi:` entries; each
   of those pins is also in ci/pypi-constraints.txt (the pins of everything they pull in), with
   the same version, and every line there pins one version (`name==version`).

b. CMake: every find_package / find_dependency / find_library / find_path / find_program /
   find_file call in a CMakeLists.txt, *.cmake or *.cmake.in that git knows (the files of rule
   d; comments stripped) is named by some entry's `cmake:` field, and every call
   a `cmake:` field names still exists. Calls are matched by name: the package for
   find_package and find_dependency (both written find_package(X) in dependencies.yaml, so
   find_package(CURL 7.87 REQUIRED) is `find_package(CURL)`), the first file name for the
   others (find_library(VAR NAMES liburing.a REQUIRED) is `find_library(liburing.a)`).
   find_package(kvikio) is the project's own package (python/kvikio, cpp/examples/downstream)
   and needs no entry.

c. conda: a recipe conda/recipes/<name>/meta.yaml is built from the groups of dependencies.yaml
   that RECIPE_GROUPS names for it. Each requirement of its build/host/run sections, by package
   name, is the `conda:` package of some entry, except the compiler ({{ compiler(...) }}) and,
   in the kvikio recipe, libkvikio (the project's own, which must be pinned to {{ version }}).
   Conversely every `conda:` package of an entry of the recipe's groups is one of its
   requirements, unless the entry's `conda_recipes:` lists the recipes that need it and this one
   is not among them. Entries without `conda:` (test tools, g++) are not conda requirements.
   The requirements are compared as one set of names per recipe: which section (build, host,
   run) a package is in, and version ranges, are not checked.
   Each recipe takes its version from VERSION (load_file_regex).

d. The version: no file of the tree that git knows (tracked, or untracked and not ignored) other
   than VERSION contains the string in VERSION (MAJOR.MINOR.PATCH), as a whole version (not inside a
   longer dotted number). Build files, recipes, pyproject.toml, sources and the Markdown pages
   alike: a page that names the version goes stale at the next bump, so it says "VERSION"
   instead. Only docs/benchmarks/ is left out: its logs record the measurements of past runs
   (numbers of any shape, and the version that was measured, which is history).
"""
import os
import re
import subprocess
import sys

import yaml

# The groups of dependencies.yaml each conda recipe is built from.
RECIPE_GROUPS = {
    "libkvikio": ["build", "runtime"],
    "kvikio": ["build", "runtime", "python"],
}
OWN_CMAKE_PACKAGE = "kvikio"
OWN_CONDA_PACKAGES = {"kvikio": {"libkvikio"}}  # recipe -> packages of this project it may require
VERSION_EXEMPT_DIRS = ("docs/benchmarks/",)

LOOKUPS = ("find_package", "find_dependency", "find_library", "find_path", "find_program", "find_file")
LOOKUP_RE = re.compile(r"\b(" + "|".join(LOOKUPS) + r")\s*\(([^)]*)\)", re.IGNORECASE)
FIELD_CALL_RE = re.compile(r"(\w+)\s*\(([^)]*)\)")
FIND_KEYWORDS = {"NAMES", "HINTS", "PATHS", "PATH_SUFFIXES", "DOC", "REQUIRED", "NO_CACHE",
                 "NO_DEFAULT_PATH", "NAMES_PER_DIR", "ENV", "REGISTRY_VIEW", "VALIDATOR"}


class Fail(Exception):
    pass


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise Fail(f"cannot read {path}: {e}") from None


def entries(deps):
    """(group, source, entry) for every entry of dependencies.yaml."""
    for group, sources in deps.items():
        if not isinstance(sources, dict):
            raise Fail(f"dependencies.yaml: group {group!r} is not a mapping of sources")
        for source, items in sources.items():
            for entry in items or []:
                if not isinstance(entry, dict) or "name" not in entry:
                    raise Fail(f"dependencies.yaml: {group}.{source}: an entry without a name")
                yield group, source, entry


def as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


# a. ci/install-deps.sh ---------------------------------------------------------------------------
def shell_array(text, name):
    """The words of the bash arrays `name=( ... )` and `name+=( ... )` (comments dropped), or None
    when there is none."""
    words, in_array, arrays = [], False, 0
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        if not in_array:
            m = re.match(r"\s*(?:if .*;\s*then\s+)?" + name + r"\+?=\((.*)", code)
            if not m:
                continue
            code, in_array, arrays = m.group(1), True, arrays + 1
        if ")" in code:
            code, in_array = code.split(")", 1)[0], False
        words += [w.strip("\"'") for w in code.split()]
    return words if arrays else None


def pin_name(pin):
    """The package of `name[extra]==version`, normalized as PyPI does (case, - _ .)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\[=<>!~ ]", pin, 1)[0]).lower()


def check_install_deps(root, deps, errors):
    text = read(os.path.join(root, "ci", "install-deps.sh"))
    debian = shell_array(text, "packages")
    if debian is None:
        raise Fail("ci/install-deps.sh: no packages=( ... ) array")
    pypi = shell_array(text, "pypi_packages") or []
    listed = {"debian": set(), "pypi": set()}
    for group, source, entry in entries(deps):
        if source in listed:
            listed[source].add(str(entry["name"]))
    for source, installed in (("debian", debian), ("pypi", pypi)):
        for p in sorted(set(installed) - listed[source]):
            errors.append(f"ci/install-deps.sh installs {p}, which no `{source}:` entry of dependencies.yaml lists")
        for p in sorted(listed[source] - set(installed)):
            errors.append(f"dependencies.yaml lists {source} package {p}, which ci/install-deps.sh does not install")
        for p in sorted({p for p in installed if installed.count(p) > 1}):
            errors.append(f"ci/install-deps.sh lists {p} more than once")
    constraints = {}
    for n, line in enumerate(read(os.path.join(root, "ci", "pypi-constraints.txt")).splitlines(), 1):
        code = line.split("#", 1)[0].strip()
        if not code:
            continue
        m = re.fullmatch(r"([A-Za-z0-9][\w.-]*)==([\w.+!-]+)", code)
        if not m:
            errors.append(f"ci/pypi-constraints.txt:{n}: {code!r} is not name==version")
            continue
        constraints[pin_name(m.group(1))] = m.group(2)
    for pin in sorted(set(listed["pypi"]) | set(pypi)):
        m = re.fullmatch(r"[^=]+==([\w.+!-]+)", pin)
        if not m:
            errors.append(f"PyPI package {pin}: not pinned (name==version)")
        elif constraints.get(pin_name(pin)) != m.group(1):
            errors.append(f"PyPI package {pin}: ci/pypi-constraints.txt pins "
                          f"{constraints.get(pin_name(pin), 'no version')} of it")
    return len(set(debian)) + len(set(pypi))


def repo_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        return sorted(set(p for p in out.decode().split("\0") if p))
    except (OSError, subprocess.CalledProcessError):
        files = []  # not a git checkout: every file but build*/ and hidden ones
        for dirpath, dirnames, filenames in os.walk(root):
            top = os.path.relpath(dirpath, root) == "."
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and not (top and d.startswith("build"))]
            files += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
        return sorted(files)


# b. CMake lookups ---------------------------------------------------------------------------------
def cmake_files(root):
    for rel in repo_files(root):
        name = os.path.basename(rel)
        if name == "CMakeLists.txt" or name.endswith((".cmake", ".cmake.in")):
            yield os.path.join(root, rel)


def strip_cmake_comments(text):
    text = re.sub(r"#\[(=*)\[.*?\]\1\]", "", text, flags=re.DOTALL)  # bracket comments
    out = []
    for line in text.splitlines():
        in_string = False
        for i, c in enumerate(line):
            if c == '"' and (i == 0 or line[i - 1] != "\\"):
                in_string = not in_string
            elif c == "#" and not in_string:
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def lookup_key(command, args, result_variable=True):
    """('find_package', name) or ('find_library', first file name), ... from a call's arguments.
    A call in a CMake file has a result variable before the names (find_library(VAR NAMES x));
    the calls `cmake:` fields write have none (find_library(x))."""
    command = command.lower()
    words = [w.strip('"') for w in args.split()]
    if command in ("find_package", "find_dependency"):
        return ("find_package", words[0]) if words else None
    if result_variable:
        words = words[1:]
    if words and words[0] == "NAMES":
        words = words[1:]
    names = [w for w in words if w not in FIND_KEYWORDS]
    return (command, names[0]) if names else None


def check_cmake(root, deps, errors):
    used = {}  # key -> [file:line]
    for path in cmake_files(root):
        text = strip_cmake_comments(read(path))
        rel = os.path.relpath(path, root)
        for m in LOOKUP_RE.finditer(text):
            key = lookup_key(m.group(1), m.group(2))
            line = text.count("\n", 0, m.start()) + 1
            if key is None:
                errors.append(f"{rel}:{line}: cannot read the name of {m.group(0)!r}")
                continue
            if key == ("find_package", OWN_CMAKE_PACKAGE):
                continue
            used.setdefault(key, []).append(f"{rel}:{line}")
    named = {}
    for group, source, entry in entries(deps):
        field = entry.get("cmake")
        if not field:
            continue
        calls = FIELD_CALL_RE.findall(str(field))
        if not calls:
            errors.append(f"dependencies.yaml: {entry['name']}: cannot read cmake: {field!r}")
        for command, args in calls:
            key = lookup_key(command, args, result_variable=False)
            if key is None or command.lower() not in LOOKUPS:
                errors.append(f"dependencies.yaml: {entry['name']}: cmake: {command}({args}) is not a lookup")
                continue
            named[key] = entry["name"]
    for key in sorted(set(used) - set(named)):
        errors.append(f"{', '.join(used[key])}: {key[0]}({key[1]}) is named by no `cmake:` field of dependencies.yaml")
    for key in sorted(set(named) - set(used)):
        errors.append(f"dependencies.yaml: {named[key]}: cmake: {key[0]}({key[1]}) is called by no CMake file (stale)")
    return sum(len(v) for v in used.values())


# c. conda recipes ---------------------------------------------------------------------------------
def recipe_requirements(text):
    """{section: [(package name, the whole requirement)]} of a meta.yaml's requirements."""
    sections, section, in_requirements = {}, None, False
    for line in text.splitlines():
        code = line.split("#", 1)[0].rstrip()
        if not code.strip() or code.lstrip().startswith("{%"):
            continue
        indent = len(code) - len(code.lstrip())
        if indent == 0:
            in_requirements = code == "requirements:"
            section = None
        elif in_requirements and re.fullmatch(r"\s+(build|host|run):", code):
            section = code.strip()[:-1]
            sections.setdefault(section, [])
        elif in_requirements and section and code.lstrip().startswith("- "):
            req = code.lstrip()[2:].strip()
            name = re.split(r"[\s=<>!~]", req, 1)[0]
            sections[section].append((name, req))
    return sections


def check_conda(root, deps, errors):
    recipes_dir = os.path.join(root, "conda", "recipes")
    found = sorted(d for d in os.listdir(recipes_dir) if os.path.isfile(os.path.join(recipes_dir, d, "meta.yaml")))
    for name in sorted(set(RECIPE_GROUPS) - set(found)):
        errors.append(f"conda/recipes/{name}/meta.yaml is missing")
    conda_of = {}  # conda package -> (group, entry)
    for group, source, entry in entries(deps):
        for pkg in as_list(entry.get("conda")):
            conda_of[pkg] = (group, entry)
        for r in as_list(entry.get("conda_recipes")):
            if r not in RECIPE_GROUPS:
                errors.append(f"dependencies.yaml: {entry['name']}: conda_recipes names {r}, no recipe of conda/recipes")
    count = 0
    for recipe in found:
        rel = f"conda/recipes/{recipe}/meta.yaml"
        if recipe not in RECIPE_GROUPS:
            errors.append(f"{rel}: a recipe ci/check-dependencies.py does not know (add it to RECIPE_GROUPS)")
            continue
        text = read(os.path.join(root, rel))
        if not re.search(r'load_file_regex\(\s*load_file\s*=\s*"VERSION"', text):
            errors.append(f"{rel}: the version does not come from VERSION (load_file_regex)")
        sections = recipe_requirements(text)
        if not sections:
            errors.append(f"{rel}: no requirements found")
        required = set()
        for section, reqs in sorted(sections.items()):
            for name, req in reqs:
                if "compiler(" in req:
                    continue
                if name in OWN_CONDA_PACKAGES.get(recipe, ()):
                    if not re.fullmatch(r"\S+\s*==?\s*\{\{\s*version\s*\}\}", req):
                        errors.append(f"{rel}: {section}: {req!r}: pin the project's own package to {{{{ version }}}}")
                    continue
                count += 1
                required.add(name)
                if name not in conda_of:
                    errors.append(f"{rel}: {section}: {name} is the `conda:` package of no entry of dependencies.yaml")
                else:
                    group, entry = conda_of[name]
                    if group not in RECIPE_GROUPS[recipe]:
                        errors.append(f"{rel}: {section}: {name} ({entry['name']}) is of group {group}, "
                                      f"not one the recipe is built from ({', '.join(RECIPE_GROUPS[recipe])})")
        for group, source, entry in entries(deps):
            if group not in RECIPE_GROUPS[recipe]:
                continue
            only = as_list(entry.get("conda_recipes"))
            if only and recipe not in only:
                continue
            for pkg in as_list(entry.get("conda")):
                if pkg not in required:
                    errors.append(f"{rel}: lacks {pkg}, the `conda:` package of {entry['name']} (group {group})")
    return count


# d. the version -----------------------------------------------------------------------------------
def check_version(root, errors):
    version = read(os.path.join(root, "VERSION")).strip()
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        errors.append(f"VERSION: {version!r} is not MAJOR.MINOR.PATCH")
        return
    pattern = re.compile(rb"(?<![\d.])" + re.escape(version.encode()) + rb"(?!\.?\d)")
    for rel in repo_files(root):
        if rel == "VERSION" or rel.startswith(VERSION_EXEMPT_DIRS):
            continue
        try:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        except OSError:
            continue  # listed by git but deleted in the working tree
        m = pattern.search(data)
        if m:
            line = data.count(b"\n", 0, m.start()) + 1
            errors.append(f"{rel}:{line}: states the version {version}; VERSION is the only place for it")


def main(argv):
    if len(argv) > 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), ".."))
    errors = []
    try:
        deps = yaml.safe_load(read(os.path.join(root, "dependencies.yaml")))
        if not isinstance(deps, dict):
            raise Fail("dependencies.yaml: not a mapping of groups")
        packages = check_install_deps(root, deps, errors)
        lookups = check_cmake(root, deps, errors)
        conda = check_conda(root, deps, errors)
        check_version(root, errors)
    except (Fail, yaml.YAMLError) as e:
        print(f"check-dependencies: {e}", file=sys.stderr)
        return 2
    if errors:
        for e in errors:
            print(f"check-dependencies: {e}", file=sys.stderr)
        print(f"check-dependencies: {len(errors)} mismatch(es)", file=sys.stderr)
        return 1
    print(f"dependencies: {packages} packages, {lookups} cmake lookups, {conda} conda requirements "
          "consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
