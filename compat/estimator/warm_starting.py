"""Warm starting: initialise a new model's variables from another model's checkpoint.

`Estimator(..., warm_start_from=...)` takes a model folder, a checkpoint path,
a SavedModel folder or a `WarmStartSettings`. It is TensorFlow's own
`tf.compat.v1.train.warm_start`, which TF 2.15's Estimator called, with its
vocabulary remapping (`VocabInfo`) and renames (`var_name_to_prev_var_name`):
a string `vars_to_warm_start` is a regex over the trainable variables
(default: all of them); a list of names or regexes, or of Variables, selects
among all variables; `None` warm-starts nothing. A model folder that already
has a checkpoint restores from it instead.
"""

from __future__ import annotations

import collections
import os
from typing import Any

import tensorflow as tf

from compat.core.errors import UserError

VocabInfo = tf.compat.v1.train.VocabInfo


class WarmStartSettings(
    collections.namedtuple(
        "WarmStartSettings",
        ["ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info", "var_name_to_prev_var_name"],
    )
):
    """What to warm-start from, and which variables (tf.estimator.WarmStartSettings)."""

    def __new__(
        cls,
        ckpt_to_initialize_from: str,
        vars_to_warm_start: Any = ".*",
        var_name_to_vocab_info: dict | None = None,
        var_name_to_prev_var_name: dict | None = None,
    ):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        return super().__new__(
            cls,
            ckpt_to_initialize_from,
            vars_to_warm_start,
            var_name_to_vocab_info or {},
            var_name_to_prev_var_name or {},
        )


def settings_from(warm_start_from: Any) -> WarmStartSettings | None:
    """`warm_start_from` as the Estimator takes it: None, a path (a SavedModel's folder: its variables) or
    settings."""
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        path = os.fsdecode(warm_start_from)
        variables = os.path.join(path, "variables", "variables")
        if tf.io.gfile.exists(variables + ".index"):
            tf.compat.v1.logging.info("Warm-starting from a SavedModel")
            return WarmStartSettings(ckpt_to_initialize_from=variables)
        return WarmStartSettings(ckpt_to_initialize_from=path)
    raise ValueError(f"warm_start_from must be a string or a WarmStartSettings, instead got {type(warm_start_from)}")


class WarmStartSourceMissingError(UserError, tf.errors.NotFoundError, ValueError):
    """`warm_start_from` names no file or folder: TF 2.15's type (TensorFlow's NotFoundError, from its
    checkpoint reader), with a message that says what to do; a ValueError too, as this project raised before."""

    def __init__(self, message: str) -> None:
        tf.errors.NotFoundError.__init__(self, None, None, message)


class WarmStartNoCheckpointError(UserError, TypeError, ValueError):
    """`warm_start_from` is a folder without a checkpoint: TF 2.15's type (a TypeError, from a path of None),
    with a message that says what to do; a ValueError too, as this project raised before."""


def _checked_source(path: str) -> None:
    """A clear error before TensorFlow's, when the checkpoint to start from is not there, of the type TF 2.15
    raised there (so that code catching it still does).

    Raises:
      WarmStartNoCheckpointError: `path` is a folder without a checkpoint.
      WarmStartSourceMissingError: nothing is at `path`.
    """
    if tf.io.gfile.isdir(path):
        if tf.train.latest_checkpoint(path) is None:
            raise WarmStartNoCheckpointError(
                f"warm_start_from: the folder '{path}' holds no checkpoint; train a model there first, "
                "or point at a checkpoint (model.ckpt-N)"
            )
    elif not tf.io.gfile.exists(path + ".index") and not tf.io.gfile.exists(path):
        raise WarmStartSourceMissingError(
            f"warm_start_from: '{path}' does not exist; give a model folder or a checkpoint path"
        )


def warm_start(settings: WarmStartSettings) -> None:
    """Sets the selected variables of the default graph to initialise from the checkpoint."""
    _checked_source(settings.ckpt_to_initialize_from)
    tf.compat.v1.train.warm_start(*settings)
