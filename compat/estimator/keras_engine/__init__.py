"""model_to_estimator and its engine: a compiled Keras 3 model trained eagerly, on tf.estimator's schedule.

TensorFlow 2.15's Estimator is the reference. The engine runs Keras' own
`train_step` many steps per compiled call, between the checkpoint, summary and
logging boundaries the RunConfig sets, so that those happen exactly on the
Estimator's schedule with no host sync in between:

  <model_dir>/model.ckpt-<step>.{index,data-*}, checkpoint   at most keep_checkpoint_max
  <model_dir>/events.out.tfevents.*                           loss, global_step/sec
  <model_dir>/eval[_<name>]/events.out.tfevents.*             metrics, checkpoint_path
  <model_dir>/keras/keras_model.ckpt.*                        the warm-start weights

Checkpoint keys are TF 2.15's (`layer_with_weights-<i>/<weight>/...`, optimizer
slots beside them, see checkpoint.py), so folders written by TF 2.15's
model_to_estimator restore and train on, and the optimizer steps as TF 2.15's
did (keras2_optimizers.py). Hooks may be Keras callbacks or SessionRunHooks that read
the global step and the loss (session_hooks.py).

The package: `core.py` (state: model copies, counters, checkpoints, features), `loop.py` (training
and its observers), `evaluation.py`, `engine.py` (`KerasEstimator` and `model_to_estimator`),
`model_recipe.py` (the model as plain values its copies are built from), `compile_arguments.py` (its compile
arguments as Keras 2 read them), `checkpoint.py`, `keras2_optimizers.py`
(Keras 2's optimizers as TF 2.15 ran them), `saved_model_export.py`, `keras2_artefacts.py` and `session_hooks.py`.
"""

from __future__ import annotations

from compat.estimator.keras_engine.engine import KerasEstimator, model_to_estimator
from compat.estimator.keras_engine.input_reading import FormattedKeyError, split_hooks

__all__ = ["FormattedKeyError", "KerasEstimator", "model_to_estimator", "split_hooks"]
