"""`--mode=keras`: `model.fit` on the builder's datasets, resumable, with exports.

Trains on the "train" split, validates on "eval" after every evaluation period
and checkpoints, evaluates "test" at the end, exports, and writes `metrics.json`:

  <model_dir>/checkpoints/ckpt-<step>.*   the last `keep_checkpoints` (tf.train.CheckpointManager)
  <model_dir>/logs/{train,eval}/           TensorBoard (the tags of --mode=estimator)
  <model_dir>/history.csv                  one row per evaluation period (Keras' CSVLogger)
  <model_dir>/metrics.json, confusion_matrix.png, model.keras, saved_model/
  <model_dir>/best/{model.keras, saved_model/, weights/}   the period with the lowest validation loss
  <model_dir>/logs/examples/               a few eval examples' features as TensorBoard images

A run killed at any moment and started again with the same model folder
continues from its last checkpoint (model, optimizer and step), so it ends at
the same step. TensorFlow writes a checkpoint's files before it updates the
`checkpoint` state file, so a kill mid-write leaves the previous one in force.
"""

from __future__ import annotations

import json
import os
import sys
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from compat.core import atomic, summaries
from compat.core.checkpoints import restore_newest_readable
from compat.modes import model_folder
from compat.modes.callbacks import NanGuard, StopAtMaxSteps, TrainingClock
from compat.modes.keras_exports import KerasExports, copy_exports
from compat.modes.run import Run


class _TensorBoard(keras.callbacks.Callback):
    """TensorBoard scalars on the global-step axis, with `--mode=estimator`'s tags, so runs of both
    modes overlay: every `every` steps `loss`, `accuracy` (Keras' running means over the period so
    far), `learning_rate`, `global_step/sec` and `examples_per_second` in `logs/train`; after each
    validation its `loss` and `accuracy` in `logs/eval`. With `profile` (first, last), a profile of
    those steps of this process in `logs/train`.

    Keras calls this once per compiled call (`steps_per_execution` steps): a
    multiple of `every` is logged at the first call that reaches it.
    """

    def __init__(
        self, log_dir: str, every: int, batch_size: int, steps_per_call: int, profile: tuple[int, int] | None
    ) -> None:
        super().__init__()
        self.train_dir, self.every, self.batch_size = os.path.join(log_dir, "train"), every, batch_size
        self.steps_per_call, self.profile = steps_per_call, profile
        self.train_writer = tf.summary.create_file_writer(self.train_dir)
        self.eval_writer = tf.summary.create_file_writer(os.path.join(log_dir, "eval"))
        self._profiling = False

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def on_train_begin(self, logs=None):
        self._first = self._logged = self._step()
        self._since = time.monotonic()

    def on_train_batch_begin(self, batch, logs=None):
        # This call runs this process's steps done+1 .. done+steps_per_call: start with the call that reaches FIRST.
        done = self._step() - self._first
        if self.profile and not self._profiling and done + self.steps_per_call >= self.profile[0]:
            tf.profiler.experimental.start(self.train_dir)
            self._profiling = True

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        if self._profiling and step >= self._first + self.profile[1]:
            self._stop_profiling()
        if step // self.every == self._logged // self.every:
            return
        now = time.monotonic()
        steps_per_second = (step - self._logged) / max(now - self._since, 1e-9)
        summaries.write_training_scalars(
            self.train_writer,
            step,
            logs,
            summaries.learning_rate_value(self.model.optimizer),
            steps_per_second,
            steps_per_second * self.batch_size,
        )
        self._logged, self._since = step, now

    def on_test_begin(self, logs=None):
        self._test_started = time.monotonic()

    def on_test_end(self, logs=None):
        self._since += time.monotonic() - self._test_started  # rates count training time only
        summaries.write_training_scalars(self.eval_writer, self._step(), logs)

    def on_train_end(self, logs=None):
        if self._profiling:
            self._stop_profiling()
        self.train_writer.flush()
        self.eval_writer.flush()

    def _stop_profiling(self) -> None:
        tf.profiler.experimental.stop()
        self._profiling = False
        self.profile = None  # once per process


