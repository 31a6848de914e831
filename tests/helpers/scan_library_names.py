"""Which of TF 2.15's estimator module names libraries on the package index reach: a list for the tests.

    python tests/helpers/scan_library_names.py [--wheels DIR]

Downloads each library of LIBRARIES with `pip download --no-deps` (or takes its wheel from DIR), reads its
Python files with `ast` (nothing is imported or run) and lists every name it takes from TF 2.15's module
paths (`tensorflow_estimator.*`, `tensorflow.python.estimator.*`): the modules, the names imported from
them, the attributes reached on those, and, for a class of its own subclassing one of TF 2.15's, the
attributes its methods reach on `self` or `super()` that it does not define (`Class#attribute`). Writes
tests/data/library_estimator_names.json, which tests/test_legacy_modules.py resolves after install().
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from compat.estimator.compatibility import SCANNED_LIBRARIES as LIBRARIES  # noqa: E402
OUT = os.path.join(REPO, "tests", "data", "library_estimator_names.json")
ROOTS = ("tensorflow_estimator", "tensorflow.python.estimator")


def _wheel(spec: str, folder: str) -> str:
    name, version = spec.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    found = glob.glob(os.path.join(folder, pattern), recursive=False) or glob.glob(
        os.path.join(folder, "**", pattern), recursive=True
    )
    if found:
        return found[0]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.9", "-d", folder, spec], check=True)
    return glob.glob(os.path.join(folder, pattern))[0]


def _names_in(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(ROOTS):
                    names.add(alias.name)
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ROOTS):
            for alias in node.names:
                names.add(f"{node.module}.{alias.name}")
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def resolved(node: ast.expr) -> str | None:
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in aliases:
            return ".".join([aliases[node.id], *reversed(chain)])
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (name := resolved(node)):
            names.add(name)
        if isinstance(node, ast.ClassDef):
            bases = [base for base in (resolved(base) for base in node.bases) if base]
            defined = {item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
            reached = set()
            for inner in ast.walk(node):
                if not isinstance(inner, ast.Attribute):
                    continue
                value = inner.value
                on_self = isinstance(value, ast.Name) and value.id == "self"
                on_super = isinstance(value, ast.Call) and getattr(value.func, "id", None) == "super"
                if on_self and isinstance(getattr(inner, "ctx", None), ast.Store):
                    defined.add(inner.attr)
                elif on_self or on_super:
                    reached.add(inner.attr)
            names.update(f"{base}#{attribute}" for base in bases for attribute in reached - defined)
    return names


def scan(wheel: str) -> list[str]:
    names: set[str] = set()
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if not member.endswith(".py") or "test" in os.path.basename(member):
                continue
            try:
                tree = ast.parse(archive.read(member).decode("utf-8", "replace"))
            except SyntaxError:
                continue
            names |= _names_in(tree)
    return sorted(names)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheels", default=None, help="a folder that holds the wheels already")
    folder = parser.parse_args().wheels or tempfile.mkdtemp(prefix="library-wheels-")
    result = {spec.replace("==", " "): scan(_wheel(spec, folder)) for spec in LIBRARIES}
    with open(OUT, "w") as stream:
        json.dump(result, stream, indent=1, sort_keys=True)
        stream.write("\n")
    print(f"{sum(map(len, result.values()))} names of {len(result)} libraries -> {OUT}")


if __name__ == "__main__":
    main()
