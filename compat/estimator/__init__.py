"""tf.estimator on TensorFlow >= 2.16 and Keras 3: `import compat.estimator as estimator`.

Names as in tf.estimator; `install()` makes `tf.estimator.<name>` and
`tf.keras.estimator.model_to_estimator` resolve to these, so a legacy script
runs unchanged after one added line.

Differences from TensorFlow 2.15, each on purpose:
  - warm start copies all the Keras model's weights, non-trainable ones too
    (2.15 copied trainable ones only: batch-norm statistics restarted from zero);
  - a restart after max_steps was reached trains no extra step;
  - an input_fn dataset without a final prefetch gets one (logged once);
  - checkpoints are object-based (`model.ckpt-N.index/.data-*`, no `.meta` graph);
  - only Keras models: Estimator(model_fn=...) raises NotImplementedError, and hooks
    must be Keras callbacks (a SessionRunHook gets an error naming its replacement).
"""

from __future__ import annotations

import sys
import types

from compat.estimator import export
from compat.estimator.estimator import Estimator
from compat.estimator.exporter import BestExporter, Exporter, FinalExporter, LatestExporter
from compat.estimator.keras_lib import model_to_estimator
from compat.estimator.model_fn import ModeKeys
from compat.estimator.run_config import RunConfig
from compat.estimator.training import CheckpointSaverListener, EvalSpec, TrainSpec, train_and_evaluate

__all__ = [
    "BestExporter", "CheckpointSaverListener", "Estimator", "EvalSpec", "Exporter", "FinalExporter",
    "LatestExporter", "ModeKeys", "RunConfig", "TrainSpec", "export", "install", "model_to_estimator",
    "train_and_evaluate", "uninstall",
]

_MISSING = object()
_replaced: list[tuple[object, str, object]] = []  # (owner, attribute, previous value) set by install()


def install() -> None:
    """Makes `tf.estimator` and `tf.keras.estimator.model_to_estimator` this module's.

    A legacy program calls it once, at its start, before using those names;
    `uninstall()` puts TensorFlow's own attributes back. Calling it twice is harmless.
    """
    import tensorflow as tf

    if _replaced:
        return
    for owner, name, value in ((tf, "estimator", sys.modules[__name__]),
                               (tf.keras, "estimator", types.SimpleNamespace(model_to_estimator=model_to_estimator))):
        _replaced.append((owner, name, getattr(owner, name, _MISSING)))
        setattr(owner, name, value)


def uninstall() -> None:
    """Undoes `install()`."""
    while _replaced:
        owner, name, previous = _replaced.pop()
        if previous is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, previous)
