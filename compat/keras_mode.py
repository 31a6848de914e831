"""`--mode=keras`: `model.fit` on the builder's datasets, resumable, with exports.

Trains on the "train" split, validates on "eval" after every evaluation period
and checkpoints, evaluates "test" at the end, exports, and writes `metrics.json`:

  <model_dir>/checkpoints/ckpt-<step>.*   the last `keep_checkpoints` (tf.train.CheckpointManager)
  <model_dir>/logs/{train,validation}/     TensorBoard
  <model_dir>/history.csv                  one row per evaluation period (Keras' CSVLogger)
  <model_dir>/metrics.json, confusion_matrix.png, model.keras, saved_model/

A run killed at any moment and started again with the same model folder
continues from its last checkpoint (model, optimizer and step), so it ends at
the same step. TensorFlow writes a checkpoint's files before it updates the
`checkpoint` state file, so a kill mid-write leaves the previous one in force.
"""

from __future__ import annotations

import sys

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from compat.checkpoints import restore_newest_readable
from compat.exports import export_keras_model
from compat.run import NanGuard, Run, TrainingClock


class _Checkpoint(keras.callbacks.Callback):
    """Saves model, optimizer and step after each period, unless training diverged."""

    def __init__(self, manager: tf.train.CheckpointManager, nan_guard: NanGuard) -> None:
        super().__init__()
        self.manager, self.nan_guard = manager, nan_guard

    def on_epoch_end(self, epoch, logs=None):
        if self.nan_guard.error is None:
            self.manager.save(checkpoint_number=int(self.model.optimizer.iterations.numpy()))
            self.nan_guard.last_checkpoint = self.manager.latest_checkpoint


def train_and_evaluate(run: Run) -> dict:
    """Trains (or resumes) in the run's folder, evaluates the test split, exports; returns the metrics."""
    model = run.build_model()
    with run.scope():  # optimizer slots beside their (mirrored) variables
        model.optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    manager = tf.train.CheckpointManager(checkpoint, run.path("checkpoints"),
                                         max_to_keep=run.train.keep_checkpoints, checkpoint_name="ckpt")
    restored = restore_newest_readable(list(reversed(manager.checkpoints)),
                                       lambda path: checkpoint.restore(path).assert_existing_objects_matched())
    if restored:
        logging.info("Resuming from %s", restored)
    start_step = int(model.optimizer.iterations.numpy())

    nan_guard, clock = NanGuard(), TrainingClock(run.pipeline.batch_size)
    nan_guard.last_checkpoint = restored
    plan = run.plan
    if start_step < plan.max_steps:
        model.fit(
            run.dataset("train"),
            steps_per_epoch=plan.period,
            epochs=plan.periods,
            initial_epoch=start_step // plan.period,
            validation_data=run.dataset("eval"),
            shuffle=False,  # the builder shuffles; Keras would only warn that it cannot
            callbacks=[nan_guard, clock, _Checkpoint(manager, nan_guard),
                       keras.callbacks.TensorBoard(run.path("logs"), profile_batch=run.train.profile_steps or 0),
                       # one row per evaluation period ("epoch"); a resumed run appends
                       keras.callbacks.CSVLogger(run.path("history.csv"), append=True)],
            verbose=1 if sys.stdout.isatty() else 2,
        )
    else:
        logging.info("Skipping training: step %d already reached max_steps %d", start_step, plan.max_steps)
    nan_guard.raise_if_diverged()

    test_dataset = run.dataset("test")
    test = model.evaluate(test_dataset, return_dict=True, verbose=0)
    features, labels = run.test_examples()
    extra = run.confusion(labels, np.argmax(model.predict(features, verbose=0), axis=-1))
    if run.train.export:
        sample = next(iter(test_dataset))[0]
        extra["export_max_abs_difference"] = export_keras_model(model, run.model_dir, sample)
    return run.write_metrics(test, int(model.optimizer.iterations.numpy()), start_step, clock.train_seconds,
                             **extra)
