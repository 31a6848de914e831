"""tf.estimator.add_metrics: an Estimator whose evaluations also report the metrics a `metric_fn` makes.

`metric_fn(features, labels, predictions, config)` (the arguments its
signature names) returns `{name: metric}` as `eval_metric_ops` take them:
`(value, update_op)` pairs or metric objects. The new Estimator shares the
model folder, config and warm start of the one it extends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.core import tf_internals
from compat.estimator.base import EstimatorBase
from compat.estimator.estimator import Estimator
from compat.estimator.model_fn import ModeKeys

_METRIC_FN_ARGS = {"features", "labels", "predictions", "config"}


def add_metrics(estimator: Estimator, metric_fn: Callable) -> Estimator:
    """`estimator` with `metric_fn`'s metrics added to its evaluations."""
    args = set(tf_internals.fn_args(metric_fn))
    unexpected = sorted(args - _METRIC_FN_ARGS)
    if unexpected:
        raise ValueError(f"metric_fn ({metric_fn}) has following not expected args: {unexpected}")
    if not isinstance(estimator, EstimatorBase):
        raise TypeError(f"add_metrics extends an Estimator, given {type(estimator).__name__}")
    if estimator.engine == "keras":
        raise TypeError(
            "add_metrics extends an Estimator built from a model_fn (custom or canned); a "
            "model_to_estimator Estimator evaluates its Keras model's compiled metrics: add the metric "
            "to model.compile(metrics=...) instead"
        )

    def model_fn_with_metrics(features: Any, labels: Any, mode: str, config: Any):
        spec = estimator.model_fn(features, labels, mode, config)
        if mode != ModeKeys.EVAL:
            return spec
        available = {"features": features, "labels": labels, "predictions": spec.predictions, "config": config}
        added = metric_fn(**{name: value for name, value in available.items() if name in args})
        return spec._replace(eval_metric_ops={**(spec.eval_metric_ops or {}), **added})

    return Estimator(
        model_fn=model_fn_with_metrics,
        model_dir=estimator.model_dir,
        config=estimator.config,
        warm_start_from=estimator._warm_start_settings,
    )
