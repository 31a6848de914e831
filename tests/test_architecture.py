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


# What converts a trained Estimator to Keras: importing one registers Keras classes and loads Keras.
CONVERSION = {"compat.estimator.to_keras", "compat.estimator.keras_canned", "compat.estimator.keras_columns",
              "compat.estimator.keras_serving", "compat.estimator.keras_twin"}


def _reachable(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        for name in GRAPH.get(todo.pop(), ()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_the_canned_estimators_and_heads_do_not_load_the_conversion_to_keras():
    """A program that trains a canned Estimator loads no conversion code: its classes keep a CannedRecipe
    (canned/recipe.py), which the conversion reads when asked."""
    trainers = [m for m in MODULES if m.startswith(("compat.estimator.canned", "compat.estimator.head"))]
    assert "compat.estimator.canned.dnn" in trainers
    loaded = {module: sorted(_reachable(module) & CONVERSION) for module in trainers}
    assert {module: names for module, names in loaded.items() if names} == {}


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


def _engine_checks(path: str) -> list[str]:
    """Where a module tells the engines apart by type or name instead of EstimatorBase's `engine`,
    `keras_recipe`, `strategy` and `trained_keras_model`: isinstance with KerasEstimator, a class-name
    comparison, a `_keras_recipe` lookup."""
    found = []
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            if "KerasEstimator" in ast.unparse(node.args[1]):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Compare) and "__name__" in ast.unparse(node.left) and any(
            isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value != "__main__"
            for value in node.comparators
        ):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Constant) and node.value == "_keras_recipe" or (
            isinstance(node, ast.Attribute) and node.attr == "_keras_recipe"
        ):
            found.append(ast.unparse(node))
    return found


def test_only_the_keras_engine_tells_the_engines_apart_by_type_or_name():
    outside = {module: _engine_checks(path) for module, path in MODULES.items()
               if not module.startswith("compat.estimator.keras_engine")}
    assert not {module: found for module, found in outside.items() if found}


def test_the_engine_rule_catches_a_type_check(tmp_path):
    program = tmp_path / "program.py"
    program.write_text("if isinstance(estimator, KerasEstimator) or type(x).__name__ == 'TPUEstimator':\n"
                       "    recipe = getattr(estimator, '_keras_recipe', None)\n")
    assert len(_engine_checks(str(program))) == 3


def _type_checking_names(path: str) -> set[str]:
    """The names a module imports under `if TYPE_CHECKING:`."""
    names = set()
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in ast.walk(node):
                if isinstance(statement, ast.ImportFrom) and statement.names[0].name == "*":
                    names.update(__import__(statement.module, fromlist=["_"]).__all__)  # the module's own list
                elif isinstance(statement, ast.ImportFrom | ast.Import):
                    names.update(alias.asname or alias.name for alias in statement.names)
    return names


@pytest.mark.parametrize("package, public", [
    ("compat.estimator", lambda module: set(module.__all__) - {"experimental", "install", "uninstall"}),
    ("compat.estimator.canned", lambda module: set(module.__all__)),
    ("compat.estimator.head", lambda module: set(module.__all__)),
    ("compat.data", lambda module: set(__import__("compat.data.builder", fromlist=["_"]).__all__)),
])
def test_the_lazy_packages_show_type_checkers_every_public_name(package, public):
    """Each public name a lazy package loads on first use is imported under TYPE_CHECKING too: mypy and
    editors resolve `compat.estimator.DNNClassifier` to its class, not Any."""
    import importlib

    module = importlib.import_module(package)
    assert _type_checking_names(MODULES[package]) == public(module)


def test_mypy_reveals_the_public_names_as_their_classes_and_functions(tmp_path):
    import subprocess
    import sys

    program = tmp_path / "program.py"
    program.write_text("import compat.data\nimport compat.estimator\n\n"
                       "reveal_type(compat.estimator.DNNClassifier)\nreveal_type(compat.estimator.RunConfig)\n"
                       "reveal_type(compat.estimator.to_keras)\nreveal_type(compat.data.build_dataset)\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), str(program)],
                            capture_output=True, text=True, cwd=REPO, timeout=600)
    revealed = [line.split("Revealed type is ", 1)[1] for line in result.stdout.splitlines() if "Revealed" in line]
    assert len(revealed) == 4, result.stdout + result.stderr
    assert revealed[0].endswith('-> compat.estimator.canned.dnn.DNNClassifier"')
    assert revealed[1].endswith('-> compat.estimator.run_config.RunConfig"')
    assert "def (estimator: compat.estimator.base.EstimatorBase" in revealed[2]
    assert revealed[3].startswith('"def (source: ')


def test_train_py_holds_the_command_line_only():
    """The process's concerns (imports, logs, signals, errors, exit) are compat/modes/process.py's, under the
    layer rule above; train.py defines no signal handler, collector setting or exit path of its own."""
    source = open(os.path.join(REPO, "train.py")).read()
    assert len(source.splitlines()) <= 200
    assert not re.search(r"\b(signal\.signal|gc\.|os\._exit|atexit\.)", source)
