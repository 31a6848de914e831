"""A compiled model's `compile()` arguments as Keras 2 read them, given to Keras 3, and the metric names TF 2.15's
model_to_estimator reported.

model_to_estimator trains a Keras 3 copy of the user's model. The copy is compiled from the arguments the user
gave `compile` (Keras 3 and Keras 2 models both keep them), not from the serialized compile config: a config
loses what a class leaves out of `get_config` (Keras 3's `Huber` drops its `delta`), and Keras 2's serialized
config names `metrics=["accuracy"]` after a function chosen before the model saw its labels.

Keras 2's forms are read as Keras 2 read them:
- a flat list of metrics on a model of several outputs applies to each output; one loss applies to each output;
  `loss_weights` weigh the outputs whether one loss or one per output was given;
- Keras 2's built-in losses, metrics and their functions (tf_keras') become Keras 3's of the same name and
  settings; a program's own functions are used as they are.
TF 2.15's model_to_estimator then reported the compiled metrics by Keras 2's graph-mode names (an output's name
before each metric of a model of several outputs; `_1`, `_2` after a name already taken, `weighted_metrics`
included), computed them without the sample weights, and reported none at all when `metrics` was not given.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import keras

from compat.core import tf_internals
from compat.estimator.keras_engine.keras2_artefacts import is_keras2_model


@dataclasses.dataclass(frozen=True)
class MetricSpec:
    """A metric object as a class and its config: each model copy gets a fresh one (a metric's state is its own)."""

    cls: type[keras.metrics.Metric]
    config: dict

    def make(self) -> keras.metrics.Metric:
        return self.cls.from_config(dict(self.config))


@dataclasses.dataclass(frozen=True)
class CompileArguments:
    """What a copy of the model is compiled with, besides its optimizer, in Keras 3's terms.

    Nothing in it holds a TensorFlow variable, so a recipe outlives a parameter-server connection: metric
    objects are kept as `MetricSpec`s (but one whose config does not rebuild it, kept itself), losses (which hold
    no state) as they were given.

    Attributes:
      loss, loss_weights: per output (a list) for a model of several outputs, else as given.
      metrics, weighted_metrics: per output (lists of lists) for a model of several outputs, else one list.
    """

    loss: Any
    loss_weights: Any
    metrics: Any
    weighted_metrics: Any

    @classmethod
    def of(cls, model: Any, output_names: Sequence[str]) -> CompileArguments:
        """The arguments `model` (Keras 3, or Keras 2: tf_keras) was compiled with, read as Keras 2 read them.

        Raises:
          ValueError: a Keras 2 metric of the program's own class, which Keras 3 cannot update.
        """
        given = tf_internals.keras_compile_arguments(model)
        keras2 = is_keras2_model(model)
        # A model whose outputs are a dict takes its arguments keyed by the dict's keys, as Keras 3 reads them:
        # only their leaves are translated
        names = [] if isinstance(getattr(model, "output", None), dict) else list(output_names)

        def leaf(value: Any, kind: str) -> Any:
            value = _keras3_leaf(value, kind) if keras2 else value
            if kind == "metric" and isinstance(value, keras.metrics.Metric):
                return _spec_or_itself(value)
            return value

        return cls(
            loss=_per_output(given.get("loss"), names, lambda value: leaf(value, "loss"), each_output=True),
            loss_weights=_loss_weights(given.get("loss_weights"), names),
            metrics=_metrics(given.get("metrics"), names, lambda value: leaf(value, "metric")),
            weighted_metrics=_metrics(given.get("weighted_metrics"), names, lambda value: leaf(value, "metric")),
        )

    def compile(self, model: keras.Model, optimizer: keras.optimizers.Optimizer) -> None:
        """Compiles `model` (a Keras 3 copy) with `optimizer` and fresh metric objects."""

        def fresh(value: Any) -> Any:
            if isinstance(value, MetricSpec):
                return value.make()
            if isinstance(value, list):
                return [fresh(item) for item in value]
            if isinstance(value, dict):
                return {key: fresh(item) for key, item in value.items()}
            return value

        model.compile(
            optimizer=optimizer,
            loss=self.loss,
            loss_weights=self.loss_weights,
            metrics=fresh(self.metrics),
            weighted_metrics=fresh(self.weighted_metrics),
        )


def _spec_or_itself(metric: keras.metrics.Metric) -> Any:
    """A `MetricSpec` of `metric`, or, where its config does not rebuild it (a function Keras cannot find by
    name, outside `custom_objects`), the metric itself, which the model's copies then share."""
    spec = MetricSpec(type(metric), metric.get_config())
    try:
        spec.make()
    except (TypeError, ValueError):
        return metric
    return spec


def tf215_metrics(model: keras.Model, output_names: Sequence[str]) -> list[tuple[str, keras.metrics.Metric]]:
    """The compiled metrics of `model` (built) under the names TF 2.15's model_to_estimator gave them.

    None when `compile` had no `metrics` (TF 2.15 then reported no compiled metric, weighted ones neither).
    """
    if not tf_internals.keras_compile_arguments(model).get("metrics"):
        return []
    several = len(output_names) > 1
    taken = {"loss", *(f"{name}_loss" for name in output_names if several)}
    named = []
    for output, (plain, weighted) in zip(output_names, tf_internals.keras_compiled_metric_lists(model)):
        for metric in [*plain, *weighted]:
            base = f"{output}_{metric.name}" if several else metric.name
            name, suffix = base, 1
            while name in taken:
                name, suffix = f"{base}_{suffix}", suffix + 1
            taken.add(name)
            named.append((name, metric))
    return named


def _per_output(value: Any, names: list[str], leaf: Callable, each_output: bool) -> Any:
    """A loss argument per output for a model of several outputs (a dict in output order, one loss for each);
    with no names (a model of dict outputs), the argument's own structure, its leaves translated."""
    if not names:
        return _leaves(value, leaf)
    if len(names) <= 1:
        if isinstance(value, dict):
            value = value.get(names[0]) if names else next(iter(value.values()), None)
        elif isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        return None if value is None else leaf(value)
    if isinstance(value, dict):
        return [None if value.get(name) is None else leaf(value[name]) for name in names]
    if isinstance(value, (list, tuple)):
        return [None if item is None else leaf(item) for item in value]
    return [leaf(value)] * len(names) if each_output and value is not None else value


def _loss_weights(value: Any, names: list[str]) -> Any:
    if value is None or len(names) <= 1:
        return value  # one output, or a dict of outputs (keyed as the model's dict)
    if isinstance(value, dict):
        return [float(value.get(name, 1.0)) for name in names]
    return [float(weight) for weight in value]


def _metrics(value: Any, names: list[str], leaf: Callable) -> Any:
    """Metrics as Keras 2 spread them over the outputs: one list, or a list per output for several outputs."""
    if not value:
        return None
    if not names:
        return _leaves(value, leaf)
    if len(names) <= 1:
        if isinstance(value, dict):
            value = next(iter(value.values()), [])
        flat = [item for group in _as_list(value) for item in _as_list(group)]
        return [leaf(item) for item in flat]
    if isinstance(value, dict):
        return [[leaf(item) for item in _as_list(value.get(name, []))] for name in names]
    if any(isinstance(item, (list, tuple)) for item in value):
        return [[leaf(item) for item in _as_list(group)] for group in value]
    return [[leaf(item) for item in value] for _ in names]  # Keras 2 gave each output the same metrics


def _as_list(value: Any) -> list:
    """A group of metrics as a list: one metric alone, or None (an output without metrics) as none."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _leaves(value: Any, leaf: Callable) -> Any:
    """`value` with `leaf` applied to each loss or metric in its dicts and lists (None kept)."""
    if isinstance(value, dict):
        return {key: _leaves(item, leaf) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_leaves(item, leaf) for item in value]
    return None if value is None else leaf(value)


def _keras3_leaf(value: Any, kind: str) -> Any:
    """A Keras 2 loss or metric (an object or function of tf_keras') as Keras 3's of the same name and settings.

    Raises:
      ValueError: a metric class of the program's own, derived from Keras 2's (its state is Keras 2's, which
        the Keras 3 copy cannot update).
    """
    module = keras.losses if kind == "loss" else keras.metrics
    tf_keras = sys.modules.get("tf_keras")
    keras2_metric = tf_keras is not None and isinstance(value, tf_keras.metrics.Metric)
    if isinstance(value, str) or not (keras2_metric or type(value).__module__.startswith("tf_keras")):
        if callable(value) and getattr(value, "__module__", "").startswith("tf_keras"):  # tf_keras' function
            return _keras3_function(value, kind)
        return value  # a name, or the program's own function (or Keras 2 loss, a function of two tensors)
    cls = getattr(module, type(value).__name__, None)
    if cls is None or not type(value).__module__.startswith("tf_keras.src."):
        raise ValueError(
            f"model_to_estimator: the {kind} {type(value).__name__} is a Keras 2 (tf_keras) class, which the Keras 3 "
            f"copy the Estimator trains cannot run: write it as a keras.{module.__name__.split('.')[-1]} subclass "
            "(Keras 3), or as a plain function of (y_true, y_pred)"
        )
    config = dict(value.get_config())
    if config.get("reduction") == "auto":  # Keras 2's AUTO was a mean over the batch
        config["reduction"] = "sum_over_batch_size"
    accepted = inspect.signature(cls.__init__).parameters
    takes_any = any(parameter.kind == parameter.VAR_KEYWORD for parameter in accepted.values())
    return cls(**{key: item for key, item in config.items() if takes_any or key in accepted})


def _keras3_function(function: Callable, kind: str) -> Callable:
    """Keras 3's function of a tf_keras loss or metric function's name (`tf_keras.losses.mean_squared_error`)."""
    name = function.__name__
    for module in (keras.losses, keras.metrics) if kind == "loss" else (keras.metrics, keras.losses):
        found = getattr(module, name, None)
        if callable(found):
            return found
    return function