class _Checkpoint(keras.callbacks.Callback):
    """Saves model, optimizer and step after each period, unless training diverged."""

    def __init__(self, manager: tf.train.CheckpointManager, nan_guard: NanGuard) -> None:
        super().__init__()
        self.manager, self.nan_guard = manager, nan_guard

    def on_epoch_end(self, epoch, logs=None):
        if self.nan_guard.error is None:
            self.manager.save(checkpoint_number=int(self.model.optimizer.iterations.numpy()))
            self.nan_guard.last_checkpoint = self.manager.latest_checkpoint


class _CSVLogger(keras.callbacks.CSVLogger):
    """Keras' CSVLogger. Its `on_train_end` asks the file whether it is `closed`, which the files of
    tf.io.gfile (a model folder on gs://, ram://) cannot answer; this one closes it without asking."""

    def on_train_end(self, logs=None):
        if self.csv_file is not None:
            self.csv_file.close()
            self.csv_file = None
        self.writer = None


class _KeepBest(keras.callbacks.Callback):
    """Keeps the weights of the period with the lowest validation loss (TF 2.15's BestExporter's
    measure) in `folder`, with the score, whole or not at all; a resumed run reads the score back."""

    def __init__(self, folder: str) -> None:
        super().__init__()
        self.folder = folder
        self.best = read_best(folder)

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("val_loss")
        if loss is None or not loss < (self.best or {}).get("val_loss", float("inf")):
            return
        best = {
            "step": int(self.model.optimizer.iterations.numpy()),
            "val_loss": float(loss),
            "val_accuracy": float(logs.get("val_accuracy", float("nan"))),
        }

        def write(folder: str) -> None:
            tf.train.Checkpoint(model=self.model).write(os.path.join(folder, "weights"))
            with open(os.path.join(folder, "score.json"), "w") as stream:
                json.dump(best, stream)

        atomic.replace_folder(self.folder, write)
        self.best = best


def read_best(folder: str) -> dict | None:
    """The score `_KeepBest` saved in `folder` (step, val_loss, val_accuracy); None before the first."""
    path = os.path.join(folder, "score.json")
    # tf.io.gfile: the model folder may be on gs://, ram://; the weights' index too, in case a copy was cut short
    if not (tf.io.gfile.exists(path) and tf.io.gfile.exists(os.path.join(folder, "weights.index"))):
        return None
    with tf.io.gfile.GFile(path) as stream:
        return json.load(stream)


def predicted_classes(model: keras.Model, features: dict, chunk: int = 1024) -> np.ndarray:
    """The class index the model gives each example of `features` (`{key: [n, ...]}`), `[n]`.

    The model is called eagerly, `chunk` examples at a time: for a test split,
    a few calls cost less than tracing `model.predict`'s function (about 1 s).
    """
    chunks = tf.data.Dataset.from_tensor_slices(features).batch(chunk)
    return np.concatenate([np.argmax(model(batch, training=False), axis=-1) for batch in chunks])


def train_and_evaluate(run: Run) -> dict:
    """Trains (or resumes) in the run's folder, evaluates the test split, exports; returns the metrics."""
    model = run.build_model()
    manager, restored = _restore(run, model)
    start_step = int(model.optimizer.iterations.numpy())
    if not restored:  # once per model folder, at its first run
        run.write_example_images(run.path(model_folder.KERAS_EXAMPLE_IMAGES))
    nan_guard, clock = NanGuard(), TrainingClock(run.pipeline.batch_size)
    nan_guard.last_checkpoint = restored
    if start_step < run.plan.max_steps:
        _fit(run, model, start_step, [nan_guard, clock, _Checkpoint(manager, nan_guard)])
    else:
        logging.info("Skipping training: step %d already reached max_steps %d", start_step, run.plan.max_steps)
    nan_guard.raise_if_diverged()

    test_dataset = run.dataset("test")
    test = model.evaluate(test_dataset, return_dict=True, verbose=0)
    features, labels = run.test_examples()
    extra = run.confusion(labels, predicted_classes(model, features))
    # what the run computed with, as Keras applied it (not as the flags asked)
    extra["compute"] = {"dtype_policy": model.dtype_policy.name, "jit_compile": bool(model.jit_compile)}
    steps = int(model.optimizer.iterations.numpy())  # before the best period's state is read back below
    sample = next(iter(test_dataset))[0] if run.train.export else {}  # what the exports are checked on
    exports = KerasExports(model, run.pipeline, run.class_names)  # traced once, for best/ too
    if run.train.export:
        extra["export_max_abs_difference"] = exports.write(run.model_dir, sample)
    best = _score_best(run, model, test_dataset, float(test["accuracy"]), sample, exports)
    if best is not None:
        extra["best"] = best
    return run.write_metrics(test, steps, start_step, clock.train_seconds, **extra)


