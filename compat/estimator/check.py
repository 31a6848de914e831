"""The migration check: what of a codebase's Estimator code runs here, before trying it.

    python -m compat.estimator.check PATH... [--format=text|json] [--diff | --fix]

Reads Python files and Jupyter notebooks (files, or folders searched for `*.py` and `*.ipynb`; a
notebook's code cells as one program, notebook.py) with the `ast` module, never importing or running
them, and finds every use of the Estimator surface and the TF1-era names model_fns call
(`tf.estimator.*`, `tf.compat.v1.estimator.*`, `tf.keras.estimator.*`, `tf.layers.*`,
`tf.compat.v1.train.*`, `tf.feature_column.*`, `tf.contrib.*`, ...), through whatever aliases the
file gives them (`import tensorflow.compat.v1 as tf`, `from tensorflow import estimator as est`,
`from tensorflow.estimator import *`, ...). Each use gets its status from the compatibility table
(compatibility.py, which docs/compatibility.md is generated from): as TF 2.15, differs (how),
refused (what to use), or unknown.

TF 1.x names that TensorFlow >= 2.16 lacks (`tf.logging`, `tf.app.flags`, `tf.placeholder`, `tf.GraphKeys`,
`dataset.make_one_shot_iterator()`, ...) are reported too, each with its TF 2 spelling.

The exit status is 1 when a refused name is used (for CI), 2 when a file cannot be read or parsed,
else 0. `--fix` rewrites the files in place, each whole or not at all (`fixed_source`): TF 1.x names by
TensorFlow's own upgrader with TF 2.15's renames (upgrade.py), `import compat.estimator;
compat.estimator.install()` before the first TensorFlow import of each entry point (a file with
`if __name__ == "__main__"` or an `app.run` call) and each file using the Estimator, and a comment above
each use it cannot rewrite, naming what to do; then it reports what still needs a person. `--diff`
prints the same changes without writing. Both load TensorFlow (its upgrader); the report alone does not.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import functools
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator

from compat.core import tf_namespaces
from compat.estimator import compatibility, legacy_modules, notebook, upgrade
from compat.estimator.canned import recipe as canned_recipe

# What counts as the Estimator surface: uses below these names are reported (dotted below `tf.`).
SURFACE = (
    "estimator.",
    "compat.v1.estimator.",
    "keras.estimator.",
    "layers.",
    "compat.v1.layers.",
    "train.",
    "compat.v1.train.",
    "feature_column.",
    "compat.v1.feature_column.",
    "contrib.",
    "compat.v1.nn.rnn_cell.",
    "nn.rnn_cell.",
    "compat.v1.losses.",
    "compat.v1.metrics.",
    "keras.layers.DenseFeatures",
    "keras.optimizers.legacy.",
)
# Modules whose import binds a name to a point of TensorFlow's namespace (dotted, `tf` the root).
_MODULES = {
    "tensorflow": "tf",
    "tensorflow.compat.v1": "tf.compat.v1",
    "tensorflow.compat.v2": "tf",
    "tensorflow_estimator": "tf",
    # `from tensorflow_estimator import estimator`: TF 2.15's tensorflow_estimator package was TF 1.x's API
    "tensorflow_estimator.estimator": "tf.compat.v1.estimator",
    "tensorflow_estimator._api.v2": "tf",
    "tensorflow_estimator._api.v1": "tf.compat.v1",
    "tensorflow_estimator.python.estimator.api._v2": "tf",
    "tensorflow_estimator.python.estimator.api._v1": "tf.compat.v1",
}
INSTALL_LINE = "import compat.estimator; compat.estimator.install()  # tf.estimator on TensorFlow >= 2.16"


@dataclasses.dataclass(frozen=True)
class Use:
    """One use of a surface name: where, what (`tf.`-rooted, aliases resolved), and its status."""

    path: str
    line: int
    name: str
    status: str
    note: str


def _tf_point(module: str) -> str | None:
    """The point of TensorFlow's namespace `import <module>` names (`tensorflow.compat.v1` -> `tf.compat.v1`)."""
    for prefix in sorted(_MODULES, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            rest = module[len(prefix) :]
            return _MODULES[prefix] + rest
    return None


class _Aliases(ast.NodeVisitor):
    """Names a file binds to points of TensorFlow's namespace, and the points it star-imports."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.stars: list[str] = []
        self.imports_tensorflow: list[int] = []  # first lines of the top-level TensorFlow imports

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            point = _tf_point(alias.name)
            if point is None:
                continue
            if alias.asname:
                self.names[alias.asname] = point
            else:  # `import tensorflow.compat.v1` binds `tensorflow`
                self.names[alias.name.split(".")[0]] = "tf"
            self._note_import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        point = _tf_point(node.module or "") if not node.level else None
        if point is None:
            return
        for alias in node.names:
            if alias.name == "*":
                self.stars.append(point)
            else:
                full = _tf_point(f"{node.module}.{alias.name}")  # a module with a point of its own
                self.names[alias.asname or alias.name] = full or f"{point}.{alias.name}"
        self._note_import(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        # `contrib_foo = unavailable("tf.contrib.foo")`, which --fix wrote for a tf.contrib import with no home: the
        # name still stands for that point, so that its uses are reported again
        value = node.value
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "unavailable"
            and len(value.args) == 1
            and isinstance(value.args[0], ast.Constant)
            and isinstance(value.args[0].value, str)
            and value.args[0].value.startswith("tf.contrib.")
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.names[target.id] = value.args[0].value
        self.generic_visit(node)

    def _note_import(self, node: ast.stmt) -> None:
        if node.col_offset == 0:
            self.imports_tensorflow.append(node.lineno)


def _dotted(node: ast.expr) -> tuple[str, list[str]] | None:
    """`a.b.c` as ("a", ["b", "c"]); None for anything else (a call's result, a subscript)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return node.id, list(reversed(parts))


# TF 1.x names reached through `tensorflow.compat.v1` that live elsewhere in TensorFlow 2's namespace
_V1_SPELLINGS = {"tf.compat.v1.contrib.": "tf.contrib.", "tf.compat.v1.keras.": "tf.keras."}


def _canonical(name: str) -> str:
    name = tf_namespaces.canonical(name)
    for v1, v2 in _V1_SPELLINGS.items():
        if name.startswith(v1):
            return v2 + name[len(v1) :]
    return name


def _shortest_known(name: str) -> str:
    """The name trimmed to the longest prefix that is one of TF 2.15's public names (or the table's rows):
    `tf.estimator.ModeKeys.TRAIN` -> `tf.estimator.ModeKeys`."""
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        candidate = ".".join(parts[:end])
        if compatibility.is_known(candidate):
            return candidate
    return name


def _on_surface(name: str) -> bool:
    below = name[len("tf.") :]
    return any(below == prefix.rstrip(".") or below.startswith(prefix) for prefix in SURFACE)


def _names_in(tree: ast.AST, aliases: _Aliases) -> Iterator[tuple[int, str]]:
    """(line, `tf.`-rooted name) of every attribute chain or bare name that reaches TensorFlow."""
    inner: set[int] = set()  # chains inside a longer chain, reported as the longer one
    star_names = {
        name.rsplit(".", 1)[1]: name
        for name in compatibility.known_names()
        for star in aliases.stars
        if name.startswith(star + ".") and "." not in name[len(star) + 1 :]
    }
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, ast.Attribute | ast.Name):
            continue
        if isinstance(node, ast.Attribute):
            value = node.value
            while isinstance(value, ast.Attribute):
                inner.add(id(value))
                value = value.value
            inner.add(id(value))
        chain = _dotted(node)
        if chain is None:
            continue
        root, parts = chain
        if root in aliases.names:
            name = ".".join([aliases.names[root], *parts])
        elif root in star_names:
            name = ".".join([star_names[root], *parts])
        else:
            continue
        yield node.lineno, _canonical(name)


def _program_uses(tree: ast.AST, names: Iterable[str]) -> frozenset[str]:
    """What a table row's cases are met by: the names below `tf.` the file reaches, the keyword
    arguments it passes (`train_distribute=`), and `keras.layers.` when it imports Keras 3 itself (whose
    layers it may call)."""
    uses = {name[len("tf.") :] for name in names}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg:
            uses.add(f"{node.arg}=")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(module == "keras" or module.startswith("keras.") for module in modules):
                uses.add("keras.layers.")
    return frozenset(uses)


def _estimator_name_verdict(name: str) -> compatibility.Entry | None:
    """The verdict for a name below tf.estimator or tf.compat.v1.estimator that is not one of TF 2.15's
    public names (a TF 1.x spelling in the TF 2 namespace, a typo), which the table's prefix rows would call
    "as TF 2.15"; None for any other name. Decided from TF 2.15's recorded names, without TensorFlow.
    """
    if not name.startswith(("tf.estimator.", "tf.compat.v1.estimator.")) or _in_tf215(name):
        return None
    renamed = _tf1_rename(name)
    if renamed is not None and _in_tf215(renamed[1]):
        old, new = renamed
        return compatibility.Entry(
            compatibility.REFUSED,
            f"a TF 1.x name, not in TF 2.15's {old.rsplit('.', 1)[0]} (TF 2.15 raised AttributeError; it had "
            f"{new}): use {new} (--fix rewrites it)",
        )
    if _added_here(name):
        return compatibility.Entry(compatibility.DIFFERS, compatibility.OWN_NAME)
    return compatibility.Entry(compatibility.UNKNOWN, "no such name in this namespace, here or in TF 2.15")


def _added_here(name: str) -> bool:
    """Whether `name` is a public name this package adds to tf.estimator (`to_keras`, a canned class registered
    in `canned.CANNED`) or to tf.compat.v1.estimator (a registered canned class's TF 1.x twin), read from the
    package's lazy tables, without TensorFlow."""
    import compat.estimator as package
    from compat.estimator import canned

    for namespace, names in (
        ("tf.estimator.", set(package.__all__) - {"install", "uninstall"}),
        ("tf.compat.v1.estimator.", set(canned.V1_CLASSES)),
    ):
        if name.startswith(namespace):
            return name[len(namespace) :] in names  # a name itself: what lies below one is not vouched for here
    return False


def _contrib_home_verdict(name: str) -> compatibility.Entry | None:
    """For a tf.contrib.layers, tf.contrib.metrics or tf.contrib.slim name that this project or tf-slim has:
    where, and what --fix does."""
    home = upgrade.contrib_home(name)
    if home is None:
        return None
    if home.startswith("compat.estimator.contrib_metrics."):
        return compatibility.Entry(
            compatibility.REFUSED,
            f"tf.contrib is not in TensorFlow 2; this project has it as {home}, with TF 1.x's results (--fix "
            "rewrites it)",
        )
    if home.startswith("compat."):
        return compatibility.Entry(
            compatibility.REFUSED,
            f"tf.contrib is not in TensorFlow 2; this project has it as {home}, with TF 1.x's variable names, so "
            "TF 1.x checkpoints restore (--fix rewrites it)",
        )
    return compatibility.Entry(
        compatibility.REFUSED,
        f"tf.contrib is not in TensorFlow 2; tf-slim has it as {home}, with TF 1.x's variable names, so TF 1.x "
        "checkpoints restore (pip install tf-slim). --fix imports it from tf_slim (a `from tensorflow.contrib "
        f"import {name.split('.')[2]}` too, where every name the file takes from it is tf-slim's)",
    )


def _in_tf215(name: str) -> bool:
    """Whether `name` is one of TF 2.15's public names, a name below one (`ModeKeys.TRAIN`) or a namespace
    above them (`tf.estimator.export`)."""
    known = _tf215_public()
    parts = name[len("tf.") :].split(".")
    dotted = [".".join(parts[: count + 1]) for count in range(len(parts))]
    return any(prefix in known for prefix in dotted) or any(other.startswith(dotted[-1] + ".") for other in known)


def _a_namespace_that_runs(name: str) -> bool:
    """Whether `name` is a namespace above names that run here (`tf.estimator`, `tf.keras.estimator`): TF 2.15's
    public names, or the table's rows that are not refused."""
    if _in_tf215(name):
        return True
    below = [known for known in compatibility.known_names() if known.startswith(name + ".")]
    return any(compatibility.lookup(known).status in (compatibility.SAME, compatibility.DIFFERS) for known in below)


@functools.lru_cache(maxsize=1)
def _tf215_public() -> frozenset[str]:
    return frozenset(compatibility.tf215_names())


_LEGACY_NOTE = "TF 2.15's module path: imports after compat.estimator.install() (docs/compatibility.md)"


def _legacy_module_uses(tree: ast.AST, path: str) -> Iterator[Use]:
    """Imports of TF 2.15's module paths (`tensorflow_estimator.python.estimator.*`,
    `tensorflow.python.estimator.*`, `tensorflow.compat.v1.keras.*`), which install() serves, and the names a
    file takes from such a module bound to a name (`from ...canned import dnn`, then `dnn._dnn_model_fn`)."""
    modules: dict[str, str] = {}  # a name the file binds -> the TF 2.15 module it is
    for node in ast.walk(tree):
        imported: list[tuple[str, str | None, str | None]]
        if isinstance(node, ast.Import):
            imported = [(alias.name, None, alias.asname) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported = [(node.module, alias.name, alias.asname) for alias in node.names]
        else:
            continue
        for module, name, asname in imported:
            if not legacy_modules.is_served_path(module) or module in legacy_modules.PUBLIC_API:
                continue
            dotted = module if name is None else f"{module}.{name}"
            bound = asname or name
            if bound is not None and legacy_modules.is_served_path(dotted) and dotted not in legacy_modules.PUBLIC_API:
                modules[bound] = dotted
            if name is None or name == "*":
                yield Use(path, node.lineno, dotted, compatibility.SAME, _LEGACY_NOTE)
            else:
                yield Use(path, node.lineno, dotted, *_legacy_name_verdict(module, name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            module = modules[node.value.id]
            if not module.startswith("tensorflow.compat.v1.keras"):
                yield Use(path, node.lineno, f"{module}.{node.attr}", *_legacy_name_verdict(module, node.attr))


def _legacy_name_verdict(module: str, name: str) -> tuple[str, str]:
    """(status, note) for TF 2.15's `module`.`name`: as TF 2.15 where it resolves here, refused where TF 2.15
    had it and this project has no counterpart, unknown where TF 2.15 did not have it."""
    if not legacy_modules.had_name(module, name):
        return compatibility.UNKNOWN, f"{name} was not a name of TF 2.15's {module}"
    if not legacy_modules.resolves(module, name):
        return compatibility.REFUSED, (
            f"TF 2.15's {module}.{name} has no counterpart here (a private name of its module): using it stops "
            "with one line naming the closest public name; the module's other names resolve (docs/compatibility.md)"
        )
    return compatibility.SAME, _LEGACY_NOTE


def _tf1_rename(name: str) -> tuple[str, str] | None:
    """(the TF 1.x name, its TF 2 spelling) for `name` or the longest prefix of it that TF 2.15's upgrader
    renamed (`tf.logging.info`, `tf.app.flags.DEFINE_integer` below `tf.app.flags`); None for any other."""
    renames = upgrade.symbol_renames()
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        candidate = ".".join(parts[:end])
        if candidate in renames:
            if candidate in upgrade.tf2_names() and candidate not in upgrade.SAME_NAME_IN_TF2:
                return None  # TensorFlow 2 has it too (tf.keras.optimizers.Adam): TF 2 code means that one
            return candidate, renames[candidate]
    return None


def _tf1_uses(found: Iterable[tuple[int, str]], path: str) -> Iterator[Use]:
    """The TF 1.x names off the Estimator surface (`tf.logging`, `tf.app.flags`, `tf.placeholder`,
    `tf.GraphKeys`, ...), which TensorFlow >= 2.16 does not have: each with the spelling `--fix` gives it."""
    for line, name in sorted({(line, name) for line, name in found if not _on_surface(name)}):
        renamed = _tf1_rename(name)
        if renamed is None:
            continue
        old, new = renamed
        if old in upgrade.SAME_NAME_IN_TF2:
            note = f"TF 2's {old} here (name, data, step); a TF 1.x model_fn means {new} (--fix rewrites it)"
            yield Use(path, line, old, compatibility.DIFFERS, note)
        else:
            note = f"a TF 1.x name, not in TensorFlow >= 2.16: use {new} (--fix rewrites it)"
            yield Use(path, line, old, compatibility.REFUSED, note)


# tf.data.Dataset's TF 1.x iterator methods, which TF 2 removed (TensorFlow's upgrader rewrites them)
_ITERATOR_METHODS = {
    "make_one_shot_iterator": "tf.compat.v1.data.make_one_shot_iterator(dataset)",
    "make_initializable_iterator": "tf.compat.v1.data.make_initializable_iterator(dataset)",
}


_ITERATOR_USES = {f"tf.data.Dataset.{method}" for method in _ITERATOR_METHODS}  # the names their uses get


def _iterator_method_uses(tree: ast.AST, path: str) -> Iterator[Use]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args:
            if node.func.attr in _ITERATOR_METHODS:
                note = f"TF 2's datasets have no {node.func.attr}(): use {_ITERATOR_METHODS[node.func.attr]} (--fix)"
                yield Use(path, node.lineno, f"tf.data.Dataset.{node.func.attr}", compatibility.REFUSED, note)


# Estimator methods TF 2.15's tf.estimator classes no longer had (tf.compat.v1.estimator's did): their uses run
# here, and `--fix` renames them.
_METHOD_RENAMES = {"export_savedmodel": "export_saved_model"}
_RENAMED_METHOD_NOTE = (
    "TF 2.15's tf.estimator.Estimator raised AttributeError here (tf.compat.v1.estimator's had it); it runs here, "
    "and --fix renames it to {new}"
)


def _old_method_calls(tree: ast.AST) -> Iterator[tuple[ast.Attribute, bool]]:
    """Each `x.<old name>(...)` call of `_METHOD_RENAMES`, and whether `--fix` can rename it: not where it passes
    the TF 1.x keyword the new name lacks (`strip_default_attrs`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _METHOD_RENAMES:
            yield node.func, not any(keyword.arg == "strip_default_attrs" for keyword in node.keywords)


def _renamed_method_uses(tree: ast.AST, path: str) -> Iterator[Use]:
    for method, renamable in _old_method_calls(tree):
        note = _RENAMED_METHOD_NOTE.format(new=_METHOD_RENAMES[method.attr])
        if not renamable:
            note += " where the call drops strip_default_attrs (the new name always strips them)"
        yield Use(path, method.lineno, f"tf.estimator.Estimator.{method.attr}", compatibility.DIFFERS, note)


def _with_methods_renamed(text: str) -> str:
    """`text` with each renamable call of `_old_method_calls` renamed in place (the rest of the line as it was)."""
    lines = text.splitlines(keepends=True)
    renamable = [method for method, can in _old_method_calls(ast.parse(text)) if can]
    for node in sorted(renamable, key=lambda n: (n.end_lineno, n.end_col_offset), reverse=True):
        assert node.end_lineno is not None and node.end_col_offset is not None
        line = lines[node.end_lineno - 1].encode()  # ast's offsets count UTF-8 bytes
        start = node.end_col_offset - len(node.attr)
        renamed = line[:start] + _METHOD_RENAMES[node.attr].encode() + line[node.end_col_offset :]
        lines[node.end_lineno - 1] = renamed.decode()
    return "".join(lines)


def _is_static_shape(node: ast.expr) -> bool:
    """`x.shape`, `x.get_shape()` or `x.shape.dims`: a TensorShape, whose items were Dimensions in TF 1.x."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr == "get_shape"
    return isinstance(node, ast.Attribute) and (
        node.attr == "shape" or (node.attr == "dims" and _is_static_shape(node.value))
    )


def _dimension_values(tree: ast.AST) -> Iterator[ast.Attribute]:
    """Each `<shape>[i].value`: TF 1.x's `Dimension.value`, an AttributeError on TF 2's int dimensions."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "value"
            and isinstance(node.value, ast.Subscript)
            and _is_static_shape(node.value.value)
        ):
            yield node


_DIMENSION_NOTE = (
    "TF 1.x's Dimension.value: a TF 2 shape's item is an int or None, which has no .value; "
    "use tf.compat.v1.dimension_value(shape[i]) (--fix rewrites it)"
)


def _dimension_value_uses(tree: ast.AST, path: str) -> Iterator[Use]:
    for node in _dimension_values(tree):
        yield Use(path, node.lineno, "tf.compat.v1.Dimension.value", compatibility.REFUSED, _DIMENSION_NOTE)


def _with_dimension_values(text: str) -> str:
    """`text` with each one-line `<shape>[i].value` as `<tf>.compat.v1.dimension_value(<shape>[i])`, `<tf>` the
    name the file binds to TensorFlow (left as it is where it binds none)."""
    tree = ast.parse(text)
    aliases = _Aliases()
    aliases.visit(tree)
    spellings = {point: name for name, point in aliases.names.items() if point in ("tf", "tf.compat.v1")}
    function = (
        f"{spellings['tf']}.compat.v1.dimension_value"
        if "tf" in spellings
        else f"{spellings['tf.compat.v1']}.dimension_value"
        if "tf.compat.v1" in spellings
        else None
    )
    lines = text.splitlines(keepends=True)
    nodes = [node for node in _dimension_values(tree) if node.lineno == node.end_lineno]
    for node in sorted(nodes, key=lambda n: n.col_offset, reverse=True) if function else []:
        assert node.end_col_offset is not None
        line = lines[node.lineno - 1].encode()  # ast's offsets count UTF-8 bytes
        inner = line[node.value.col_offset : node.value.end_col_offset]
        replaced = line[: node.col_offset] + f"{function}(".encode() + inner + b")" + line[node.end_col_offset :]
        lines[node.lineno - 1] = replaced.decode()
    return "".join(lines)


def check_source(source: str, path: str = "<string>") -> list[Use]:
    """Every use of the surface in `source`, and every TF 1.x name TensorFlow >= 2.16 lacks, in line order."""
    tree = ast.parse(source, filename=path)
    aliases = _Aliases()
    aliases.visit(tree)
    found = set(_names_in(tree, aliases))
    program = _program_uses(tree, (name for _, name in found))
    uses = []
    for line, name in sorted({(line, _shortest_known(name)) for line, name in found if _on_surface(name)}):
        entry = compatibility.lookup(name).in_program(program)
        if entry.status == compatibility.UNKNOWN and _a_namespace_that_runs(name):  # `estimator = tf.estimator`
            entry = compatibility.Entry(compatibility.SAME, "the namespace of TF 2.15's names, after install()")
        entry = _estimator_name_verdict(name) or _contrib_home_verdict(name) or entry
        if entry.status == compatibility.REFUSED and (fixed := upgrade.rewritten(name)) is not None:
            note = f"{entry.note}. --fix rewrites it to {fixed}"
            if name.startswith("tf.contrib."):  # the table's note is for the names --fix cannot move
                home = "as a TF 2 call" if fixed == "a TF 2 call" else f"to {fixed}, its TF 2 home"
                note = f"tf.contrib is not in TensorFlow 2: --fix rewrites it {home}"
            entry = compatibility.Entry(entry.status, note)
        uses.append(Use(path, line, name, entry.status, entry.note))
    uses += [
        *_legacy_module_uses(tree, path),
        *_tf1_uses(found, path),
        *_iterator_method_uses(tree, path),
        *_renamed_method_uses(tree, path),
        *_dimension_value_uses(tree, path),
    ]
    return sorted(uses, key=lambda use: (use.line, use.name))


def python_files(paths: Iterable[str]) -> list[str]:
    """The `.py` files and notebooks of `paths` (files as given, folders searched), sorted, each once."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for folder, subfolders, names in os.walk(path):
                subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
                found += [os.path.join(folder, name) for name in sorted(names) if name.endswith((".py", ".ipynb"))]
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def _read(path: str) -> tuple[str, str]:
    """(the file's text, the Python the check reads in it: a notebook's code cells as one program).

    Raises:
        OSError, UnicodeDecodeError: the file cannot be read; ValueError: a notebook that is not JSON.
    """
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    return text, notebook.python_source(text) if notebook.is_notebook(path) else text


def _in_cells(path: str, source: str, uses: list[Use]) -> list[Use]:
    """A notebook's uses, each placed at its cell and line (`nb.ipynb cell 3`); a Python file's as they are."""
    if not notebook.is_notebook(path):
        return uses
    placed = []
    for use in uses:
        where = notebook.place(source, use.line)
        placed.append(dataclasses.replace(use, path=f"{path} cell {where.cell}", line=where.line))
    return placed


def is_entry_point(tree: ast.AST) -> bool:
    """A program's entry: `if __name__ == "__main__":`, or a call of `app.run` (absl, tf.app, tf.compat.v1.app)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "__name__":
            return True
        if isinstance(node, ast.Call):
            chain = _dotted(node.func)
            if chain is not None and chain[1][-2:] == ["app", "run"] or chain == ("app", ["run"]):
                return True
    return False


def with_install_line(source: str, path: str) -> str:
    """`source` with INSTALL_LINE before its first top-level TensorFlow import, so that
    `from tensorflow.estimator import ...` below it finds the installed names (unchanged if the file imports
    no TensorFlow, or installs already)."""
    tree = ast.parse(source, filename=path)
    if _imports_compat_estimator(tree):
        return source
    aliases = _Aliases()
    aliases.visit(tree)
    if not aliases.imports_tensorflow:
        return source
    lines = source.splitlines(keepends=True)
    before = min(aliases.imports_tensorflow) - 1
    return "".join([*lines[:before], INSTALL_LINE + "\n", *lines[before:]])


def _imports_compat_estimator(tree: ast.AST) -> bool:
    """Whether the file calls compat.estimator's `install()` (`compat.estimator.install()`, or `install` imported
    from compat.estimator, or `<name>.install()` with `<name>` bound to compat.estimator)."""
    bound = {"compat.estimator"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {alias.asname for alias in node.names if alias.name == "compat.estimator" and alias.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "compat":
            bound |= {alias.asname or alias.name for alias in node.names if alias.name == "estimator"}
        elif isinstance(node, ast.ImportFrom) and node.module == "compat.estimator":
            if any(alias.name == "install" for alias in node.names):
                return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "install":
            chain = _dotted(node.func.value)
            if chain is not None and ".".join([chain[0], *chain[1]]) in bound:
                return True
    return False


def install_diff(source: str, path: str) -> str:
    """The unified diff adding INSTALL_LINE (`with_install_line`), "" when none is needed."""
    return _diff(source, with_install_line(source, path), path)


def _diff(before: str, after: str, path: str) -> str:
    lines = before.splitlines(keepends=True)
    return "".join(difflib.unified_diff(lines, after.splitlines(keepends=True), fromfile=path, tofile=path))


FIX_COMMENT = "# compat.estimator.check: "  # starts each comment --fix adds above a use it could not rewrite


def fixed_source(source: str, path: str) -> str:
    """`source` as `--fix` writes it: TF 1.x names rewritten by TensorFlow's upgrader with TF 2.15's renames
    (upgrade.py), the install line in an entry point or a file using the Estimator, and a comment above each
    use still refused or unknown, naming what to do (the check reports those uses: what needs a person).

    Raises:
        upgrade.UpgradeError: the file does not parse.
    """
    spelled = upgrade.contrib_aliases_spelled_out(source)
    spelled = upgrade.contrib_modules_moved(upgrade.contrib_layers_spelled_out(spelled))
    text = upgrade.upgrade_source(spelled, path, _is_tf1_program(check_source(source, path))).source
    text = _with_dimension_values(_with_methods_renamed(text))
    if is_entry_point(ast.parse(text)) or _uses_estimator(text, path):
        text = with_install_line(text, path)
    open_uses = [
        use for use in check_source(text, path) if use.status in (compatibility.REFUSED, compatibility.UNKNOWN)
    ]
    commented = _with_comments(text, open_uses)
    try:
        ast.parse(commented)
    except SyntaxError:  # a comment would have landed where none can stand: the report names those uses
        commented = text
    return upgrade.contrib_imports_deferred(commented, _stand_in_comment)


def _stand_in_comment(name: str) -> str:
    """The comment --fix writes above the stand-in it binds for `name`, a tf.contrib module or name with no home."""
    notes = [use.note for use in check_source(f"import tensorflow as tf\n_ = {name}\n") if use.name == name]
    note = notes[0] if notes else "tf.contrib is not in TensorFlow 2, and this name has no home: replace it by hand"
    return (
        f"{FIX_COMMENT}{name}: {note}. --fix bound a stand-in, so that this file imports: a use of it stops, naming it"
    )


def _is_tf1_program(uses: list[Use]) -> bool:
    """Whether a file is TF 1.x code: it uses a name TensorFlow 2 lacks (`tf.logging`, `tf.layers`, ...)."""
    return any(
        (
            use.status == compatibility.REFUSED
            and (_tf1_rename(use.name) is not None or use.name.startswith(("tf.layers.", "tf.train.", "tf.contrib.")))
        )
        or use.name in _ITERATOR_USES
        for use in uses
    )


def _with_comments(text: str, uses: list[Use]) -> str:
    """`text` with a FIX_COMMENT line above the statement holding each use (its first line, its indentation)."""
    statements = [node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.stmt)]
    lines = text.splitlines(keepends=True)
    notes: dict[int, list[str]] = {}
    for use in uses:
        holding = [node for node in statements if node.lineno <= use.line <= (node.end_lineno or node.lineno)]
        innermost = min(holding, key=lambda node: (node.end_lineno or node.lineno) - node.lineno, default=None)
        first = innermost.lineno if innermost is not None else use.line
        notes.setdefault(first, []).append(f"{use.name}: {use.note}")
    for first in sorted(notes, reverse=True):
        previous = lines[first - 2] if first >= 2 else ""
        if previous.lstrip().startswith(FIX_COMMENT):
            continue  # commented by an earlier --fix
        indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
        lines.insert(first - 1, f"{indent}{FIX_COMMENT}{'; '.join(dict.fromkeys(notes[first]))}\n")
    return "".join(lines)


def _imports_tf_slim(source: str) -> bool:
    """Whether `source` imports tf_slim (a comment or string naming it does not count)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(
        (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tf_slim")
        or (isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "tf_slim" for alias in node.names))
        for node in ast.walk(tree)
    )


def _uses_estimator(source: str, path: str) -> bool:
    return any(".estimator" in use.name or use.name.startswith("tensorflow") for use in check_source(source, path))


def _summary(uses: list[Use]) -> dict[str, int]:
    statuses = (compatibility.SAME, compatibility.DIFFERS, compatibility.REFUSED, compatibility.UNKNOWN)
    return {status: sum(use.status == status for use in uses) for status in statuses}


def _verdict(counts: dict[str, int]) -> str:
    if counts[compatibility.REFUSED]:
        return "uses something refused"
    if counts[compatibility.DIFFERS] or counts[compatibility.UNKNOWN]:
        return "runs, with the differences listed" if not counts[compatibility.UNKNOWN] else "unknown names"
    return "runs as on TF 2.15" if sum(counts.values()) else "no Estimator surface"


# Estimators whose trained models to_keras can make native Keras models (over the columns
# docs/migration.md lists), TF2's and tf.compat.v1's classes; any other Estimator converts through its export.
_NATIVE = {
    f"tf.{namespace}estimator.{name}": name
    for namespace in ("", "compat.v1.")
    for name in canned_recipe.native_classes()
}
_NATIVE["tf.keras.estimator.model_to_estimator"] = "model_to_estimator"


def _conversions(uses: list[Use]) -> str:
    """What of the file's Estimators `to_keras` converts, in a few words ('' when it uses none)."""
    names = {use.name for use in uses}
    native = sorted({_NATIVE[name] for name in names & set(_NATIVE)})
    if native:
        return "its " + ", ".join(native) + " models (natively over the columns docs/migration.md lists)"
    estimators = {"tf.estimator.Estimator", "tf.compat.v1.estimator.Estimator"}
    return (
        "its Estimators (through their exports)"
        if names & estimators or any(".estimator." in name for name in names)
        else ""
    )


def _print_text(by_file: dict[str, list[Use]], unreadable: dict[str, str], diffs: dict[str, str] | None) -> None:
    """The text report: a line per use and per file, the totals, then the install lines when asked."""
    every_use = [use for uses in by_file.values() for use in uses]
    for path, uses in by_file.items():
        for use in uses:
            with_note = bool(use.note) and (use.status != compatibility.SAME or use.note == _LEGACY_NOTE)
            note = f": {use.note}" if with_note else ""
            print(f"{use.path}:{use.line}: {use.name}  {use.status}{note}")
        if uses:
            counts = _summary(uses)
            shown = ", ".join(f"{count} {status}" for status, count in counts.items() if count)
            print(f"{path}: {len(uses)} uses ({shown}): {_verdict(counts)}")
    for path, reason in unreadable.items():
        print(f"{path}: not checked ({reason})")
    verdicts = [_verdict(_summary(uses)) for uses in by_file.values() if uses]
    files = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
    print(f"{len(by_file)} files, {len(every_use)} uses" + (f"; files: {files}" if files else ""))
    if any(use.name.startswith("tf.keras.") for use in every_use):
        print(
            "Keras 2 teams: with TF_USE_LEGACY_KERAS=1 tf.keras is Keras 2 (tf_keras); the same code runs, its "
            "model_fns' Keras layers with TF 2.15's semantics, and nothing above needs changing for it "
            '(docs/migration.md, "Teams that keep Keras 2")'
        )
    converts = _conversions(every_use)
    if converts:
        print(
            f"To leave tf.estimator without retraining: compat.estimator.to_keras(estimator) turns {converts} "
            "into Keras 3 models with their trained weights (docs/migration.md)"
        )
    if diffs is not None:
        for path, diff in diffs.items():
            print(diff or f"# {path}: no change needed", end="" if diff else "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat.estimator.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="Python files and notebooks, or folders to search for them")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    changes = parser.add_mutually_exclusive_group()
    changes.add_argument("--diff", action="store_true", help="print the changes --fix would make, writing nothing")
    changes.add_argument("--fix", action="store_true", help="rewrite the files in place (each whole or not at all)")
    args = parser.parse_args(argv)

    files = python_files(args.paths)
    if not files and (args.fix or args.diff):
        print(f"no Python files in {', '.join(args.paths)}: nothing checked, nothing changed")
        return 2
    if args.fix and _fix_files(files):
        return 2
    by_file: dict[str, list[Use]] = {}
    diffs: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    for path in files:
        try:
            _, source = _read(path)
            by_file[path] = _in_cells(path, source, check_source(source, path))
            if args.diff and by_file[path]:
                diffs[path] = _diff(source, fixed_source(source, path), path)
        except (OSError, ValueError, SyntaxError, upgrade.UpgradeError) as error:
            unreadable[path] = f"{type(error).__name__}: {error}"
    every_use = [use for uses in by_file.values() for use in uses]
    totals = _summary(every_use)

    if args.format == "json":
        report = {
            "files": {
                path: {
                    "uses": [dataclasses.asdict(use) for use in uses],
                    "summary": _summary(uses),
                    "verdict": _verdict(_summary(uses)),
                    **({"diff": diffs[path]} if path in diffs else {}),
                }
                for path, uses in by_file.items()
            },
            "unreadable": unreadable,
            "summary": totals,
        }
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        _print_text(by_file, unreadable, diffs if args.diff else None)
    if unreadable:
        return 2
    return 1 if totals[compatibility.REFUSED] else 0


def _fix_files(files: list[str]) -> list[str]:
    """Rewrites each file as `fixed_source` gives it, keeping its mode; returns one line for each file it cannot
    change (unreadable, not Python, read-only, in a folder it cannot write). When any is refused, none is written."""
    fixed: dict[str, str] = {}
    refused: list[str] = []
    slim: list[str] = []  # files that now import tf-slim
    for path in files:
        try:
            text, source = _read(path)
            ast.parse(source, filename=path)
            problem = _unwritable(path)
            if problem:
                refused.append(f"{path}: {problem}")
                continue
            changed = fixed_source(source, path)
        except SyntaxError as error:
            where = error.lineno or 0
            if notebook.is_notebook(path):
                place = notebook.place(source, where)
                where_text = f"cell {place.cell}, line {place.line}"
            else:
                where_text = f"line {where}"
            refused.append(f"{path}: does not parse as Python ({where_text}); fix it, then run --fix again")
        except (OSError, ValueError, upgrade.UpgradeError) as error:
            refused.append(f"{path}: {error}")
        else:
            if changed != source:
                fixed[path] = notebook.with_python_source(text, changed) if notebook.is_notebook(path) else changed
            if _imports_tf_slim(changed) and not _imports_tf_slim(source):
                slim.append(path)
    for line in refused:
        print(f"{line}; no file was changed")
    if refused:
        return refused
    unwritten = _write_all(fixed)
    for path in slim if not unwritten else []:
        print(f"{path}: imports tf_slim now (TF 1.x's tf.contrib.layers and slim): pip install tf-slim")
    return unwritten


def _unwritable(path: str) -> str | None:
    """Why `path` cannot be rewritten in place (whole: a new file in its folder, renamed over it), or None."""
    if not os.stat(path).st_mode & stat.S_IWUSR:
        return "read-only; make it writable to --fix it"
    from compat.core import atomic

    try:
        atomic.probe_writable(os.path.dirname(os.path.abspath(path)))
    except OSError as error:
        return f"its folder cannot be written ({error.strerror or error})"
    return None


def _write_all(fixed: dict[str, str]) -> list[str]:
    """Writes each file whole (a temporary file renamed over it), with the mode it had; a write that fails stops
    the rest and is said in one line, naming the files already rewritten."""
    from compat.core import atomic

    done: list[str] = []
    for path, text in fixed.items():
        mode = stat.S_IMODE(os.stat(path).st_mode)
        try:
            atomic.write_text(path, text)
            os.chmod(path, mode)
        except OSError as error:
            line = f"{path}: cannot be written ({error.strerror or error}); rewritten before it: {done or 'none'}"
            print(line)
            return [line]
        done.append(path)
        print(f"fixed {path}")
    return []


if __name__ == "__main__":
    sys.exit(main())
