"""DNNLinearCombinedClassifier / Regressor / Estimator ("wide and deep"), as TF 2.15's.

The logits are the sum of a DNN's (`dnn/...`, as dnn.py builds it) and a
linear model's (`linear/linear_model/...`, as linear.py builds it); either
part may be left out. Each part trains with its own optimizer on its own
variables, both in one train op: the DNN's (default Adagrad at 0.001) counts
with the global step; the linear part's (default FTRL at
min(0.005, 1/sqrt(number of linear columns))) counts in its own
`training/<Name>/iter`, unless there is no DNN part. The linear logits are
summarised as `linear/fraction_of_zero_values` and `linear/activation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from compat.estimator.canned import common, optimizers, v1_heads
from compat.estimator.canned.dnn import dnn_logit_fn_builder_v1, dnn_logits_and_variables
from compat.estimator.canned.linear import linear_logit_fn_builder_v1, linear_logits_and_variables
from compat.estimator.canned.recipe import CannedRecipe
from compat.estimator.estimator import Estimator
from compat.estimator.head import RegressionHead, base_head
from compat.estimator.model_fn import ModeKeys

_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


def _linear_learning_rate(num_linear_feature_columns: int) -> float:
    return min(_LINEAR_LEARNING_RATE, 1.0 / math.sqrt(num_linear_feature_columns))


def _refuse_sync_replicas(optimizer: Any) -> None:
    if isinstance(optimizer, tf.compat.v1.train.SyncReplicasOptimizer):
        raise ValueError(
            "SyncReplicasOptimizer does not support multi optimizers case. Therefore, it is not "
            "supported in DNNLinearCombined model; use a DNN or a linear estimator with it."
        )


def dnn_linear_combined_model_fn(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    linear_feature_columns: Sequence | None = None,
    linear_optimizer: Any = "Ftrl",
    dnn_feature_columns: Sequence | None = None,
    dnn_optimizer: Any = "Adagrad",
    dnn_hidden_units: Sequence[int] | None = None,
    dnn_activation_fn: Callable = tf.nn.relu,
    dnn_dropout: float | None = None,
    config: Any = None,
    batch_norm: bool = False,
    linear_sparse_combiner: str = "sum",
    loss_reduction: str | None = None,
) -> Any:
    """The model_fn of the combined estimators: the DNN's and the linear model's logits summed through `head`,
    each part trained by its own optimizer in one train op; `loss_reduction` (default: the head's) scales it."""
    del config
    common.check_features(features)
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    training = mode == ModeKeys.TRAIN
    parts: list[tuple[Any, Any, list, list]] = []  # (logits, optimizer, trainable variables, update ops)
    if dnn_feature_columns:
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        parts.append(
            _dnn_part(
                head,
                features,
                mode,
                dnn_feature_columns,
                dnn_optimizer,
                dnn_hidden_units,
                dnn_activation_fn,
                dnn_dropout,
                batch_norm,
            )
        )
    if linear_feature_columns:
        parts.append(
            _linear_part(head, features, training, linear_feature_columns, linear_optimizer, linear_sparse_combiner)
        )
    if training:
        common.start_counting_with_global_step(parts[0][1])  # the other part's optimizer counts on its own

    def train_op_fn(loss: tf.Tensor) -> tf.Operation:
        loss = base_head.scale_loss_for_replicas(loss, loss_reduction or getattr(head, "loss_reduction", None))
        updates = []
        for _, optimizer, variables, update_ops in parts:
            updates.extend(optimizer.get_updates(loss, variables))
            updates.extend(update_ops)
        return tf.group(*updates)

    logits = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]
    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, train_op_fn=train_op_fn, logits=logits
    )


def _dnn_part(
    head: Any,
    features: dict,
    mode: str,
    columns: Sequence,
    optimizer: Any,
    hidden_units: Sequence[int],
    activation_fn: Callable,
    dropout: float | None,
    batch_norm: bool,
) -> tuple[Any, Any, list, list]:
    """The DNN part: (logits, its optimizer in training else None, its trainable variables, update ops)."""
    optimizer = optimizers.optimizer_for_graph(optimizer, _DNN_LEARNING_RATE) if mode == ModeKeys.TRAIN else None
    _refuse_sync_replicas(optimizer)
    logits, variables, update_ops = dnn_logits_and_variables(
        head.logits_dimension, hidden_units, columns, activation_fn, dropout, batch_norm, features, mode
    )
    return logits, optimizer, variables, update_ops


def _linear_part(
    head: Any, features: dict, training: bool, columns: Sequence, optimizer: Any, sparse_combiner: str
) -> tuple[Any, Any, list, list]:
    """The linear part: (logits, its optimizer in training else None, its trainable variables, no update ops)."""
    optimizer = optimizers.optimizer_for_graph(optimizer, _linear_learning_rate(len(columns))) if training else None
    _refuse_sync_replicas(optimizer)
    logits, variables = linear_logits_and_variables(head.logits_dimension, columns, sparse_combiner, features)
    common.add_layer_summary(logits, "linear")
    return logits, optimizer, variables, []


