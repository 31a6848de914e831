"""Warm starting: initialise a new model's variables from another model's checkpoint.

`Estimator(..., warm_start_from=...)` takes a folder, a checkpoint path or a
`WarmStartSettings`. As in TF 2.15: a string `vars_to_warm_start` is a regex
over the trainable variables (default: all of them); a list of names or
regexes, or of Variables, selects among all variables; `None` warm-starts
nothing. A model folder that already has a checkpoint restores from it instead.
It is done with TensorFlow's `init_from_checkpoint`.
"""

from __future__ import annotations

import collections
import os
import re
from typing import Any

import tensorflow as tf
from absl import logging


class VocabInfo(collections.namedtuple("VocabInfo", ["new_vocab", "new_vocab_size", "num_oov_buckets",
                                                     "old_vocab", "old_vocab_size", "backup_initializer",
                                                     "axis"])):
    """How a vocabulary changed between the checkpoint and the new model (tf.estimator.VocabInfo)."""

    def __new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size=-1,
                backup_initializer=None, axis=0):
        return super().__new__(cls, new_vocab, new_vocab_size, num_oov_buckets, old_vocab, old_vocab_size,
                               backup_initializer, axis)


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info", "var_name_to_prev_var_name"])):
    """What to warm-start from, and which variables (tf.estimator.WarmStartSettings)."""

    def __new__(cls, ckpt_to_initialize_from: str, vars_to_warm_start: Any = ".*",
                var_name_to_vocab_info: dict | None = None, var_name_to_prev_var_name: dict | None = None):
        if not ckpt_to_initialize_from:
            raise ValueError("WarmStartSettings: ckpt_to_initialize_from must be given")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start, var_name_to_vocab_info or {},
                               var_name_to_prev_var_name or {})


def settings_from(warm_start_from: Any) -> WarmStartSettings | None:
    """`warm_start_from` as the Estimator takes it: None, a path (os.PathLike too) or settings."""
    if warm_start_from is None:
        return None
    if isinstance(warm_start_from, WarmStartSettings):
        return warm_start_from
    if isinstance(warm_start_from, (str, bytes, os.PathLike)):
        return WarmStartSettings(os.fsdecode(warm_start_from))
    raise ValueError(f"warm_start_from must be a string or a WarmStartSettings, given: {warm_start_from!r}")


def _checkpoint(path: str) -> str:
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"warm_start_from: the folder '{path}' holds no checkpoint; train a model there first, "
                             "or point at a checkpoint (model.ckpt-N)")
        return latest
    if not tf.io.gfile.exists(path + ".index") and not tf.io.gfile.exists(path):
        raise ValueError(f"warm_start_from: '{path}' does not exist; give a model folder or a checkpoint path")
    return path


def _selected(vars_to_warm_start: Any) -> list:
    if vars_to_warm_start is None:
        return []
    if isinstance(vars_to_warm_start, str):
        pattern = re.compile(vars_to_warm_start)
        return [v for v in tf.compat.v1.trainable_variables() if pattern.match(v.op.name)]
    if all(isinstance(item, str) for item in vars_to_warm_start):
        patterns = [re.compile(item) for item in vars_to_warm_start]
        return [v for v in tf.compat.v1.global_variables() if any(p.match(v.op.name) for p in patterns)]
    if all(isinstance(item, tf.Variable) for item in vars_to_warm_start):
        return list(vars_to_warm_start)
    raise ValueError("vars_to_warm_start must be a regex string, a list of names or regexes, or a list of "
                     f"Variables, given: {vars_to_warm_start!r}")


def warm_start(settings: WarmStartSettings) -> None:
    """Sets the selected variables of the default graph to initialise from the checkpoint."""
    if settings.var_name_to_vocab_info:
        raise NotImplementedError("WarmStartSettings.var_name_to_vocab_info (vocabulary remapping) is not supported "
                                  "by compat.estimator; warm-start those variables without it, or leave them out "
                                  "of vars_to_warm_start")
    checkpoint = _checkpoint(settings.ckpt_to_initialize_from)
    logging.info("Warm-starting from: %s", checkpoint)
    in_checkpoint = dict(tf.train.list_variables(checkpoint))
    assignment, missing = {}, []
    for variable in _selected(settings.vars_to_warm_start):
        name = variable.op.name
        previous = settings.var_name_to_prev_var_name.get(name, name)
        if previous not in in_checkpoint:
            missing.append(previous)
            continue
        if list(in_checkpoint[previous]) != variable.shape.as_list():
            raise ValueError(f"warm_start_from: variable '{name}' has shape {variable.shape.as_list()} but "
                             f"'{previous}' in {checkpoint} has {in_checkpoint[previous]}")
        assignment[previous] = variable
    if missing:
        raise ValueError(f"warm_start_from: {checkpoint} lacks {missing}; narrow vars_to_warm_start, or map new "
                         "names to old ones with var_name_to_prev_var_name")
    logging.info("Warm-starting %d variable(s)", len(assignment))
    if assignment:
        tf.compat.v1.train.init_from_checkpoint(checkpoint, assignment)
