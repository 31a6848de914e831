"""TF 1.x names rewritten for TensorFlow >= 2.16, as TF 2.15's own upgrader rewrote them (`check --fix`).

TensorFlow still ships its upgrader (`tensorflow.tools.compatibility`, `tf_upgrade_v2`), but TF 2.21's
tables dropped renames that TF 2.15's had: `tf.layers.dense`, `tf.layers.dropout`, TF 1's
`tf.summary.scalar`, `tf.contrib.estimator.stop_if_no_decrease_hook`, `tf.contrib.tpu.TPUEstimator`, ...
This module runs TensorFlow's own upgrader with TF 2.21's tables (its keyword renames, argument
reorders, function transformers such as `dataset.make_one_shot_iterator()` ->
`tf.compat.v1.data.make_one_shot_iterator(dataset)`) completed with TF 2.15's tables, kept as facts in
tf215_upgrade_renames.json (tests/helpers/tf215_upgrade_renames.py lists them under TF 2.15): its renames,
and the transformers it gave the canned estimators (`loss_reduction=SUM`, TF 1.x's default).

`tf.contrib.estimator.<name>` becomes TF 2.15's home of that name (`contrib_estimator_renames`).
`symbol_renames()` reads the table without TensorFlow (the migration check reports with it);
`upgrade_source()` loads TensorFlow's upgrader.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import io
import json
import os
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from compat.core.errors import UserError

# TF 1.x names that TF 2 also has, with TF 2's meaning: a TF 1.x program meant the tf.compat.v1 one (TF 2.15's
# upgrader rewrote them), a TF 2 program means TF 2's. The check says so rather than refusing them.
SAME_NAME_IN_TF2 = frozenset(f"tf.summary.{name}" for name in ("audio", "histogram", "image", "scalar", "text"))


class UpgradeError(UserError, ValueError):
    """TensorFlow's upgrader could not read a file (it does not parse)."""


@cache
def _tf215_tables() -> dict:
    with open(os.path.join(os.path.dirname(__file__), "tf215_upgrade_renames.json"), encoding="utf-8") as stream:
        return json.load(stream)


def symbol_renames() -> dict[str, str]:
    """TF 2.15's upgrader's renames: a TF 1.x name (`tf.layers.dense`, `tf.logging.info`) -> its TF 2 spelling."""
    return _tf215_tables()["symbol_renames"]


def rewritten(name: str) -> str | None:
    """What `--fix` makes of the TF 1.x name `name` (`tf.layers.dense` -> `tf.compat.v1.layers.dense`), or
    "a TF 2 call" for one TF 2.15's upgrader rewrote as a call (`tf.contrib.layers.xavier_initializer`);
    None when it leaves it. Read from TF 2.15's tables, without TensorFlow."""
    tables = _tf215_tables()
    if name in tables["symbol_renames"]:
        return tables["symbol_renames"][name]
    return "a TF 2 call" if name in tables["function_transformers"] else None


@cache
def tf2_names() -> frozenset[str]:
    """The renamed names that TensorFlow 2 has as well (`tf.keras.optimizers.Adam`, `tf.debugging.assert_equal`,
    `tf.summary.scalar`): a TF 1.x program meant TF 1.x's, a TF 2 program means TF 2's own."""
    return frozenset(_tf215_tables()["tf2_names"])


