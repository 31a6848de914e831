"""One training run: what every mode shares, from setup to `metrics.json`.

`open_run(...)` is the start of every mode: it takes the model folder (a lock
that a second run on the same folder is refused by, and that a dead process
does not hold), lists the source once (a `SourceIndex` that every dataset of
the run reads), plans the steps, and starts the clock. The training modes
(`compat.keras_mode`, `compat.estimator_mode`) take the `Run` and end with
`Run.write_metrics`, the one `metrics.json` schema; a search (`compat.tuning`)
takes the `Run` for its trials' data and model, and writes its own result files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

import models
from compat import atomic, charts, data
from compat.config import PipelineConfig, TrainConfig
from compat.divergence import TrainingDiverged, is_finite
from compat.sources import DataSource, SourceIndex

_MAX_AUTO_STEPS_PER_EXECUTION = 64  # progress and stop requests are seen at least this often


@dataclasses.dataclass(frozen=True)
class StepPlan:
    """Training as Keras sees it: `periods` "epochs" of `period` steps, validation after each; the last
    period is shorter when `max_steps` is not a multiple of `period` (TF 2.15's max_steps is exact)."""

    steps_per_epoch: int
    period: int
    max_steps: int

    @property
    def periods(self) -> int:
        return math.ceil(self.max_steps / self.period)

    def steps_per_execution(self, requested: int = 0) -> int:
        """Steps per compiled call: `requested`, or the largest divisor of every period (the last one's
        length too) up to 64. Keras runs whole executions, so only a divisor keeps the step count exact.
        """
        both = math.gcd(self.period, self.max_steps)
        if requested:
            if both % requested:
                raise ValueError(
                    f"steps_per_execution {requested} must divide the evaluation period of {self.period} steps "
                    f"(`eval_every_steps`) and `max_steps` {self.max_steps}; Keras would run past them"
                )
            return requested
        return max(d for d in range(1, min(both, _MAX_AUTO_STEPS_PER_EXECUTION) + 1) if both % d == 0)


class StopAtMaxSteps(keras.callbacks.Callback):
    """Ends `fit` at `max_steps` exactly: the last period is cut short, then validated and saved."""

    def __init__(self, max_steps: int) -> None:
        super().__init__()
        self.max_steps = max_steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.max_steps:
            self.model.stop_training = True


def plan_steps(config: TrainConfig, train_examples: int, batch_size: int) -> StepPlan:
    """The one steps plan: `max_steps` (or `epochs` whole epochs), validated every `eval_every_steps`."""
    steps_per_epoch = math.ceil(train_examples / batch_size)
    max_steps = config.max_steps or config.epochs * steps_per_epoch
    period = min(config.eval_every_steps or steps_per_epoch, max_steps)
    return StepPlan(steps_per_epoch, period, max_steps)


def compile_model(
    model: keras.Model, learning_rate: float, total_steps: int, steps_per_execution: int = 1, jit_compile: bool = False
) -> None:
    """Adam with a cosine decay to zero at `total_steps`; logits in, accuracy out. Under a mixed
    dtype policy Keras scales the loss itself (its LossScaleOptimizer)."""
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, decay_steps=max(total_steps, 1))
    model.compile(
        optimizer=keras.optimizers.Adam(schedule),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
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


class TrainingClock(keras.callbacks.Callback):
    """Training time and steps per period, without validation; adds examples/s and the learning
    rate to each period's logs (TensorBoard writes them). `period_ends` holds, for each period,
    the wall seconds from the first period's start to this one's end, validation included."""

    def __init__(self, batch_size: int) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.train_seconds = 0.0
        self.trained_steps = 0
        self.period_ends: list[float] = []
        self._began: float | None = None

    @property
    def examples_per_second(self) -> float:
        return self.trained_steps * self.batch_size / max(self.train_seconds, 1e-9)

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def on_epoch_begin(self, epoch, logs=None):
        self._start, self._first_step, self._stopped = time.perf_counter(), self._step(), None
        self._began = self._began or self._start

    def on_test_begin(self, logs=None):  # validation runs after the period's training steps
        if self._stopped is None:
            self._stopped = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = (self._stopped or time.perf_counter()) - self._start
        self.train_seconds += seconds
        self.trained_steps += self._step() - self._first_step
        self.period_ends.append(time.perf_counter() - self._began)
        if logs is not None:
            logs["examples_per_second"] = (self._step() - self._first_step) * self.batch_size / max(seconds, 1e-9)
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


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
    strategy: tf.distribute.Strategy | None = None  # None: the default device

    def scope(self) -> contextlib.AbstractContextManager:
        """The strategy's scope, where variables are created mirrored; a no-op without one."""
        return self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()

    @property
    def class_names(self) -> tuple[str, ...]:
        return self.index.class_names

    def path(self, *parts: str) -> str:
        return os.path.join(self.model_dir, *parts)

    def dataset(self, split: str, pipeline: PipelineConfig | None = None) -> tf.data.Dataset:
        return data.build_dataset(self.index, pipeline or self.pipeline, split)

    def input_fn(self, split: str) -> Callable[..., tf.data.Dataset]:
        return data.make_input_fn(self.index, self.pipeline, split)

    def build_model(
        self,
        model_config: models.ModelConfig | None = None,
        train: TrainConfig | None = None,
        pipeline: PipelineConfig | None = None,
        plan: StepPlan | None = None,
    ) -> keras.Model:
        """The seeded, compiled registry model every mode trains (a trial passes its own configs)."""
        pipeline, train, plan = pipeline or self.pipeline, train or self.train, plan or self.plan
        keras.utils.set_random_seed(train.seed)
        with self.scope():
            model = models.build_from_config(
                model_config or self.model_config,
                data.feature_shape(pipeline),
                len(self.class_names),
                input_name=pipeline.feature_key,
            )
            compile_model(
                model,
                train.learning_rate,
                plan.max_steps,
                plan.steps_per_execution(train.steps_per_execution),
                train.enable_xla,
            )
        return model

    def write_example_images(self, folder: str, count: int = 6) -> None:
        """The features of the eval split's first `count` clips as TensorBoard images (`examples/<class>`),
        time left to right, low bins at the bottom, each scaled to its own range: what the model sees."""
        if self.pipeline.feature == "waveform":
            return  # a waveform is no picture
        features, labels = next(iter(self.dataset("eval")))
        clips = features[self.pipeline.feature_key][:count]
        low = tf.reduce_min(clips, axis=[1, 2], keepdims=True)
        scaled = (clips - low) / tf.maximum(tf.reduce_max(clips, axis=[1, 2], keepdims=True) - low, 1e-6)
        pictures = tf.reverse(tf.transpose(scaled, [0, 2, 1]), axis=[1])[..., tf.newaxis]  # [n, bins, frames, 1]
        with tf.summary.create_file_writer(folder).as_default(step=0):
            for index, (picture, label) in enumerate(zip(pictures, labels[:count].numpy())):
                tf.summary.image(
                    f"examples/{index}_{self.class_names[label]}",
                    picture[tf.newaxis],
                    step=0,
                    description=f"eval clip {index}, class '{self.class_names[label]}': "
                    f"{self.pipeline.feature} features",
                )

    def test_examples(self) -> tuple[dict, np.ndarray]:
        """The test split in memory, `({feature_key: [n, frames, bins]}, labels [n])`: one pass, so
        features and labels stay paired whatever order the parallel stages gave."""
        features, labels = [], []
        for batch_features, batch_labels in self.dataset("test"):
            features.append(batch_features[self.pipeline.feature_key].numpy())
            labels.append(batch_labels.numpy())
        return {self.pipeline.feature_key: np.concatenate(features)}, np.concatenate(labels)

    def confusion(self, labels: np.ndarray, predicted: np.ndarray) -> dict:
        """Writes `confusion_matrix.png`; returns the matrix (rows: true class) and per-class accuracy."""
        names = self.class_names
        matrix = tf.math.confusion_matrix(labels, predicted, num_classes=len(names)).numpy()
        atomic.write_file(self.path("confusion_matrix.png"), lambda path: charts.confusion_png(path, matrix, names))
        return {
            "confusion_matrix": matrix.tolist(),
            "per_class_accuracy": {  # null for a class without test clips: nothing was measured
                name: round(float(matrix[i, i] / matrix[i].sum()), 4) if matrix[i].sum() else None
                for i, name in enumerate(names)
            },
        }

    def write_metrics(
        self, test: Mapping[str, Any], steps: int, start_step: int, train_seconds: float, **extra: Any
    ) -> dict:
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


# An operating system's words for a storage fault, as TensorFlow's errors quote them.
_STORAGE_FAULTS = (
    "No space left on device",
    "File too large",
    "Disk quota exceeded",
    "Read-only file system",
    "Input/output error",
    "Permission denied",
    "No such file or directory",
    "was not written whole",
)
_STORAGE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM)


