"""The layers and their one-way rule, read from the source: a wrong import fails here, before it ships.

    compat.core        imports nothing else of compat
    compat.estimator   the library (TF 2.15's API): itself and compat.core
    compat.config      the application's settings: compat.core
    compat.data        the audio input: itself, compat.config and compat.core
    compat.cache       the cache command's name before 0.2: compat.data
    compat.modes       the training modes: any of compat, and models
    models             the model registry: nothing of compat

and no two modules import each other, directly or around a longer loop (imports inside functions count:
they are how cycles hide). docs/architecture.md names every module; a module it leaves out fails here too.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

from conftest import REPO

ALLOWED = {
    "compat.core": ("compat.core",),
    "compat.estimator": ("compat.estimator", "compat.core"),
    "compat.config": ("compat.core",),
    "compat.data": ("compat.data", "compat.config", "compat.core"),
    "compat.cache": ("compat.data",),
    "compat.modes": ("compat", "models"),
    "models": ("models",),
}


def _modules() -> dict[str, str]:
    """Every module of compat/ and models/, by dotted name, with its path."""
    found = {}
    for top in ("compat", "models"):
        for folder, _, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    dotted = os.path.relpath(path, REPO)[: -len(".py")].replace(os.sep, ".")
                    found[dotted.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(path: str) -> set[str]:
    """The project modules `path` imports, anywhere in it (a `from package import module` names the module)."""
    names = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                names.add(child if child in MODULES else node.module)
    return {name for name in names if name in MODULES}


GRAPH = {module: _imports(path) for module, path in MODULES.items()}


def _layer(module: str) -> str:
    return max((layer for layer in ALLOWED if module == layer or module.startswith(layer + ".")), key=len)


def test_every_module_belongs_to_a_layer_and_imports_only_what_its_layer_may():
    wrong = []
    for module, imported in GRAPH.items():
        if module == "compat":
            continue
        allowed = ALLOWED[_layer(module)]
        for name in imported:
            if not any(name == root or name.startswith(root + ".") for root in allowed):
                wrong.append(f"{module} imports {name}")
    assert not wrong, "\n".join(sorted(wrong))


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        # A module may build on its own package's namespace (compat.estimator.v1 is tf.estimator's names
        # with TF 1.x's canned classes, imported by the package only inside install()): not a cycle.
        for child in (child for child in GRAPH[node] if not node.startswith(child + ".")):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                child = stack.pop()
                on_stack.discard(child)
                component.append(child)
                if child == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    assert _cycles() == []


def test_the_rule_catches_a_library_import_of_the_application(monkeypatch):
    """The checks above can fail: a library module that imports the pipeline is reported."""
    monkeypatch.setitem(GRAPH, "compat.estimator.inputs", GRAPH["compat.estimator.inputs"] | {"compat.data.builder"})
    with pytest.raises(AssertionError, match="compat.estimator.inputs imports compat.data.builder"):
        test_every_module_belongs_to_a_layer_and_imports_only_what_its_layer_may()
    monkeypatch.setitem(GRAPH, "compat.core.atomic", GRAPH["compat.core.atomic"] | {"compat.core.errors"})
    monkeypatch.setitem(GRAPH, "compat.core.errors", GRAPH["compat.core.errors"] | {"compat.core.atomic"})
    assert ["compat.core.atomic", "compat.core.errors"] in _cycles()


def test_the_architecture_page_names_every_module():
    page = open(os.path.join(REPO, "docs", "architecture.md")).read()
    named = set(re.findall(r"`([a-z0-9_]+(?:/[a-z0-9_]+)*\.py)`", page))
    missing = [path for path in (os.path.relpath(p, REPO) for p in MODULES.values())
               if os.path.basename(path) != "__init__.py" and path not in named]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_no_function_in_compat_is_longer_than_60_lines():
    """Long functions hide their phases: split them by phase (docstring and signature count)."""
    long = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"{module}.{node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert not long, "\n".join(long)