def _with_tf215_tables(spec: Any, tf_upgrade_v2: Any, tf1_program: bool) -> Any:
    """TF 2.21's upgrader's tables completed with what TF 2.15's had and 2.21's dropped.

    For a TF 1.x program (`tf1_program`), all of it, as TF 2.15's upgrader ran: symbol renames, keyword renames,
    argument reorders, and which of the upgrader's own transformer functions a name gets (a canned estimator's
    `loss_reduction=tf.keras.losses.Reduction.SUM`, TF 1.x's default, added when the call leaves it out; its
    tf.compat.v1 class when given a TF 1.x optimizer). TF 2.21's own entries are kept. For a TF 2 program,
    only the renames of names TensorFlow 2 lacks: its `tf.keras.optimizers.Adam` and
    `tf.estimator.DNNClassifier(...)` mean TF 2's and stay as they are.
    """
    tables = _tf215_tables()
    spec.symbol_renames.update(tables["symbol_renames"])
    for old, new in contrib_estimator_renames().items():
        spec.symbol_renames.setdefault(old, new)
    if not tf1_program:
        for name in tf2_names() & set(spec.symbol_renames):
            del spec.symbol_renames[name]
        return spec
    for name, keywords in tables["function_keyword_renames"].items():
        spec.function_keyword_renames.setdefault(name, keywords)
    for name, order in tables["function_reorders"].items():
        spec.function_reorders.setdefault(name, order)
    spec.reordered_function_names.update(tables["reordered_function_names"])
    for name, transformer in tables["function_transformers"].items():
        function = getattr(tf_upgrade_v2, transformer["function"], None)
        if name not in spec.function_transformers and function is not None:
            made: Callable = functools.partial(function, **transformer["keywords"])
            if transformer["function"] == _WITH_LOSS_REDUCTION:
                made = _with_tf1_loss_reduction(made)
            spec.function_transformers[name] = made
    return spec


# TF 2.15's transformer for the canned estimators that TF 2.21's upgrader no longer applies; 2.21 still has a
# function of that name, which only does the rename part
_WITH_LOSS_REDUCTION = "_rename_if_arg_found_and_add_loss_reduction_transformer"


def _with_tf1_loss_reduction(rename: Callable) -> Callable:
    """`rename`, after adding `loss_reduction=tf.keras.losses.Reduction.SUM` to a canned estimator's call that
    leaves it out, as TF 2.15's upgrader did: TF 1.x's canned estimators summed the loss over the batch, TF 2's
    average it, and a TF 1.x program's learning rates were tuned for the sum."""

    def transform(parent: Any, node: ast.Call, full_name: str, name: str, logs: list) -> ast.Call:
        import pasta
        from tensorflow.tools.compatibility import ast_edits

        if not any(keyword.arg == "loss_reduction" for keyword in node.keywords):
            value = pasta.parse("tf.keras.losses.Reduction.SUM").body[0].value
            node.keywords.append(ast.keyword(arg="loss_reduction", value=value))
            logs.append(
                (
                    ast_edits.INFO,
                    node.lineno,
                    node.col_offset,
                    f"{full_name or name}: loss_reduction=tf.keras.losses.Reduction.SUM, TF 1.x's default, added\n",
                )
            )
        return rename(parent, node, full_name, name, logs) or node

    return transform


@cache
def contrib_estimator_renames() -> dict[str, str]:
    """`tf.contrib.estimator.<name>` -> where TF 2.15 kept it (`tf.estimator.<name>`, else
    `tf.estimator.experimental.<name>`), for each such name of TF 2.15's public API (add_metrics,
    the early-stopping hooks, ...): TF 1.x programs imported them from tf.contrib."""
    from compat.estimator import compatibility

    members = {
        name.rsplit(".", 1)[1]
        for name in compatibility.tf215_names()
        if name.count(".") == 1 + name.startswith("estimator.experimental.") and name.startswith("estimator.")
    }
    homes = {member: compatibility.contrib_estimator_home(member) for member in sorted(members)}
    return {f"tf.contrib.estimator.{member}": f"tf.{home}" for member, home in homes.items() if home}


def _tensorflow_name(tree: ast.AST) -> str | None:
    """The name the file binds to `tensorflow` itself at its top level (`import tensorflow as tf`), or None."""
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tensorflow":
                    return alias.asname or "tensorflow"
    return None


def _contrib_imports(tree: ast.AST) -> dict[str, tuple[str, ast.ImportFrom]]:
    """{alias: (`tf.contrib.<module>`, its statement)} for each top-level `from tensorflow.contrib import <module>
    [as alias]` (BERT's `from tensorflow.contrib import tpu as contrib_tpu`)."""
    found = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.ImportFrom) and node.module == "tensorflow.contrib" and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = (f"tf.contrib.{alias.name}", node)
    return found