def _model_fn(
    api: common.Api,
    head: Any,
    linear_feature_columns: Sequence | None,
    linear_optimizer: Any,
    dnn_feature_columns: Sequence | None,
    dnn_optimizer: Any,
    dnn_hidden_units: Sequence[int] | None,
    dnn_activation_fn: Callable,
    dnn_dropout: float | None,
    batch_norm: bool,
    linear_sparse_combiner: str,
    input_layer_partitioner: Any = None,
) -> Callable:
    """The model_fn of a wide-and-deep class of `api` (TF 1.x's take an `input_layer_partitioner`)."""
    linear_feature_columns = tuple(linear_feature_columns or ())
    dnn_feature_columns = tuple(dnn_feature_columns or ())
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    # linear_sparse_combiner: checked where a categorical column uses it, as TF 2.15 checked it
    settings = {
        "linear_feature_columns": linear_feature_columns,
        "linear_optimizer": api.checked_optimizer(linear_optimizer),
        "dnn_feature_columns": dnn_feature_columns,
        "dnn_optimizer": api.checked_optimizer(dnn_optimizer),
        "dnn_hidden_units": dnn_hidden_units,
        "dnn_activation_fn": dnn_activation_fn,
        "dnn_dropout": dnn_dropout,
        "batch_norm": batch_norm,
        "linear_sparse_combiner": linear_sparse_combiner,
    }
    if api.v1:
        return common.model_fn_calling(
            dnn_linear_combined_model_fn_v1, head, input_layer_partitioner=input_layer_partitioner, **settings
        )
    return common.model_fn_calling(dnn_linear_combined_model_fn, head, **settings)


class DNNLinearCombinedEstimator(Estimator):
    """tf.estimator.DNNLinearCombinedEstimator: wide and deep with any head.

    `warm_start_from` is this project's addition (TF 2.15's took none here).
    """

    def __init__(
        self,
        head: Any,
        model_dir: str | None = None,
        linear_feature_columns: Sequence | None = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Sequence | None = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Sequence[int] | None = None,
        dnn_activation_fn: Callable = tf.nn.relu,
        dnn_dropout: float | None = None,
        config: Any = None,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
        warm_start_from: Any = None,
    ):
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))


class DNNLinearCombinedClassifier(Estimator):
    """tf.estimator.DNNLinearCombinedClassifier: wide and deep with a sigmoid or softmax cross-entropy head."""

    def __init__(
        self,
        model_dir: str | None = None,
        linear_feature_columns: Sequence | None = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Sequence | None = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Sequence[int] | None = None,
        dnn_activation_fn: Callable = tf.nn.relu,
        dnn_dropout: float | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ):
        head = common.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments(
            "DNNLinearCombinedClassifier", locals(), network="dnn_linear_combined"
        )


class DNNLinearCombinedRegressor(Estimator):
    """tf.estimator.DNNLinearCombinedRegressor: wide and deep with a squared-error head."""

    def __init__(
        self,
        model_dir: str | None = None,
        linear_feature_columns: Sequence | None = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Sequence | None = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Sequence[int] | None = None,
        dnn_activation_fn: Callable = tf.nn.relu,
        dnn_dropout: float | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ):
        head = RegressionHead(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments(
            "DNNLinearCombinedRegressor", locals(), network="dnn_linear_combined"
        )


# -- the TF 1.x classes (tf.compat.v1.estimator.DNNLinearCombinedClassifier, ...) ----------------------------------
# The parts as dnn.py's and linear.py's v1 models build them, under the variable scopes `dnn` (the model's
# partitioner) and `linear` (the input layer's); each part's tf.compat.v1.train optimizer (by default Adagrad at 0.001
# and FTRL at min(0.005, 1/sqrt(number of linear columns))) minimizes the loss over the trainable variables of its
# scope, made outside both scopes (slots `dnn/.../Adagrad`, `linear/.../Ftrl`), and the train op then advances the
# global step once.


def _v1_part(scope: str, partitioner: Any, features: dict, build: Callable[[], tf.Tensor]) -> tuple[tf.Tensor, str]:
    """(logits, the absolute variable scope name) of one part built by `build` under the variable scope `scope`."""
    with tf.compat.v1.variable_scope(scope, values=tuple(features.values()), partitioner=partitioner) as variables:
        return build(), variables.name


def _v1_train_op_fn(parts: list) -> Callable[[tf.Tensor], tf.Operation]:
    """Each part's optimizer minimizing the loss over its scope's trainable variables, then the global step + 1."""

    def train_op_fn(loss: tf.Tensor) -> tf.Operation:
        steps = [
            optimizer.minimize(
                loss, var_list=tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope=scope)
            )
            for _, optimizer, scope in parts
        ]
        with tf.control_dependencies([tf.group(*steps)]):
            return tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1).op

    return train_op_fn


