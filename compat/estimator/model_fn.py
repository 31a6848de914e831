"""What a model_fn is called with and returns: ModeKeys, EstimatorSpec and call_logit_fn, as tf.estimator.

`EstimatorSpec` makes TF 2.15's checks, with TF 2.15's messages (tests and
programs match on them): a TRAIN spec needs `loss` and `train_op`, an EVAL spec
`loss`, a PREDICT spec `predictions`; `loss` has one element (a `[1]` or
`[None, 1]` loss is reshaped to a scalar); every tensor comes from the default
graph; hooks are SessionRunHooks. It fills in what TF 2.15 filled in: an
empty predictions dict, a default `Scaffold`, and in PREDICT mode a
`serving_default` PredictOutput of the predictions.

Metric objects in `eval_metric_ops` become `(result, update_op)` pairs, their
variables local ones (so each evaluation starts them at zero). Keras 2 metrics
(tf_keras) record their update op in graph mode; a Keras 3 metric's
`update_state` only creates assignments to its variables in the graph, which
are found there and grouped into its update op.
"""

from __future__ import annotations

import collections
import inspect
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from compat.core import tf_internals
from compat.core.tf_internals import export_utils

LOSS_METRIC_KEY = "loss"
AVERAGE_LOSS_METRIC_KEY = "average_loss"