def contrib_aliases_spelled_out(source: str) -> str:
    """`source` with each `<alias>.<name>` of a `from tensorflow.contrib import <module> as <alias>` spelled
    `tf.contrib.<module>.<name>` where TF 2.15's upgrader has a TF 2 home for that name (which the upgrader
    then gives it); an import none of whose names is left is removed. TensorFlow's upgrader renames only
    the dotted spellings, so such a file kept its contrib imports, which TensorFlow 2 does not have."""
    tree = ast.parse(source)
    tensorflow, imports = _tensorflow_name(tree), _contrib_imports(tree)
    if tensorflow is None or not imports:
        return source
    edits: list[tuple[int, int, int, str]] = []  # (line, start, end, text), ast's UTF-8 byte offsets
    spelled_out: set[int] = set()  # the alias Name nodes of the edits
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in imports:
            module = imports[node.value.id][0]
            if rewritten(f"{module}.{node.attr}") is not None and node.value.end_col_offset is not None:
                spelled = tensorflow + module[len("tf") :]
                edits.append((node.value.lineno, node.value.col_offset, node.value.end_col_offset, spelled))
                spelled_out.add(id(node.value))
    still_used = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id in imports and id(node) not in spelled_out
    }
    lines = source.splitlines(keepends=True)
    for line, start, end, text in sorted(edits, reverse=True):
        raw = lines[line - 1].encode()
        lines[line - 1] = (raw[:start] + text.encode() + raw[end:]).decode()
    statements = {id(node): node for _, node in imports.values()}.values()
    for statement in sorted(statements, key=lambda node: -node.lineno):
        names = {alias.asname or alias.name for alias in statement.names}
        if not names & still_used and statement.end_lineno is not None:
            del lines[statement.lineno - 1 : statement.end_lineno]
    return "".join(lines)


@cache
def tf_slim_names() -> dict[str, frozenset[str]]:
    """{"layers": ..., "slim": ...}: the public names of tf-slim 1.1.0 (`tf_slim.layers`, `tf_slim`), where TF 1.x's
    tf.contrib.layers and tf.contrib.slim live on with their variable names; recorded by
    tests/helpers/tf_slim_names.py, so that the check never imports tf_slim."""
    with open(os.path.join(os.path.dirname(__file__), "tf_slim_names.json"), encoding="utf-8") as stream:
        recorded = json.load(stream)
    return {"layers": frozenset(recorded["layers"]), "slim": frozenset(recorded["slim"])}


# tf.contrib's modules of which this project has names of its own: compat/estimator/contrib_<module>.py
_OWN_CONTRIB = ("layers", "metrics")


@cache
def _own_contrib_names(module: str) -> frozenset[str]:
    """The names this project has of tf.contrib.`module` ("layers", "metrics"): its module's `__all__`."""
    import importlib

    return frozenset(importlib.import_module(f"compat.estimator.contrib_{module}").__all__)


def contrib_home(name: str) -> str | None:
    """Where `--fix` sends the TF 1.x name `name` of tf.contrib.layers, tf.contrib.metrics or tf.contrib.slim: this
    project's `compat.estimator.contrib_<module>.<x>` where it has it (contrib_layers.py, contrib_metrics.py),
    else tf-slim's `tf_slim.layers.<x>` or `tf_slim.<x>`; None when none has it."""
    member = name.split(".")[3] if name.count(".") >= 3 else ""
    for module in _OWN_CONTRIB:
        if name.startswith(f"tf.contrib.{module}.") and member in _own_contrib_names(module):
            return f"compat.estimator.contrib_{module}.{name[len(f'tf.contrib.{module}.') :]}"
    for module, home in (("layers", "tf_slim.layers"), ("slim", "tf_slim")):
        prefix = f"tf.contrib.{module}."
        if name.startswith(prefix) and member in tf_slim_names()[module]:
            return f"{home}.{name[len(prefix) :]}"
    return None


