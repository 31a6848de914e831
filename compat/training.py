"""The native Keras path: `model.fit` on the builder's datasets, resumable, with exports.

`train_and_evaluate` trains on the "train" split, validates on "eval" every
evaluation period, checkpoints after each period, evaluates "test" at the end,
and writes `metrics.json`, `model.keras` and a SavedModel into the model folder:

  <model_dir>/checkpoints/ckpt-<step>.*   the last `keep_checkpoints` (tf.train.CheckpointManager)
  <model_dir>/logs/{train,validation}/     TensorBoard
  <model_dir>/metrics.json, model.keras, saved_model/

A run killed at any moment and started again with the same model folder
continues from its last checkpoint (model, optimizer and step), so it ends at
the same step. TensorFlow writes a checkpoint's files before it updates the
`checkpoint` state file, so a kill mid-write leaves the previous one in force.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import sys
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

import models
from compat import atomic, data
from compat.sources import DataSource


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    epochs: int = 20
    max_steps: int | None = None  # overrides epochs
    learning_rate: float = 3e-3
    eval_every_steps: int | None = None  # None: once per epoch
    keep_checkpoints: int = 3
    seed: int = 0
    export: bool = True


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """Training as Keras sees it: `periods` "epochs" of `period` steps, validation after each."""

    period: int
    periods: int

    @property
    def max_steps(self) -> int:
        return self.period * self.periods


def plan_steps(config: TrainConfig, train_examples: int, batch_size: int) -> StepPlan:
    """Whole evaluation periods: a `max_steps` that is no multiple of the period is rounded up."""
    steps_per_epoch = math.ceil(train_examples / batch_size)
    max_steps = config.max_steps or config.epochs * steps_per_epoch
    period = min(config.eval_every_steps or steps_per_epoch, max_steps)
    plan = StepPlan(period, math.ceil(max_steps / period))
    if plan.max_steps != max_steps:
        logging.warning("Training %d steps: max_steps %d rounded up to whole periods of %d",
                        plan.max_steps, max_steps, period)
    return plan


class TrainingDiverged(FloatingPointError):
    """The loss became NaN or infinite; the message names the last good checkpoint."""


class _StopOnNaN(keras.callbacks.Callback):
    """Stops at the first non-finite loss; the checkpoint callback then saves nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.bad_step: int | None = None

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.bad_step = int(self.model.optimizer.iterations.numpy())
            self.model.stop_training = True


class _Throughput(keras.callbacks.Callback):
    """Adds examples/s and the learning rate to each period's logs (TensorBoard writes them)."""

    def __init__(self, batch_size: int) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.train_seconds = 0.0
        self.steps = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._start, self._first_step = time.perf_counter(), int(self.model.optimizer.iterations.numpy())

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self._start
        steps = int(self.model.optimizer.iterations.numpy()) - self._first_step
        self.train_seconds += seconds
        self.steps += steps
        if logs is not None:
            logs["examples_per_second"] = steps * self.batch_size / max(seconds, 1e-9)
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


class _Checkpoint(keras.callbacks.Callback):
    """Saves model, optimizer and step after each period, unless training diverged."""

    def __init__(self, manager: tf.train.CheckpointManager, nan_guard: _StopOnNaN) -> None:
        super().__init__()
        self.manager, self.nan_guard = manager, nan_guard

    def on_epoch_end(self, epoch, logs=None):
        if self.nan_guard.bad_step is None:
            self.manager.save(checkpoint_number=int(self.model.optimizer.iterations.numpy()))


def compile_model(model: keras.Model, learning_rate: float, total_steps: int) -> None:
    """Adam with a one-period-free cosine decay to zero at `total_steps`; logits in, accuracy out."""
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, decay_steps=max(total_steps, 1))
    model.compile(
        optimizer=keras.optimizers.Adam(schedule),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )


