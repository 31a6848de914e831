"""One training run: what every mode shares, from setup to `metrics.json`.

`open_run(...)` is the start of every mode: it takes the model folder (a lock
that a second run on the same folder is refused by, and that a dead process
does not hold), lists the source once (a `SourceIndex` that every dataset of
the run reads), plans the steps, and starts the clock. The training modes
(`compat.modes.keras_mode`, `compat.modes.estimator_mode`) take the `Run` and end with
`Run.write_metrics`, the one `metrics.json` schema; a search (`compat.modes.tuning`)
takes the `Run` for its trials' data and model, and writes its own result files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

import models
from compat import data
from compat.config import DistributionConfig, PipelineConfig, TrainConfig, check_together
from compat.core import atomic
from compat.data.sources import DataSource, SourceIndex
from compat.modes import charts
from compat.modes.model_folder import CONFUSION_CHART, METRICS, check_folder_mode

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
        pipeline = pipeline or self.pipeline
        if self.strategy is not None:  # fit's distributed dataset copies ahead to each replica's device itself
            pipeline = dataclasses.replace(pipeline, prefetch_to_device=False)
        return data.build_dataset(self.index, pipeline, split)

    def fill_cache(self, split: str) -> None:
        """Writes the split's disk cache now (see `data.fill_cache`)."""
        data.fill_cache(self.index, self.pipeline, split)

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
        """`count` eval clips' features as TensorBoard images (`examples/<i>_<class>`), one class after
        another (the split is in file order, class by class): time left to right, low bins at the bottom,
        each scaled to its own range: what the model sees."""
        if self.pipeline.feature == "waveform":
            return  # a waveform is no picture
        per_class = math.ceil(count / len(self.class_names))
        by_class: dict[int, list[tf.Tensor]] = {}
        for batch, labels in self.dataset("eval"):  # read until each class has its clips, or to the end
            for clip, label in zip(batch[self.pipeline.feature_key], labels.numpy()):
                clips = by_class.setdefault(int(label), [])
                if len(clips) < per_class:
                    clips.append(clip)
            if sum(map(len, by_class.values())) == per_class * len(self.class_names):
                break
        # round robin over the classes: the first clip of each, then the second of each, ...
        chosen = [
            (clips[n], label) for n in range(count) for label, clips in sorted(by_class.items()) if n < len(clips)
        ]
        chosen = chosen[:count]
        if not chosen:
            return
        clips = tf.stack([clip for clip, _ in chosen])
        low = tf.reduce_min(clips, axis=[1, 2], keepdims=True)
        scaled = (clips - low) / tf.maximum(tf.reduce_max(clips, axis=[1, 2], keepdims=True) - low, 1e-6)
        pictures = tf.reverse(tf.transpose(scaled, [0, 2, 1]), axis=[1])[..., tf.newaxis]  # [n, bins, frames, 1]
        with tf.summary.create_file_writer(folder).as_default(step=0):
            for index, (picture, (_, label)) in enumerate(zip(pictures, chosen)):
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
        atomic.write_file(self.path(CONFUSION_CHART), lambda path: charts.confusion_png(path, matrix, names))
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
        atomic.write_json(self.path(METRICS), metrics)
        return metrics


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
    distribution: DistributionConfig | None = None,
) -> Iterator[Run]:
    """Takes `model_dir` for this process, lists the source once and plans the steps.

    With `mode`, a folder holding another mode's run is refused (OtherModesFolderError), and settings that do
    not go together (with `distribution`, default one device) are refused before anything is written
    (`config.check_together`).

    A second run on the same folder is refused at once with the first one's
    process named; files left half-written by a killed run are removed.
    `shared`: the folder belongs to another process that coordinates this one
    (a keras-tuner worker writes trials into its chief's folder, a cluster's
    worker trains beside its chief): no lock taken. `strategy` builds the model
    in its scope.
    """
    started = time.perf_counter()
    if mode is not None:
        check_together(mode, pipeline, train, distribution or DistributionConfig())
    data.check_cache_folder(source, pipeline)  # before the model folder is made
    with contextlib.nullcontext() if shared else atomic.folder_lock(model_dir):
        if mode is not None:
            check_folder_mode(model_dir, mode)
        index = data.index(source, pipeline)
        index.log_summary()
        data.check_audio(index, pipeline)
        plan = plan_steps(train, index.size("train"), pipeline.batch_size)
        yield Run(source, pipeline, model_config, train, model_dir, index, plan, started, strategy)