def _contrib_module_imports(tree: ast.AST) -> Iterator[tuple[ast.stmt, str, str]]:
    """(statement, module, alias) for each top-level one-name import of tf.contrib.layers or tf.contrib.slim:
    `from tensorflow.contrib import layers as contrib_layers`, `import tensorflow.contrib.slim as slim`."""
    for node in getattr(tree, "body", []):
        if len(getattr(node, "names", [])) != 1:
            continue
        alias = node.names[0]
        if isinstance(node, ast.ImportFrom) and node.module == "tensorflow.contrib" and not node.level:
            module = alias.name
        elif isinstance(node, ast.Import) and alias.name.startswith("tensorflow.contrib.") and alias.asname:
            module = alias.name[len("tensorflow.contrib.") :]
        else:
            continue
        if module in ("layers", "slim", "metrics"):
            yield node, module, alias.asname or alias.name


def _module_import(module: str, members: set[str], alias: str) -> str | None:
    """The import giving `alias` every one of `members` of tf.contrib.`module` ("layers", "metrics" or "slim"):
    this project's contrib_<module>, else tf-slim's; None when neither has them all."""
    if module in _OWN_CONTRIB and members <= _own_contrib_names(module):
        own = f"contrib_{module}"
        return f"from compat.estimator import {own}{'' if alias == own else f' as {alias}'}\n"
    if module not in tf_slim_names() or not members <= tf_slim_names()[module]:
        return None
    return f"from tf_slim import layers as {alias}\n" if module == "layers" else f"import tf_slim as {alias}\n"