def _replace_folder(build, final: str) -> None:
    """Builds `final` under a temporary name, then swaps it in: never half an export."""
    temp = f"{final}.tmp-{os.getpid()}"
    shutil.rmtree(temp, ignore_errors=True)
    build(temp)
    if os.path.exists(final):
        old = f"{final}.old-{os.getpid()}"
        os.rename(final, old)
        os.rename(temp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(temp, final)


def export_model(model: keras.Model, model_dir: str, sample: dict) -> float:
    """Writes model.keras and saved_model/; returns the SavedModel's max |output difference|."""
    keras_path = os.path.join(model_dir, "model.keras")
    temp = os.path.join(model_dir, f"tmp-{os.getpid()}.keras")
    model.save(temp)
    os.replace(temp, keras_path)
    saved_path = os.path.join(model_dir, "saved_model")
    _replace_folder(lambda folder: model.export(folder, format="tf_saved_model", verbose=False), saved_path)
    loaded = tf.saved_model.load(saved_path)  # keep a reference: its variables die with it
    served = loaded.serve(sample)
    difference = float(np.max(np.abs(np.asarray(served) - np.asarray(model(sample, training=False)))))
    if difference > 1e-4:
        raise RuntimeError(f"the SavedModel in {saved_path} disagrees with the model by {difference}")
    return difference


def _test_metrics(test: dict, steps: int, start_step: int, started: float, train_seconds: float,
                  trained_steps: int, batch_size: int, class_names) -> dict:
    """metrics.json's content, the same for every mode."""
    return {
        "test_accuracy": float(test["accuracy"]),
        "test_loss": float(test["loss"]),
        "steps": steps,
        "resumed_from_step": start_step,
        "wall_seconds": round(time.perf_counter() - started, 2),
        "train_seconds": round(train_seconds, 2),
        "examples_per_second": round(trained_steps * batch_size / max(train_seconds, 1e-9), 1),
        "class_names": list(class_names),
    }


def _compiled_model(source: DataSource, pipeline: data.PipelineConfig, model_config: models.ModelConfig,
                    config: TrainConfig) -> tuple[keras.Model, StepPlan, tuple[str, ...]]:
    """The seeded, compiled registry model and the step plan that both modes train with."""
    keras.utils.set_random_seed(config.seed)
    class_names = data.class_names(source, pipeline)
    plan = plan_steps(config, data.split_size(source, pipeline, "train"), pipeline.batch_size)
    model = models.build_from_config(model_config, data.feature_shape(pipeline), len(class_names),
                                     input_name=pipeline.feature_key)
    compile_model(model, config.learning_rate, plan.max_steps)
    return model, plan, class_names


def estimator_train_and_evaluate(
    source: DataSource,
    pipeline: data.PipelineConfig,
    model_config: models.ModelConfig,
    config: TrainConfig,
    model_dir: str,
) -> dict:
    """`--mode=estimator`: the same model, data and steps through compat.estimator.

    A registry model, compiled as in the Keras path, is wrapped by
    `model_to_estimator`; `train_and_evaluate` checkpoints and evaluates every
    period (throttle_secs=0), then the test split is evaluated and exported.
    """
    from compat import estimator

    started = time.perf_counter()
    model, plan, class_names = _compiled_model(source, pipeline, model_config, config)
    run_config = estimator.RunConfig(save_checkpoints_steps=plan.period, keep_checkpoint_max=config.keep_checkpoints,
                                     tf_random_seed=config.seed, log_step_count_steps=plan.period)
    est = estimator.model_to_estimator(keras_model=model, model_dir=model_dir, config=run_config)
    latest = est.latest_checkpoint()
    start_step = int(latest.rsplit("-", 1)[1]) if latest else 0
    train_started = time.perf_counter()
    estimator.train_and_evaluate(
        est,
        estimator.TrainSpec(data.make_input_fn(source, pipeline, "train"), max_steps=plan.max_steps),
        estimator.EvalSpec(data.make_input_fn(source, pipeline, "eval"), steps=None, throttle_secs=0,
                           exporters=[estimator.FinalExporter("final")] if config.export else ()),
    )
    train_seconds = time.perf_counter() - train_started
    test = est.evaluate(data.make_input_fn(source, pipeline, "test"), name="test")
    metrics = _test_metrics(test, int(test["global_step"]), start_step, started, train_seconds,
                            int(test["global_step"]) - start_step, pipeline.batch_size, class_names)
    atomic.write_json(os.path.join(model_dir, "metrics.json"), metrics)
    return metrics


def train_and_evaluate(
    source: DataSource,
    pipeline: data.PipelineConfig,
    model_config: models.ModelConfig,
    config: TrainConfig,
    model_dir: str,
) -> dict:
    """Trains (or resumes) in `model_dir`, evaluates the test split, exports; returns the metrics."""
    started = time.perf_counter()
    os.makedirs(model_dir, exist_ok=True)
    model, plan, class_names = _compiled_model(source, pipeline, model_config, config)
    model.optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    manager = tf.train.CheckpointManager(checkpoint, os.path.join(model_dir, "checkpoints"),
                                         max_to_keep=config.keep_checkpoints, checkpoint_name="ckpt")
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
        logging.info("Resuming from %s", manager.latest_checkpoint)
    start_step = int(model.optimizer.iterations.numpy())

    nan_guard, throughput = _StopOnNaN(), _Throughput(pipeline.batch_size)
    callbacks = [nan_guard, throughput, _Checkpoint(manager, nan_guard),
                 keras.callbacks.TensorBoard(os.path.join(model_dir, "logs"))]
    if start_step < plan.max_steps:
        model.fit(
            data.build_dataset(source, pipeline, "train"),
            steps_per_epoch=plan.period,
            epochs=plan.periods,
            initial_epoch=start_step // plan.period,
            validation_data=data.build_dataset(source, pipeline, "eval"),
            callbacks=callbacks,
            verbose=1 if sys.stdout.isatty() else 2,
        )
    else:
        logging.info("Skipping training: step %d already reached max_steps %d", start_step, plan.max_steps)
    if nan_guard.bad_step is not None:
        raise TrainingDiverged(
            f"the loss became NaN or infinite at step {nan_guard.bad_step}; the last good checkpoint is "
            f"{manager.latest_checkpoint or 'none (no period finished)'}. Lower --learning_rate or check the data"
        )

    test_dataset = data.build_dataset(source, pipeline, "test")
    test = model.evaluate(test_dataset, return_dict=True, verbose=0)
    metrics = _test_metrics(test, int(model.optimizer.iterations.numpy()), start_step, started,
                            throughput.train_seconds, throughput.steps, pipeline.batch_size, class_names)
    if config.export:
        sample = next(iter(test_dataset))[0]
        metrics["export_max_abs_difference"] = export_model(model, model_dir, sample)
    atomic.write_json(os.path.join(model_dir, "metrics.json"), metrics)
    return metrics