def storage_problem(error: BaseException) -> str | None:
    """The line of an error that names a file and what the system said of it (a full disk, a file that
    vanished or cannot be read), from TensorFlow or Python; None when the error is not a storage fault."""
    if isinstance(error, OSError) and error.errno in _STORAGE_ERRNOS:  # Python's own writes (metrics.json, ...)
        return f"{error.filename}: {error.strerror}" if error.filename else str(error)
    if not isinstance(error, tf.errors.OpError):
        return None
    for line in str(error.message).splitlines():
        fault = next((words for words in _STORAGE_FAULTS if words in line), None)
        if fault is not None:
            detail = line.split("Original message: ")[-1]
            detail = re.sub(r"\{\{function_node [^}]*\}\}|\[\[.*?\]\]|\[Op:[^\]]*\]", "", detail).strip()
            return detail
    return None


class OtherModesFolderError(ValueError):
    """The model folder holds a run of another mode, whose files this mode would mix with its own."""


def mode_of_folder(model_dir: str) -> str | None:
    """The mode whose run a model folder holds ("keras", "estimator" or "tune"), None if it holds none."""
    if tf.io.gfile.exists(os.path.join(model_dir, "tuning", "search", "oracle.json")):
        return "tune"
    if tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")):
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
    for folder in (os.path.join(model_dir, "checkpoints"), model_dir):
        latest = tf.train.latest_checkpoint(folder)
        if latest:
            return int(latest.rsplit("-", 1)[1])
    return None


@contextlib.contextmanager
def open_run(
    source: DataSource,
    pipeline: PipelineConfig,
    model_config: models.ModelConfig,
    train: TrainConfig,
    model_dir: str,
    shared: bool = False,
    strategy: tf.distribute.Strategy | None = None,
    mode: str | None = None,
) -> Iterator[Run]:
    """Takes `model_dir` for this process, lists the source once and plans the steps.

    With `mode`, a folder holding another mode's run is refused (OtherModesFolderError).

    A second run on the same folder is refused at once with the first one's
    process named; files left half-written by a killed run are removed.
    `shared`: the folder belongs to another process that coordinates this one
    (a keras-tuner worker writes trials into its chief's folder, a cluster's
    worker trains beside its chief): no lock taken. `strategy` builds the model
    in its scope.
    """
    started = time.perf_counter()
    with contextlib.nullcontext() if shared else atomic.folder_lock(model_dir):
        if mode is not None:
            check_folder_mode(model_dir, mode)
        index = data.index(source, pipeline)
        index.log_summary()
        plan = plan_steps(train, index.size("train"), pipeline.batch_size)
        yield Run(source, pipeline, model_config, train, model_dir, index, plan, started, strategy)