def contrib_modules_moved(source: str) -> str:
    """`source` with each import of tf.contrib.layers or tf.contrib.slim as a module (`from tensorflow.contrib
    import layers as contrib_layers`) importing the module that has every name the file takes from it
    (`_module_import`): TF 1.x's layers with their variable names (`LayerNorm/gamma`), so TF 1.x checkpoints
    restore."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for statement, module, alias in sorted(_contrib_module_imports(tree), key=lambda found: -found[0].lineno):
        uses = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == alias]
        taken = [  # `<alias>.<member>`: each use of the module that takes a name from it
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == alias
        ]
        spelled = _module_import(module, {node.attr for node in taken}, alias) if taken else None
        if spelled is None or len(taken) < len(uses):
            continue  # a name no home has, or the module itself passed around: left as it is, and reported
        indent = lines[statement.lineno - 1][: statement.col_offset]
        lines[statement.lineno - 1 : statement.end_lineno] = [indent + spelled]
    return "".join(lines)


def _dotted_contrib_home(module: str, name: str) -> tuple[str, str] | None:
    """(the spelling of tf.contrib.`module`, the import giving it) for a dotted `tf.contrib.<module>.<name>` use
    with a home outside TensorFlow (`contrib_home`), where TensorFlow's upgrader has no TF 2 home of its
    own for it (which it then gives it)."""
    dotted = f"tf.contrib.{module}.{name}"
    home = None if rewritten(dotted) is not None else contrib_home(dotted)
    if home is None:
        return None
    if home.startswith("compat."):
        own = f"contrib_{module}"
        return own, f"from compat.estimator import {own}\n"
    return home.rsplit(".", 1)[0], "import tf_slim\n"


def contrib_layers_spelled_out(source: str) -> str:
    """`source` with each `tf.contrib.layers.<name>` this project has (`layer_norm`) spelled `contrib_layers.<name>`
    and each other one tf-slim has (`tf.contrib.layers.fully_connected`, `tf.contrib.slim.conv2d`) spelled as
    tf-slim's, their imports added after the file's `import tensorflow`."""
    tree = ast.parse(source)
    tensorflow = _tensorflow_name(tree)
    bound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    already = _own_contrib_imports(tree)  # `from compat.estimator import contrib_metrics`: an earlier --fix's
    if tensorflow is None or bound & ({"contrib_layers", "contrib_metrics", "tf_slim"} - already):
        return source
    edits, imports = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        module = node.value  # `<tf>.contrib.<layers or slim>`
        if (
            isinstance(module, ast.Attribute)
            and module.attr in ("layers", "slim", "metrics")
            and isinstance(module.value, ast.Attribute)
            and module.value.attr == "contrib"
            and isinstance(module.value.value, ast.Name)
            and module.value.value.id == tensorflow
            and module.end_col_offset is not None
            and (home := _dotted_contrib_home(module.attr, node.attr)) is not None
        ):
            edits.append((module.lineno, module.col_offset, module.end_col_offset, home[0]))
            imports.append(home[1])
    if not edits:
        return source
    lines = source.splitlines(keepends=True)
    for line, start, end, spelled in sorted(edits, reverse=True):
        raw = lines[line - 1].encode()
        lines[line - 1] = (raw[:start] + spelled.encode() + raw[end:]).decode()
    statement = next(
        node
        for node in tree.body
        if isinstance(node, ast.Import) and any(alias.name == "tensorflow" for alias in node.names)
    )
    added = sorted({line for line in imports if line.split()[-1] not in already})
    lines[statement.end_lineno or statement.lineno : statement.end_lineno or statement.lineno] = added
    return "".join(lines)


def _own_contrib_imports(tree: ast.AST) -> set[str]:
    """The names a file binds by `from compat.estimator import contrib_<module>` (as itself)."""
    return {
        alias.name
        for node in getattr(tree, "body", [])
        if isinstance(node, ast.ImportFrom) and node.module == "compat.estimator" and not node.level
        for alias in node.names
        if alias.name.startswith("contrib_") and alias.asname in (None, alias.name)
    }


def _contrib_statements(tree: ast.AST) -> Iterator[tuple[ast.stmt, list[tuple[str, str]]]]:
    """(statement, [(bound name, the tf.contrib module or name it stands for)]) for each top-level import from
    tf.contrib left in a file: `from tensorflow.contrib import foo as bar`, `from tensorflow.contrib.foo import
    baz`, `import tensorflow.contrib.foo as bar`."""
    for node in getattr(tree, "body", []):
        if (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and (node.module or "").split(".")[:2]
            == [
                "tensorflow",
                "contrib",
            ]
        ):
            if any(alias.name == "*" for alias in node.names):
                continue  # no name to bind a stand-in to: left as it is, and reported
            module = "tf" + (node.module or "")[len("tensorflow") :]
            yield node, [(alias.asname or alias.name, f"{module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Import) and all(
            alias.name.startswith("tensorflow.contrib.") and alias.asname for alias in node.names
        ):
            yield node, [(alias.asname or "", "tf" + alias.name[len("tensorflow") :]) for alias in node.names]


def contrib_imports_deferred(source: str, comment: Callable[[str], str]) -> str:
    """`source` with each import from tf.contrib still left (a name no home has: the check comments its uses)
    rewritten to bind `compat.estimator.unavailable`'s stand-in, with `comment(name)` (the check's) above it: the
    file imports on TensorFlow 2, and only a use of such a name stops, naming it."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for statement, bound in sorted(_contrib_statements(tree), key=lambda found: -found[0].lineno):
        indent = lines[statement.lineno - 1][: statement.col_offset]
        replacement = [f"{indent}from compat.estimator.unavailable import unavailable\n"]
        for alias, name in bound:
            replacement += [f"{indent}{comment(name)}\n", f'{indent}{alias} = unavailable("{name}")\n']
        lines[statement.lineno - 1 : statement.end_lineno] = replacement
    return "".join(lines)


@dataclasses.dataclass(frozen=True)
class Upgraded:
    """A file's text after TensorFlow's upgrader, and what the upgrader reported (one line each)."""

    source: str
    changes: list[str]
    warnings: list[str]


def upgrade_source(source: str, path: str, tf1_program: bool = True) -> Upgraded:
    """`source` rewritten by TensorFlow's upgrader with TF 2.15's tables (this module's docstring); a TF 2
    program (`tf1_program=False`) only has the names TensorFlow 2 lacks renamed.

    Raises:
        UpgradeError: the file does not parse.
    """
    from tensorflow.tools.compatibility import ast_edits, tf_upgrade_v2

    spec = _with_tf215_tables(tf_upgrade_v2.TFAPIChangeSpec(), tf_upgrade_v2, tf1_program)
    with contextlib.redirect_stdout(io.StringIO()):  # the upgrader prints its log lines: the report is ours
        ok, text, changes, warnings = ast_edits.ASTCodeUpgrader(spec).update_string_pasta(source, path)
    if not ok:
        raise UpgradeError(f"{path}: does not parse as Python; fix it first (nothing was changed)")
    return Upgraded(text, [line.strip() for line in changes], [line.strip() for line in warnings])
