"""TF 1.x names rewritten for TensorFlow >= 2.16, as TF 2.15's own upgrader rewrote them (`check --fix`).

TensorFlow still ships its upgrader (`tensorflow.tools.compatibility`, `tf_upgrade_v2`), but TF 2.21's
tables dropped renames that TF 2.15's had: `tf.layers.dense`, `tf.layers.dropout`, TF 1's
`tf.summary.scalar`, `tf.contrib.estimator.stop_if_no_decrease_hook`, `tf.contrib.tpu.TPUEstimator`, ...
This module runs TensorFlow's own upgrader with TF 2.21's tables (its keyword renames, argument
reorders, function transformers such as `dataset.make_one_shot_iterator()` ->
`tf.compat.v1.data.make_one_shot_iterator(dataset)`) and TF 2.15's symbol renames, kept as facts in
tf215_upgrade_renames.json (tests/helpers/tf215_upgrade_renames.py lists them under TF 2.15).

`symbol_renames()` reads that table without TensorFlow (the migration check reports with it);
`upgrade_source()` loads TensorFlow's upgrader.
"""

from __future__ import annotations

import dataclasses
import json
import os
from functools import cache

from compat.core.errors import UserError

# TF 1.x names that TF 2 also has, with TF 2's meaning: a TF 1.x program meant the tf.compat.v1 one (TF 2.15's
# upgrader rewrote them), a TF 2 program means TF 2's. The check says so rather than refusing them.
SAME_NAME_IN_TF2 = frozenset(f"tf.summary.{name}" for name in ("audio", "histogram", "image", "scalar", "text"))


class UpgradeError(UserError, ValueError):
    """TensorFlow's upgrader could not read a file (it does not parse)."""


@cache
def symbol_renames() -> dict[str, str]:
    """TF 2.15's upgrader's renames: a TF 1.x name (`tf.layers.dense`, `tf.logging.info`) -> its TF 2 spelling."""
    with open(os.path.join(os.path.dirname(__file__), "tf215_upgrade_renames.json"), encoding="utf-8") as stream:
        return json.load(stream)["symbol_renames"]


@dataclasses.dataclass(frozen=True)
class Upgraded:
    """A file's text after TensorFlow's upgrader, and what the upgrader reported (one line each)."""

    source: str
    changes: list[str]
    warnings: list[str]


def upgrade_source(source: str, path: str) -> Upgraded:
    """`source` rewritten by TensorFlow's upgrader with TF 2.15's symbol renames (this module's docstring).

    Raises:
        UpgradeError: the file does not parse.
    """
    from tensorflow.tools.compatibility import ast_edits, tf_upgrade_v2

    spec = tf_upgrade_v2.TFAPIChangeSpec()
    spec.symbol_renames.update(symbol_renames())
    ok, text, changes, warnings = ast_edits.ASTCodeUpgrader(spec).update_string_pasta(source, path)
    if not ok:
        raise UpgradeError(f"{path}: does not parse as Python; fix it, then run --fix again (nothing was changed)")
    return Upgraded(text, [line.strip() for line in changes], [line.strip() for line in warnings])
