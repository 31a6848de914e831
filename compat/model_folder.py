"""The model folder's layout, read by every mode: which mode's run a folder holds, and its newest step.

`--mode=keras` (and tuning's best model) keep checkpoints in `checkpoints/`, the Estimator in the
folder itself (`model.ckpt-N`), a search its oracle in `tuning/search/`.
"""

from __future__ import annotations

import os

import tensorflow as tf

KERAS_CHECKPOINTS = "checkpoints"
TUNING_ORACLE = os.path.join("tuning", "search", "oracle.json")


class OtherModesFolderError(ValueError):
    """The model folder holds a run of another mode, whose files this mode would mix with its own."""


def mode_of_folder(model_dir: str) -> str | None:
    """The mode whose run a model folder holds ("keras", "estimator" or "tune"), None if it holds none."""
    if tf.io.gfile.exists(os.path.join(model_dir, TUNING_ORACLE)):
        return "tune"
    if tf.train.latest_checkpoint(os.path.join(model_dir, KERAS_CHECKPOINTS)):
        return "keras"
    if tf.train.latest_checkpoint(model_dir):
        return "estimator"
    return None


def check_folder_mode(model_dir: str, mode: str) -> None:
    """Refuses a model folder that holds another mode's run (checkpoints and metrics would mix)."""
    found = mode_of_folder(model_dir)
    if found is not None and found != mode:
        raise OtherModesFolderError(
            f"`model_dir` {model_dir} holds a `mode={found}` run; give this `mode={mode}` run a folder of its own "
            f"(each mode's default is runs/<mode>)"
        )


def last_saved_step(model_dir: str) -> int | None:
    """The step of the newest checkpoint in a model folder of either mode; None without one."""
    for folder in (os.path.join(model_dir, KERAS_CHECKPOINTS), model_dir):
        latest = tf.train.latest_checkpoint(folder)
        if latest:
            return int(latest.rsplit("-", 1)[1])
    return None
