"""What a model_fn is called with and returns: ModeKeys and EstimatorSpec, as tf.estimator.

`EstimatorSpec` checks what TF 2.15 checked, and names the field and the mode
when something is missing or of the wrong kind: a TRAIN spec needs `loss` and
`train_op`, an EVAL spec `loss`, a PREDICT spec `predictions`; `loss` must be a
scalar; hooks must be SessionRunHooks; metric ops `(value, update_op)` pairs.
"""

from __future__ import annotations

import collections
from typing import Any

import tensorflow as tf


class ModeKeys:
    """The modes a model_fn and an input_fn are called in, as tf.estimator.ModeKeys."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_MODES = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
_FIELDS = ("mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
           "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks", "prediction_hooks")


def _is_tensor(value: Any) -> bool:
    return isinstance(value, (tf.Tensor, tf.Variable, tf.Operation)) or tf.is_tensor(value)


def _check_hooks(hooks: Any, field: str) -> tuple:
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"All hooks in EstimatorSpec.{field} must be SessionRunHook instances, given: {hook!r}")
    return hooks


def _check_metric_ops(eval_metric_ops: Any) -> dict:
    """`{name: (value, update_op)}`; a Keras-style metric object (with result/update ops) is accepted too."""
    checked = {}
    for name, metric in dict(eval_metric_ops or {}).items():
        if isinstance(metric, tuple) and len(metric) == 2:
            checked[name] = metric
        elif hasattr(metric, "result") and hasattr(metric, "variables"):
            checked[name] = metric
        else:
            raise TypeError(f"EstimatorSpec.eval_metric_ops['{name}'] must be a (metric_tensor, update_op) tuple "
                            f"or a Metric object, given: {metric!r}")
    return checked


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """What a model_fn returns for one mode (tf.estimator.EstimatorSpec)."""

    def __new__(cls, mode: str, predictions: Any = None, loss: Any = None, train_op: Any = None,
                eval_metric_ops: Any = None, export_outputs: Any = None, training_chief_hooks: Any = None,
                training_hooks: Any = None, scaffold: Any = None, evaluation_hooks: Any = None,
                prediction_hooks: Any = None):
        if mode not in _MODES:
            raise ValueError(f"EstimatorSpec: mode must be one of {_MODES}, given: {mode!r}")
        if predictions is None and mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions: a model_fn must return EstimatorSpec(predictions=...) in PREDICT mode")
        if predictions is not None and not (_is_tensor(predictions) or isinstance(predictions, dict)):
            raise TypeError(f"EstimatorSpec.predictions must be a Tensor or a dict of Tensors, given: {predictions!r}")
        if isinstance(predictions, dict):
            for key, value in predictions.items():
                if not _is_tensor(value):
                    raise TypeError(f"EstimatorSpec.predictions['{key}'] must be a Tensor, given: {value!r}")
        if loss is None and mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError(f"Missing loss: a model_fn must return EstimatorSpec(loss=...) in {mode.upper()} mode")
        if loss is not None:
            if not _is_tensor(loss):
                raise TypeError(f"EstimatorSpec.loss must be a Tensor, given: {loss!r}")
            if loss.shape.rank not in (None, 0) and loss.shape.num_elements() != 1:
                raise ValueError(f"EstimatorSpec.loss must be a scalar, given a loss of shape {loss.shape}; "
                                 "reduce it, e.g. with tf.reduce_mean")
            if loss.shape.rank not in (None, 0):
                loss = tf.reshape(loss, [])
        if train_op is None and mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op: a model_fn must return EstimatorSpec(train_op=...) in TRAIN mode, "
                             "e.g. optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())")
        if train_op is not None and not _is_tensor(train_op):
            raise TypeError(f"EstimatorSpec.train_op must be an Operation or Tensor, given: {train_op!r}")
        if export_outputs is not None:
            from compat.estimator.export import ExportOutput

            if not isinstance(export_outputs, dict):
                raise TypeError(f"EstimatorSpec.export_outputs must be a dict, given: {export_outputs!r}")
            for key, value in export_outputs.items():
                if not isinstance(value, ExportOutput):
                    raise TypeError(f"EstimatorSpec.export_outputs['{key}'] must be an ExportOutput "
                                    f"(ClassificationOutput, RegressionOutput, PredictOutput), given: {value!r}")
        if scaffold is not None and not isinstance(scaffold, tf.compat.v1.train.Scaffold):
            raise TypeError(f"EstimatorSpec.scaffold must be a tf.compat.v1.train.Scaffold, given: {scaffold!r}")
        return super().__new__(
            cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
            eval_metric_ops=_check_metric_ops(eval_metric_ops), export_outputs=export_outputs,
            training_chief_hooks=_check_hooks(training_chief_hooks, "training_chief_hooks"),
            training_hooks=_check_hooks(training_hooks, "training_hooks"), scaffold=scaffold,
            evaluation_hooks=_check_hooks(evaluation_hooks, "evaluation_hooks"),
            prediction_hooks=_check_hooks(prediction_hooks, "prediction_hooks"))

    def _replace(self, **kwargs):
        return EstimatorSpec(**{**self._asdict(), **kwargs})
