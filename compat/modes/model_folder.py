"""The model folder's layout, owned here for every mode: the names of what a run writes, which mode's run
a folder holds, and its newest step.

`--mode=keras` (and tuning's best model) keep checkpoints in `checkpoints/`, the Estimator in the
folder itself (`model.ckpt-N`), a search its oracle in `tuning/search/`.
"""

from __future__ import annotations

import os

import tensorflow as tf

from compat.core.errors import UserError

# Every mode
FLAGS_FILE = "flags.txt"  # the flags a run was started with (--flagfile reads it)
METRICS = "metrics.json"
HISTORY = "history.csv"  # one row per evaluation
CONFUSION_CHART = "confusion_matrix.png"
# --mode=keras
KERAS_CHECKPOINTS = "checkpoints"
KERAS_LOGS = "logs"  # TensorBoard's
KERAS_EXAMPLE_IMAGES = os.path.join(KERAS_LOGS, "examples")
SAVED_MODEL = "saved_model"  # the export that classifies audio (--mode=predict reads it)
BEST = "best"  # the best evaluation period's weights (best/weights) and exports
BEST_WEIGHTS = os.path.join(BEST, "weights")
# --mode=estimator (tf.estimator's own names besides: model.ckpt-N, eval/, export/<exporter>/)
ESTIMATOR_EXAMPLE_IMAGES = "examples"
ESTIMATOR_EXPORTS = "export"
# --mode=tune
TUNING = "tuning"
TUNING_SEARCH = "search"  # keras-tuner's project folder, below TUNING
TUNING_ORACLE = os.path.join(TUNING, TUNING_SEARCH, "oracle.json")
BEST_FLAGS = os.path.join(TUNING, "best.flags")
PARETO_FLAGS = os.path.join(TUNING, "pareto")  # <trial>.flags for each trial on the accuracy/speed front
PARETO_MODELS = "pareto"  # <trial>/ : that trial's model and exports


class OtherModesFolderError(UserError, ValueError):
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
