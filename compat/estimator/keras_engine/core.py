"""The Keras engine's state: the model copies, step counters, checkpoints and summary writers of a
model_to_estimator Estimator, and what it reads of the features. Training (loop.py) and evaluation
(evaluation.py) build on it; engine.py puts them together as `KerasEstimator`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from compat.core import strategies
from compat.core.checkpoints import restore_newest_readable
from compat.estimator.base import (
    EstimatorBase,
)
from compat.estimator.input_fns import (
    split_features_labels,
)
from compat.estimator.keras_engine import checkpoint as keras_checkpoint
from compat.estimator.keras_engine import keras2_artefacts as keras_legacy
from compat.estimator.keras_engine.input_reading import (
    FEATURES_AND_WEIGHTS,
    check_covers,
    feature_key,
    input_structure,
    output_names,
)
from compat.estimator.run_config import RunConfig, TaskType


@dataclasses.dataclass
class EngineState:
    """What the Keras engine's parts share, made once by `KerasEngine.__init__`: training (loop.py),
    evaluation (evaluation.py) and export (engine.py) read and update it here, and nowhere else.

    Attributes:
      strategy: what training runs under (None: one device).
      coordinator: a ParameterServerStrategy's ClusterCoordinator (this process is its chief), else None.
      keras_model: the model training steps (the strategy's copy).
      model: what evaluation, prediction and export read: `keras_model`, or a copy of its own when the
        strategy spans workers (a multi-worker copy's metrics are summed across workers at every read, which
        needs every worker evaluating too; TF 2.15 evaluated without the training strategy as well).
      metric_names_map, export_outputs: model_to_estimator's arguments.
      custom_objects: what copies of the model are built with.
      keras2_architecture: the Keras 2 model it was made from (trained as a Keras 3 copy), which `to_keras`
        gives back; None for a Keras 3 model.
      global_step, last_loss, examples: the step counter, the last step's loss and the examples trained on
        (all replicas), variables on the ps tasks under a ParameterServerStrategy.
      manager: the model folder's checkpoints.
      restored_from: id(model) -> the checkpoint it holds ("" for the starting weights).
      train_loop, evaluation_loop: the compiled loops, traced at their first use.
      metrics_built: id(model)s whose metrics are built.
      writers: summary writers by folder.
    """

    strategy: tf.distribute.Strategy | None
    coordinator: Any
    keras_model: keras.Model
    model: keras.Model
    metric_names_map: dict
    export_outputs: dict
    custom_objects: dict
    keras2_architecture: keras_legacy.Keras2Architecture | None
    global_step: tf.Variable
    last_loss: tf.Variable
    examples: tf.Variable
    manager: tf.train.CheckpointManager
    restored_from: dict[int, str] = dataclasses.field(default_factory=dict)
    train_loop: Callable | None = None
    evaluation_loop: Callable | None = None
    metrics_built: set[int] = dataclasses.field(default_factory=set)
    writers: dict[str, tf.summary.SummaryWriter] = dataclasses.field(default_factory=dict)


class KerasEngine(EstimatorBase):
    """A tf.estimator.Estimator backed by a compiled Keras model; made by `model_to_estimator`.

    The graph engine's sibling (base.py), registered as an `Estimator` below.
    """

    def __init__(
        self,
        keras_model: keras.Model,
        model_dir: str | None = None,
        config: RunConfig | None = None,
        metric_names_map: dict | None = None,
        export_outputs: dict | None = None,
        evaluation_model: keras.Model | None = None,
        strategy: tf.distribute.Strategy | None = None,
        custom_objects: dict | None = None,
        keras2_architecture: keras_legacy.Keras2Architecture | None = None,
        training_summaries: str = "tf215",
    ):
        self._init_base(model_dir, config, params=None)
        self._training_summaries = training_summaries
        # `strategy`: one RunConfig does not carry, as TF 2.15's refused ParameterServerStrategy there.
        strategy = strategy or self._config.train_distribute
        # Under a ParameterServerStrategy this process coordinates: the steps run on the workers, sent
        # there as closures, and the variables (the step counters too) live on the ps tasks.
        parameter_server = strategies.plan_of(strategy).coordinated
        coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy) if parameter_server else None
        with strategy.scope() if parameter_server else contextlib.nullcontext():
            counters = [
                tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step"),
                tf.Variable(float("nan"), trainable=False, name="last_loss"),
                tf.Variable(0, dtype=tf.int64, trainable=False, name="examples"),  # all replicas
            ]
        # The chief writes the model folder; another worker of a cluster saves where TF 2.15 put it,
        # <model_dir>/tmp_worker_<i>, since saving takes part in its replicas' synchronisation.
        # (an evaluator's RunConfig says is_chief under a strategy, as TF 2.15's did; it writes no checkpoint)
        writes = self._config.is_chief and self._config.task_type != TaskType.EVALUATOR
        checkpoint_dir = (
            self.model_dir if writes else os.path.join(self.model_dir, f"tmp_worker_{self._config.task_id}")
        )
        if writes:
            keras_checkpoint.adopt_saved_checkpoints(checkpoint_dir)
        self._state = EngineState(
            strategy=strategy,
            coordinator=coordinator,
            keras_model=keras_model,
            model=evaluation_model or keras_model,
            metric_names_map=dict(metric_names_map or {}),
            export_outputs=dict(export_outputs or {}),
            custom_objects=dict(custom_objects or {}),
            keras2_architecture=keras2_architecture,
            global_step=counters[0],
            last_loss=counters[1],
            examples=counters[2],
            manager=tf.train.CheckpointManager(
                keras_checkpoint.checkpoint_root(keras_model, counters[0]),
                checkpoint_dir,
                max_to_keep=self._config.keep_checkpoint_max if writes else 1,
                keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
                checkpoint_name="model.ckpt",
            ),
        )
        if self.latest_checkpoint() is None and writes:
            self._write_warm_start()

    @property
    def strategy(self) -> tf.distribute.Strategy | None:
        """The strategy training runs under (a ParameterServerStrategy's chief coordinates the workers)."""
        return self._state.strategy

    @property
    def model_fn(self) -> Callable:
        def model_fn(features, labels, mode, config):
            raise NotImplementedError(
                "model_to_estimator's Estimator trains the Keras model eagerly: it has no "
                "graph model_fn to call. Call the Keras model, or train/evaluate/predict"
            )

        return model_fn

    @property
    def output_names(self) -> list[str]:
        """A Keras model's outputs are named after their last layers (a Sequential model's, after its last)."""
        return output_names(self._state.model)

    # -- state --------------------------------------------------------------
    def _write_warm_start(self) -> None:
        """Saves the Keras model's current weights, all of them, as the warm-start copy.

        TF 2.15 warm-started trainable variables only, so batch-norm moving
        statistics restarted from zero; here the in-memory model keeps all.
        """
        keras_dir = os.path.join(self.model_dir, "keras")
        tf.io.gfile.makedirs(keras_dir)
        keras_checkpoint.write_weights(
            self._state.keras_model, self._state.global_step, os.path.join(keras_dir, "keras_model.ckpt")
        )

    def _restore(self, checkpoint_path: str | None = None, model: keras.Model | None = None) -> int:
        """Loads `checkpoint_path` (default: the latest) into `model` (default: the evaluation copy);
        returns its step."""
        model = model or self._state.model
        path = checkpoint_path or self.latest_checkpoint()
        if path is None:
            if model is not self._state.keras_model and self._state.restored_from.get(id(model)) is None:
                model.set_weights(self._state.keras_model.get_weights())  # the starting weights
                self._state.restored_from[id(model)] = ""
            return int(self._state.global_step.numpy())
        if path != self._state.restored_from.get(id(model)):
            # The newest checkpoint may be unreadable (truncated, a shard missing): fall back past it.
            state = tf.train.get_checkpoint_state(self.model_dir)  # the chief's, on every task
            saved = list(reversed(state.all_model_checkpoint_paths)) if state else []
            candidates = saved if saved and path == saved[0] else [path]
            path = restore_newest_readable(
                candidates, lambda p: keras_checkpoint.restore(model, self._state.global_step, p)
            )
            assert path is not None  # candidates is never empty
            self._state.restored_from[id(model)] = path
        return int(self._state.global_step.numpy())

    def _save(self, listeners: Sequence) -> bool:
        """Writes model.ckpt-<step>; returns True if a listener asks training to stop."""
        step = int(self._state.global_step.numpy())
        for listener in listeners:
            listener.before_save(None, step)
        path = self._state.manager.save(checkpoint_number=step)
        self._state.restored_from[id(self._state.keras_model)] = path
        tf.compat.v1.logging.info("Saving checkpoints for %d into %s.", step, path)
        # Every listener hears every save, even after one of them asked to stop.
        stops = [bool(listener.after_save(None, step)) for listener in listeners]
        return any(stops)

    def _writer(self, folder: str) -> tf.summary.SummaryWriter:
        """One summary writer (one events file) per folder for this Estimator, as TF 2.15's writer cache."""
        if folder not in self._state.writers:
            self._state.writers[folder] = tf.summary.create_file_writer(folder)
        return self._state.writers[folder]

    # -- features --------------------------------------------------------------
    def model_inputs(self, features: Any) -> Any:
        """The model's inputs, matched by name; extra feature keys are ignored, as tf.estimator did."""
        if not isinstance(features, dict):
            return features
        names = [tensor.name for tensor in self._state.model.inputs]
        keys = [feature_key(self._state.model, name, features) for name in names]
        check_covers(features, keys, "features", "input")
        if len(names) == 1 and not isinstance(input_structure(self._state.model), dict):
            return features[keys[0]]  # the model takes one tensor, not a dict
        return {name: features[key] for name, key in zip(names, keys)}

    def model_targets(self, labels: Any) -> Any:
        """Labels as Keras takes them: a dict keyed by output name becomes the outputs' list, in order."""
        if not isinstance(labels, dict):
            return labels
        names = self.output_names
        check_covers(labels, names, "labels", "output")
        return labels[names[0]] if len(names) == 1 else [labels[name] for name in names]

    def _inputs_and_weights(self, features: Any) -> tuple[Any, Any]:
        """(model inputs, sample weights): `{'features': ..., 'sample_weights': ...}` carries weights."""
        if isinstance(features, dict) and set(features) == FEATURES_AND_WEIGHTS:
            return self.model_inputs(features["features"]), features["sample_weights"]
        return self.model_inputs(features), None

    def _build_metrics(self, element_spec, model: keras.Model | None = None) -> None:
        """Checks the feature names and builds `model`'s (default: the evaluation copy's) compiled
        metrics' state on one batch of zeros.

        Keras builds metrics at their first update; inside a tf.function that
        creates variables, which makes TensorFlow trace the function twice.
        """
        model = model or self._state.model
        features, labels = split_features_labels(element_spec)
        self._inputs_and_weights(features)  # a missing input or output key is named before any tracing
        self.model_targets(labels)
        if id(model) in self._state.metrics_built:
            return
        strategy = self._state.strategy if model is self._state.keras_model else None
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            self._build_metrics_now(element_spec, model)
        self._state.metrics_built.add(id(model))

    def _build_metrics_now(self, element_spec, model: keras.Model) -> None:
        features, labels = split_features_labels(element_spec)

        def zeros(shape, dtype):
            return tf.zeros([1 if d is None else d for d in shape], dtype)

        inputs = {tensor.name: zeros(tensor.shape, tensor.dtype) for tensor in model.inputs}
        if len(model.inputs) == 1 and not isinstance(input_structure(model), dict):
            inputs = next(iter(inputs.values()))
        predictions = model(inputs, training=False)
        labels = self.model_targets(tf.nest.map_structure(lambda spec: zeros([1, *spec.shape[1:]], spec.dtype), labels))
        model.compute_metrics(inputs, labels, predictions, sample_weight=None)
        model.reset_metrics()