def _restore(run: Run, model: keras.Model) -> tuple[tf.train.CheckpointManager, str | None]:
    """The run's checkpoint manager, and the newest readable checkpoint restored into `model` (None: none)."""
    with run.scope():  # optimizer slots beside their (mirrored) variables
        model.optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    manager = tf.train.CheckpointManager(
        checkpoint,
        run.path(model_folder.KERAS_CHECKPOINTS),
        max_to_keep=run.train.keep_checkpoints,
        checkpoint_name="ckpt",
    )
    restored = restore_newest_readable(
        list(reversed(manager.checkpoints)), lambda path: checkpoint.restore(path).assert_existing_objects_matched()
    )
    if restored:
        logging.info("Resuming from %s", restored)
    return manager, restored


def _fit(run: Run, model: keras.Model, start_step: int, guards: list[keras.callbacks.Callback]) -> None:
    """`model.fit` from `start_step` to the plan's last step, one "epoch" per evaluation period.

    `guards` (the NaN guard, the clock, the checkpointer) run after the step budget, so that they see
    a cut period end, and before the best-period keeper, TensorBoard and the history file.
    """
    plan = run.plan
    model.fit(
        run.dataset("train"),
        steps_per_epoch=plan.period,
        epochs=plan.periods,
        initial_epoch=start_step // plan.period,
        validation_data=run.dataset("eval"),
        shuffle=False,  # the builder shuffles; Keras would only warn that it cannot
        callbacks=[
            StopAtMaxSteps(plan.max_steps),  # first: the other callbacks see the cut period end
            *guards,
            _KeepBest(run.path(model_folder.BEST_WEIGHTS)),
            _TensorBoard(
                run.path(model_folder.KERAS_LOGS),
                run.train.log_every_steps,
                run.pipeline.batch_size,
                plan.steps_per_execution(run.train.steps_per_execution),
                run.train.profile_steps,
            ),
            # one row per evaluation period ("epoch"); a resumed run appends
            _CSVLogger(run.path(model_folder.HISTORY), append=True),
        ],
        verbose=1 if sys.stdout.isatty() else 2,
    )


def _score_best(
    run: Run,
    model: keras.Model,
    test_dataset: tf.data.Dataset,
    last_accuracy: float,
    sample: dict,
    exports: KerasExports,
) -> dict | None:
    """The best period's record with its test accuracy, and its exports in `best/`; None without one.

    The last period's results are written before this: the model takes the best period's weights (and
    its optimizer state, also in the file) here, so that its traced test step and export code serve again.
    """
    best = read_best(run.path(model_folder.BEST_WEIGHTS))
    if best is None:
        return None
    last_weights = model.get_weights()
    tf.train.Checkpoint(model=model).read(
        run.path(model_folder.BEST_WEIGHTS, "weights")
    ).assert_existing_objects_matched()
    if all(np.array_equal(last, kept) for last, kept in zip(last_weights, model.get_weights(), strict=True)):
        # The last period was the best (the learning rate decays to zero, so it often is): its test
        # accuracy and exports are the best's, without evaluating or tracing them again.
        best["test_accuracy"] = last_accuracy
        if run.train.export:
            copy_exports(run.model_dir, run.path(model_folder.BEST))
    else:
        best["test_accuracy"] = float(model.evaluate(test_dataset, return_dict=True, verbose=0)["accuracy"])
        if run.train.export:
            exports.write(run.path(model_folder.BEST), sample)
    return best