class ModeKeys:
    """The modes a model_fn and an input_fn are called in, as tf.estimator.ModeKeys."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


_ASSIGNMENTS = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}
_WRONG_GRAPH = (
    '{0} with "{1}" must be from the default graph. Possible causes of this error include: \n\n'
    "1) {0} was created outside the context of the default graph.\n\n"
    "2) The object passed through to EstimatorSpec was not created in the most recent call to "
    '"model_fn".'
)


def _is_tensor(value: Any) -> bool:
    """A Tensor or a Variable (TensorFlow's own test for what a spec may hold), not a SparseTensor."""
    return isinstance(value, tf.__internal__.types.Tensor)


def _tensor(value: Any, name: str) -> Any:
    if not _is_tensor(value):
        raise TypeError(f"{name} must be Tensor, given: {value}")
    return value


def _in_default_graph(value: Any, what: str, name: str) -> None:
    if tf.executing_eagerly():
        return
    if value.graph is not tf.compat.v1.get_default_graph():
        raise ValueError(_WRONG_GRAPH.format(what, name))


def _checked_train_op(train_op: Any, mode: str) -> Any:
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if not isinstance(train_op, (tf.Operation, tf.__internal__.types.Tensor)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    if isinstance(train_op, tf.Variable):
        train_op = train_op.op
    _in_default_graph(train_op, "train_op", train_op.name)
    return train_op


def _checked_loss(loss: Any, mode: str) -> Any:
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _tensor(loss, "loss")
    if loss.shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}. Reduce it to one value, e.g. with tf.reduce_mean")
    if not loss.shape.is_compatible_with(tf.TensorShape([])):
        loss = tf.reshape(loss, [])
    _in_default_graph(loss, "loss", loss.name)
    return loss


def _checked_predictions(predictions: Any, mode: str) -> Any:
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        predictions = {key: _tensor(value, f"predictions[{key}]") for key, value in predictions.items()}
        for key, value in predictions.items():
            _in_default_graph(value, "prediction values", f"{key}: {value.name}")
        return predictions
    predictions = _tensor(predictions, "predictions")
    _in_default_graph(predictions, "prediction values", predictions.name)
    return predictions


def _checked_hooks(hooks: Any) -> tuple:
    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def _checked_scaffold(scaffold: Any) -> tf.compat.v1.train.Scaffold:
    scaffold = scaffold or tf.compat.v1.train.Scaffold()
    if not isinstance(scaffold, tf.compat.v1.train.Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
    return scaffold


def is_metric_object(value: Any) -> bool:
    """A Keras 3 or a Keras 2 (tf_keras) metric object: it has a result and variables."""
    return (
        callable(getattr(value, "result", None))
        and callable(getattr(value, "update_state", None))
        and hasattr(value, "variables")
    )


def graph_variable(variable: Any) -> tf.Variable:
    """The TensorFlow variable behind a Keras 3 variable (a TensorFlow variable itself)."""
    return variable if isinstance(variable, tf.Variable) else variable.value


def assignments_to(variables: list) -> list:
    """The ops that write one of `variables`, in the graph that holds them (their initializers left out)."""
    variables = [graph_variable(variable) for variable in variables]
    if not variables:
        return []
    handles = {variable.handle.name for variable in variables}
    initializers = {variable.initializer.name for variable in variables}
    return [
        op
        for op in variables[0].graph.get_operations()
        if op.type in _ASSIGNMENTS and op.inputs and op.inputs[0].name in handles and op.name not in initializers
    ]


def _ancestor_names(op: tf.Operation) -> set[str]:
    stack, seen = [op], set()
    while stack:
        current = stack.pop()
        if current.name not in seen:
            seen.add(current.name)
            stack.extend(tensor.op for tensor in current.inputs)
            stack.extend(current.control_inputs)
    return seen


def _all_or_none(assignments: list) -> None:
    """Makes each assignment wait for every other one's new value, so that a batch that fails (the end of
    the input) updates none of them.

    Keras 2 chained a metric's updates (a Mean's count after its total); Keras 3
    leaves them side by side, and a Mean's count, which needs no input, was
    counted once more on the run that found the input exhausted.
    """
    values = [op.inputs[1].op for op in assignments if len(op.inputs) > 1]
    for op in assignments:
        waits = [value for value in values if value is not op.inputs[1].op and op.name not in _ancestor_names(value)]
        tf_internals.add_control_inputs(op, waits)


def metric_update_ops(metric: Any) -> list:
    """The ops that update `metric` in the default graph.

    A Keras 2 metric lists them in `updates`. A Keras 3 metric keeps no such
    list: its `update_state` assigns to its variables in the graph.
    """
    updates = getattr(metric, "updates", None)
    if updates is not None:
        return list(updates)
    assignments = assignments_to(metric.variables)
    _all_or_none(assignments)
    return assignments


def make_local(variables: list) -> None:
    """Moves metric variables to the local and metric collections, as TF 2.15 did.

    Keras 3 creates them as global variables: a checkpoint would then hold
    them and an evaluation would restore them instead of starting at zero.
    """
    graph = tf.compat.v1.get_default_graph()
    moved = {id(variable) for variable in variables}
    global_variables = graph.get_collection_ref(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
    global_variables[:] = [variable for variable in global_variables if id(variable) not in moved]
    for name in (tf.compat.v1.GraphKeys.LOCAL_VARIABLES, tf.compat.v1.GraphKeys.METRIC_VARIABLES):
        present = {id(variable) for variable in graph.get_collection(name)}
        graph.get_collection_ref(name).extend(variable for variable in variables if id(variable) not in present)


def _checked_metric_ops(eval_metric_ops: Any) -> dict:
    """`{name: (value, update_op)}`, metric objects converted and their variables made local."""
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    checked, metric_variables = {}, []
    for key, value in eval_metric_ops.items():
        if is_metric_object(value):
            updates = metric_update_ops(value)
            if not updates:
                raise ValueError(f'Please call update_state(...) on the "{value.name}" metric')
            result = value.result()
            for tensor in [*updates, result]:
                _in_default_graph(tensor, "eval_metric_ops", f"{key}: {tensor.name}")
            metric_variables += [graph_variable(variable) for variable in value.variables]
            checked[key] = (result, updates[0] if len(updates) == 1 else tf.group(*updates))
            continue
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(
                f"Values of eval_metric_ops must be (metric_value, update_op) tuples, given: {value} for key: {key}"
            )
        for tensor in tf.nest.flatten(value):
            _in_default_graph(tensor, "eval_metric_ops", f"{key}: {tensor.name}")
        checked[key] = value
    make_local(metric_variables)
    return checked


class EstimatorSpec(
    collections.namedtuple(
        "EstimatorSpec",
        [
            "mode",
            "predictions",
            "loss",
            "train_op",
            "eval_metric_ops",
            "export_outputs",
            "training_chief_hooks",
            "training_hooks",
            "scaffold",
            "evaluation_hooks",
            "prediction_hooks",
        ],
    )
):
    """What a model_fn returns for one mode (tf.estimator.EstimatorSpec)."""

    def __new__(
        cls,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metric_ops: Any = None,
        export_outputs: Any = None,
        training_chief_hooks: Any = None,
        training_hooks: Any = None,
        scaffold: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
    ):
        train_op = _checked_train_op(train_op, mode)
        loss = _checked_loss(loss, mode)
        predictions = _checked_predictions(predictions, mode)
        if mode == ModeKeys.PREDICT:
            export_outputs = export_utils.get_export_outputs(export_outputs, predictions)
        return super().__new__(
            cls,
            mode=mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=_checked_metric_ops(eval_metric_ops),
            export_outputs=export_outputs,
            training_chief_hooks=_checked_hooks(training_chief_hooks),
            training_hooks=_checked_hooks(training_hooks),
            scaffold=_checked_scaffold(scaffold),
            evaluation_hooks=_checked_hooks(evaluation_hooks),
            prediction_hooks=_checked_hooks(prediction_hooks),
        )

    def _replace(self, **kwargs) -> EstimatorSpec:
        if "mode" in kwargs and kwargs["mode"] != self.mode:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        return EstimatorSpec(**{**self._asdict(), **kwargs})


def call_logit_fn(logit_fn: Callable, features: Any, mode: str, params: Any, config: Any) -> Any:
    """Calls `logit_fn(features, [mode], [params], [config])` with the arguments its signature names.

    Returns its logits: a Tensor, or a dict of Tensors keyed by head name.
    """
    names = inspect.signature(logit_fn).parameters
    kwargs = {name: value for name, value in (("mode", mode), ("params", params), ("config", config)) if name in names}
    logits = logit_fn(features=features, **kwargs)
    valid_dict = isinstance(logits, dict) and all(
        isinstance(key, str) and isinstance(value, tf.Tensor) for key, value in logits.items()
    )
    if not (valid_dict or isinstance(logits, tf.Tensor)):
        raise ValueError(
            f"logit_fn should return a Tensor or a dictionary mapping strings to Tensors.  logit_fn returned: {logits}"
        )
    return logits


__all__ = [
    "AVERAGE_LOSS_METRIC_KEY",
    "EstimatorSpec",
    "LOSS_METRIC_KEY",
    "ModeKeys",
    "assignments_to",
    "call_logit_fn",
    "graph_variable",
    "is_metric_object",
    "make_local",
    "metric_update_ops",
]
