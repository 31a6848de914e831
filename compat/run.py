"""One training run: what every mode shares, from setup to `metrics.json`.

`open_run(...)` is the start of every mode: it takes the model folder (a lock
that a second run on the same folder is refused by, and that a dead process
does not hold), lists the source once (a `SourceIndex` that every dataset of
the run reads), plans the steps, and starts the clock. The modes
(`compat.keras_mode`, `compat.estimator_mode`, `compat.tuning`) take the `Run`
and end with `Run.write_metrics`, the one `metrics.json` schema.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from typing import Any, Callable, Iterator, Mapping

import keras
import tensorflow as tf
from absl import logging

import models
from compat import atomic, data
from compat.config import PipelineConfig, TrainConfig
from compat.divergence import TrainingDiverged, is_finite
from compat.sources import DataSource, SourceIndex


_MAX_AUTO_STEPS_PER_EXECUTION = 64  # progress and stop requests are seen at least this often


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """Training as Keras sees it: `periods` "epochs" of `period` steps, validation after each."""

    steps_per_epoch: int
    period: int
    periods: int

    @property
    def max_steps(self) -> int:
        return self.period * self.periods

    def steps_per_execution(self, requested: int = 0) -> int:
        """Steps per compiled call: `requested`, or the largest divisor of the period up to 64.

        Keras rounds a period up to whole executions, so only a divisor keeps the step count exact.
        """
        if requested:
            if self.period % requested:
                raise ValueError(f"steps_per_execution {requested} must divide the evaluation period of "
                                 f"{self.period} steps (flag --eval_every_steps); Keras would round it up")
            return requested
        return max(d for d in range(1, min(self.period, _MAX_AUTO_STEPS_PER_EXECUTION) + 1) if self.period % d == 0)


def plan_steps(config: TrainConfig, train_examples: int, batch_size: int) -> StepPlan:
    """The one steps plan: whole evaluation periods (a `max_steps` off the period is rounded up)."""
    steps_per_epoch = math.ceil(train_examples / batch_size)
    max_steps = config.max_steps or config.epochs * steps_per_epoch
    period = min(config.eval_every_steps or steps_per_epoch, max_steps)
    plan = StepPlan(steps_per_epoch, period, math.ceil(max_steps / period))
    if plan.max_steps != max_steps:
        logging.warning("Training %d steps: max_steps %d rounded up to whole periods of %d",
                        plan.max_steps, max_steps, period)
    return plan


def compile_model(model: keras.Model, learning_rate: float, total_steps: int, steps_per_execution: int = 1) -> None:
    """Adam with a cosine decay to zero at `total_steps`; logits in, accuracy out."""
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, decay_steps=max(total_steps, 1))
    model.compile(
        optimizer=keras.optimizers.Adam(schedule),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )


class NanGuard(keras.callbacks.Callback):
    """The divergence policy for `model.fit`: stops at the end of the first period whose loss is
    not finite, before anything of it is saved (put it before the checkpoint callback).

    Checking once per period keeps `fit` free of a host sync at every step; a NaN
    anywhere in the period makes the period's mean loss NaN.
    """

    def __init__(self) -> None:
        super().__init__()
        self.error: TrainingDiverged | None = None
        self.last_checkpoint: str | None = None

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not is_finite(loss):
            step = int(self.model.optimizer.iterations.numpy())
            self.error = TrainingDiverged(step, float(loss), self.last_checkpoint)
            self.model.stop_training = True

    def raise_if_diverged(self) -> None:
        if self.error is not None:
            raise self.error


@dataclasses.dataclass
class Run:
    """A run's settings, its source index and step plan, and its clock; see `open_run`."""

    source: DataSource
    pipeline: PipelineConfig
    model_config: models.ModelConfig
    train: TrainConfig
    model_dir: str
    index: SourceIndex
    plan: StepPlan
    started: float

    @property
    def class_names(self) -> tuple[str, ...]:
        return self.index.class_names

    def path(self, *parts: str) -> str:
        return os.path.join(self.model_dir, *parts)

    def dataset(self, split: str, pipeline: PipelineConfig | None = None) -> tf.data.Dataset:
        return data.build_dataset(self.index, pipeline or self.pipeline, split)

    def input_fn(self, split: str) -> Callable[..., tf.data.Dataset]:
        return data.make_input_fn(self.index, self.pipeline, split)

    def build_model(self, model_config: models.ModelConfig | None = None, train: TrainConfig | None = None,
                    pipeline: PipelineConfig | None = None, plan: StepPlan | None = None) -> keras.Model:
        """The seeded, compiled registry model every mode trains (a trial passes its own configs)."""
        pipeline, train, plan = pipeline or self.pipeline, train or self.train, plan or self.plan
        keras.utils.set_random_seed(train.seed)
        model = models.build_from_config(model_config or self.model_config, data.feature_shape(pipeline),
                                         len(self.class_names), input_name=pipeline.feature_key)
        compile_model(model, train.learning_rate, plan.max_steps, plan.steps_per_execution(train.steps_per_execution))
        return model

    def write_metrics(self, test: Mapping[str, Any], steps: int, start_step: int, train_seconds: float,
                      **extra: Any) -> dict:
        """Writes `metrics.json`, the same schema in every mode, and returns it.

        `examples_per_second` counts the training steps of this process over
        `train_seconds`, which excludes validation.
        """
        trained = steps - start_step
        metrics = {
            "test_accuracy": float(test["accuracy"]),
            "test_loss": float(test["loss"]),
            "steps": int(steps),
            "resumed_from_step": int(start_step),
            "wall_seconds": round(time.perf_counter() - self.started, 2),
            "train_seconds": round(train_seconds, 2),
            "examples_per_second": round(trained * self.pipeline.batch_size / max(train_seconds, 1e-9), 1),
            "class_names": list(self.class_names),
            **extra,
        }
        atomic.write_json(self.path("metrics.json"), metrics)
        return metrics


@contextlib.contextmanager
def open_run(source: DataSource, pipeline: PipelineConfig, model_config: models.ModelConfig,
             train: TrainConfig, model_dir: str, shared: bool = False) -> Iterator[Run]:
    """Takes `model_dir` for this process, lists the source once and plans the steps.

    A second run on the same folder is refused at once with the first one's
    process named; files left half-written by a killed run are removed.
    `shared`: the folder belongs to another process that coordinates this one
    (a keras-tuner worker writes trials into its chief's folder): no lock taken.
    """
    started = time.perf_counter()
    with contextlib.nullcontext() if shared else atomic.folder_lock(model_dir):
        index = data.index(source, pipeline)
        plan = plan_steps(train, index.size("train"), pipeline.batch_size)
        yield Run(source, pipeline, model_config, train, model_dir, index, plan, started)