def dnn_linear_combined_model_fn_v1(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    linear_feature_columns: Sequence | None = None,
    linear_optimizer: Any = "Ftrl",
    dnn_feature_columns: Sequence | None = None,
    dnn_optimizer: Any = "Adagrad",
    dnn_hidden_units: Sequence[int] | None = None,
    dnn_activation_fn: Callable = tf.nn.relu,
    dnn_dropout: float | None = None,
    input_layer_partitioner: Any = None,
    config: Any = None,
    batch_norm: bool = False,
    linear_sparse_combiner: str = "sum",
) -> Any:
    """The model_fn of the v1 combined estimators: the sum of the v1 DNN's and the v1 linear model's logits through
    `head`, each part trained by its own tf.compat.v1.train optimizer in one train op."""
    common.check_features(features)
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    input_layer_partitioner = input_layer_partitioner or common.v1_input_layer_partitioner(config)
    parts = []  # (logits, optimizer, absolute variable scope)
    if dnn_feature_columns:
        optimizer = optimizers.get_v1_optimizer_instance(dnn_optimizer, _DNN_LEARNING_RATE)
        _refuse_sync_replicas(optimizer)
        if not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        logit_fn = dnn_logit_fn_builder_v1(
            head.logits_dimension,
            dnn_hidden_units,
            dnn_feature_columns,
            dnn_activation_fn,
            dnn_dropout,
            input_layer_partitioner,
            batch_norm,
        )
        logits, scope = _v1_part(
            "dnn", common.v1_model_partitioner(config), features, lambda: logit_fn(features=features, mode=mode)
        )
        parts.append((logits, optimizer, scope))
    if linear_feature_columns:
        optimizer = optimizers.get_v1_optimizer_instance(
            linear_optimizer, _linear_learning_rate(len(linear_feature_columns))
        )
        _refuse_sync_replicas(optimizer)
        logit_fn = linear_logit_fn_builder_v1(head.logits_dimension, linear_feature_columns, linear_sparse_combiner)

        def linear_logits() -> tf.Tensor:
            logits = logit_fn(features=features)
            common.add_layer_summary(logits, tf.compat.v1.get_variable_scope().name)
            return logits

        logits, scope = _v1_part("linear", input_layer_partitioner, features, linear_logits)
        parts.append((logits, optimizer, scope))
    logits = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]
    return v1_heads.v1_estimator_spec(head, features, mode, labels, logits, train_op_fn=_v1_train_op_fn(parts))


class DNNLinearCombinedEstimatorV1(Estimator):
    """tf.compat.v1.estimator.DNNLinearCombinedEstimator: TF 1.x's wide and deep with any head (a TF2 head trains
    through `train_op_fn`, as in TF 2.15). As TF 2.15's, it takes no `warm_start_from`."""

    def __init__(
        self,
        head: Any,
        model_dir: str | None = None,
        linear_feature_columns: Sequence | None = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Sequence | None = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Sequence[int] | None = None,
        dnn_activation_fn: Callable = tf.nn.relu,
        dnn_dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ):
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))


class DNNLinearCombinedClassifierV1(Estimator):
    """tf.compat.v1.estimator.DNNLinearCombinedClassifier: TF 1.x's wide and deep with a sigmoid or softmax head,
    the loss summed over the batch (`loss_reduction`, a tf.compat.v1.losses.Reduction)."""

    def __init__(
        self,
        model_dir: str | None = None,
        linear_feature_columns: Sequence | None = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Sequence | None = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Sequence[int] | None = None,
        dnn_activation_fn: Callable = tf.nn.relu,
        dnn_dropout: float | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ):
        head = v1_heads.classifier_head_v1(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments(
            "DNNLinearCombinedClassifierV1", locals(), network="dnn_linear_combined"
        )


class DNNLinearCombinedRegressorV1(Estimator):
    """tf.compat.v1.estimator.DNNLinearCombinedRegressor: TF 1.x's wide and deep with a squared-error head, summed
    over the batch."""

    def __init__(
        self,
        model_dir: str | None = None,
        linear_feature_columns: Sequence | None = None,
        linear_optimizer: Any = "Ftrl",
        dnn_feature_columns: Sequence | None = None,
        dnn_optimizer: Any = "Adagrad",
        dnn_hidden_units: Sequence[int] | None = None,
        dnn_activation_fn: Callable = tf.nn.relu,
        dnn_dropout: float | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
        batch_norm: bool = False,
        linear_sparse_combiner: str = "sum",
    ):
        head = v1_heads.regression_head(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments(
            "DNNLinearCombinedRegressorV1", locals(), network="dnn_linear_combined"
        )


__all__ = [
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedClassifierV1",
    "DNNLinearCombinedEstimator",
    "DNNLinearCombinedEstimatorV1",
    "DNNLinearCombinedRegressor",
    "DNNLinearCombinedRegressorV1",
    "dnn_linear_combined_model_fn",
    "dnn_linear_combined_model_fn_v1",
]
