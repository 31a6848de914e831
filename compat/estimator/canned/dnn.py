"""DNNClassifier, DNNRegressor and DNNEstimator: feed-forward networks over feature columns, as TF 2.15's.

The network is a Keras 2 (tf_keras) model named `dnn`, as TF 2.15 built it:
the columns through `DenseFeatures` (`dnn/input_from_feature_columns/
input_layer/<column>...`), then per hidden layer a `Dense` with the
activation (`dnn/hiddenlayer_<i>/{kernel,bias}`, Glorot-uniform kernels),
dropout in training, batch normalization (`dnn/hiddenlayer_<i>/batchnorm_<i>/
{gamma,beta,moving_mean,moving_variance}`, momentum 0.999), and a linear
`dnn/logits` layer. Each layer's output is summarised (`dnn/<layer>/
fraction_of_zero_values`, `dnn/<layer>/activation`). The head turns the
logits into predictions, loss, metrics and the train op, which the optimizer
(default Adagrad at its own rate, 0.001) builds with `get_updates`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.core import tf_internals
from compat.estimator.canned import common, optimizers, v1_heads
from compat.estimator.canned.recipe import CannedRecipe
from compat.estimator.estimator import Estimator
from compat.estimator.head import RegressionHead
from compat.estimator.model_fn import ModeKeys

# TF 2.15's batch normalization momentum: Keras' 0.99 diverged on some problems
_BATCH_NORM_MOMENTUM = 0.999


class _DNNModel(tf_keras.Model):
    """The network: input layer, hidden layers (dropout, batch norm) and logits; called as `model(features, mode)`."""

    def __init__(
        self,
        units: int,
        hidden_units: Sequence[int],
        feature_columns: Sequence,
        activation_fn: Callable,
        dropout: float | None,
        batch_norm: bool,
        name: str = "dnn",
    ):
        super().__init__(name=name)
        common.check_v2_columns(feature_columns)
        # Each layer is named after the graph's name scope of its name where the model is made, as TF 2.15
        # named it: `hiddenlayer_0`, `hiddenlayer_0_1` when a model_fn builds a second DNN in the same graph,
        # `outer/hiddenlayer_0` inside a scope; Keras 2 names the variables after the layers.
        self._input_layer = tf_keras.layers.DenseFeatures(
            feature_columns, name=f"{_scope_name('input_from_feature_columns')}/input_layer"
        )
        self._dropout = dropout
        self._layer_names = [_scope_name(f"hiddenlayer_{index}") for index in range(len(hidden_units))]
        self._hidden_layers = [
            tf_keras.layers.Dense(
                size, activation=activation_fn, kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), name=name
            )
            for name, size in zip(self._layer_names, hidden_units)
        ]
        self._dropout_layers = (
            [tf_keras.layers.Dropout(rate=dropout) for _ in hidden_units] if dropout is not None else []
        )
        self._batch_norm_layers = (
            [
                tf_keras.layers.BatchNormalization(
                    momentum=_BATCH_NORM_MOMENTUM, trainable=True, name=f"{name}/batchnorm_{index}"
                )
                for index, name in enumerate(self._layer_names)
            ]
            if batch_norm
            else []
        )
        self._logits_name = _scope_name("logits")
        self._logits_layer = tf_keras.layers.Dense(
            units, activation=None, kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), name=self._logits_name
        )

    def call(self, features: dict, mode: str) -> tf.Tensor:
        training = mode == ModeKeys.TRAIN
        net = self._input_layer(features, training=training)
        for index, hidden_layer in enumerate(self._hidden_layers):
            net = hidden_layer(net)
            if self._dropout_layers and training:
                net = self._dropout_layers[index](net, training=True)
            if self._batch_norm_layers:
                net = self._batch_norm_layers[index](net, training=training)
            common.add_layer_summary(net, self._layer_names[index])
        logits = self._logits_layer(net)
        common.add_layer_summary(logits, self._logits_name)
        return logits


def _scope_name(name: str) -> str:
    """The name scope `name` opens here, without its slash (unique in a graph; as given when eager)."""
    with tf.compat.v1.name_scope(name) as scope:
        return scope.rstrip("/")


def _check_units(units: Any) -> None:
    if not isinstance(units, int):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")


def dnn_logit_fn_builder(
    units: int,
    hidden_units: Sequence[int],
    feature_columns: Sequence,
    activation_fn: Callable,
    dropout: float | None,
    batch_norm: bool = False,
) -> Callable:
    """A `logit_fn(features, mode)` -> `[batch_size, units]` logits of a DNN under the scope `dnn`, in the
    argument order of TF 2.15's `dnn_logit_fn_builder_v2` (TF 1.x's, with its partitioner, is
    `dnn_logit_fn_builder_v1`).

    `units` is the head's `logits_dimension` (for a MultiHead, the sum of its heads').
    """
    _check_units(units)

    def dnn_logit_fn(features: dict, mode: str) -> tf.Tensor:
        return _DNNModel(units, hidden_units, feature_columns, activation_fn, dropout, batch_norm)(features, mode)

    return dnn_logit_fn


def dnn_logits_and_variables(
    units: int,
    hidden_units: Sequence[int],
    feature_columns: Sequence,
    activation_fn: Callable,
    dropout: float | None,
    batch_norm: bool,
    features: dict,
    mode: str,
) -> tuple[tf.Tensor, list, list]:
    """The DNN's logits, its trainable variables and its update ops (batch norm's moving statistics)."""
    _check_units(units)
    model = _DNNModel(units, hidden_units, feature_columns, activation_fn, dropout, batch_norm)
    logits = model(features, mode)
    return logits, model.trainable_variables, model.updates


def dnn_model_fn(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    hidden_units: Sequence[int],
    feature_columns: Sequence,
    optimizer: Any = "Adagrad",
    activation_fn: Callable = tf.nn.relu,
    dropout: float | None = None,
    config: Any = None,
    use_tpu: bool = False,
    batch_norm: bool = False,
) -> Any:
    """The model_fn of the DNN estimators: the DNN's logits through `head`, trained by `optimizer` (a name, an
    optimizer or a callable: see optimizers.py) with the global step as its step counter. `use_tpu` (TF 2.15's
    argument, in its place) asked for a TPUEstimatorSpec; an EstimatorSpec serves wherever that did off a TPU."""
    del config, use_tpu
    common.check_features(features)
    logits, trainable_variables, update_ops = dnn_logits_and_variables(
        head.logits_dimension, hidden_units, feature_columns, activation_fn, dropout, batch_norm, features, mode
    )
    if mode == ModeKeys.TRAIN:
        optimizer = optimizers.optimizer_for_graph(optimizer)
        common.start_counting_with_global_step(optimizer)
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        optimizer=optimizer,
        logits=logits,
        trainable_variables=trainable_variables,
        update_ops=update_ops,
    )


def _model_fn(
    api: common.Api,
    head: Any,
    hidden_units: Sequence[int],
    feature_columns: Sequence,
    optimizer: Any,
    activation_fn: Callable,
    dropout: float | None,
    batch_norm: bool,
    input_layer_partitioner: Any = None,
) -> Callable:
    """The model_fn of a DNN class of `api` (TF 1.x's take an `input_layer_partitioner`)."""
    settings = {"optimizer": api.checked_optimizer(optimizer), "activation_fn": activation_fn, "dropout": dropout}
    if api.v1:
        settings["input_layer_partitioner"] = input_layer_partitioner
    family_model_fn = dnn_model_fn_v1 if api.v1 else dnn_model_fn
    feature_columns = tuple(feature_columns or ())
    return common.model_fn_calling(
        family_model_fn, head, hidden_units, feature_columns, batch_norm=batch_norm, **settings
    )


class DNNEstimator(Estimator):
    """tf.estimator.DNNEstimator: a DNN over feature columns with any head (e.g. tf.estimator.MultiLabelHead)."""

    def __init__(
        self,
        head: Any,
        hidden_units: Sequence[int],
        feature_columns: Sequence,
        model_dir: str | None = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable = tf.nn.relu,
        dropout: float | None = None,
        config: Any = None,
        warm_start_from: Any = None,
        batch_norm: bool = False,
    ):
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))


class DNNClassifier(Estimator):
    """tf.estimator.DNNClassifier: a DNN with a sigmoid (2 classes) or softmax (more) cross-entropy head."""

    def __init__(
        self,
        hidden_units: Sequence[int],
        feature_columns: Sequence,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable = tf.nn.relu,
        dropout: float | None = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
    ):
        head = common.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("DNNClassifier", locals(), network="dnn")


class DNNRegressor(Estimator):
    """tf.estimator.DNNRegressor: a DNN with a squared-error head over `label_dimension` values."""

    def __init__(
        self,
        hidden_units: Sequence[int],
        feature_columns: Sequence,
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable = tf.nn.relu,
        dropout: float | None = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
        batch_norm: bool = False,
    ):
        head = RegressionHead(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        super().__init__(**common.estimator_arguments(_model_fn, common.TF2, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("DNNRegressor", locals(), network="dnn")


# -- the TF 1.x classes (tf.compat.v1.estimator.DNNClassifier, ...) ------------------------------------------------
# The same network, built as TF 1.x built it: tf.compat.v1.layers made in the variable scopes `dnn/hiddenlayer_<i>`
# and `dnn/logits` under the model's partitioner (one slice per parameter server), so that TF 1.x model folders
# restore, optimizer slots included (`dnn/hiddenlayer_0/kernel/t_0/Adagrad`: the partitioner of the scope the train
# op is made in names them). TF 1.x feature columns are accepted, as TF2 ones, and trained by a tf.compat.v1.train
# optimizer, by default Adagrad at 0.05.

_V1_LEARNING_RATE = 0.05  # TF 1.x's rate for an optimizer named by a string


def _v1_input_layer(features: dict, feature_columns: Sequence, partitioner: Any, training: bool) -> tf.Tensor:
    """`[batch_size, width]` inputs, the columns' variables under `input_from_feature_columns/input_layer`: TF2
    columns through Keras 2's v1 DenseFeatures, TF 1.x columns through tf.compat.v1.feature_column.input_layer."""
    with tf.compat.v1.variable_scope("input_from_feature_columns", partitioner=partitioner):
        if tf_internals.is_feature_column_v2(feature_columns):
            return tf_internals.v1_dense_features(feature_columns, name="input_layer")(features, training=training)
        return tf.compat.v1.feature_column.input_layer(features, feature_columns)


def _v1_dense(units: int, activation_fn: Callable | None, scope: Any) -> Any:
    """A tf.compat.v1.layers Dense whose variables are `<scope>/kernel` and `<scope>/bias`."""
    return tf_internals.legacy_layers().Dense(
        units=units,
        activation=activation_fn,
        kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
        name=scope,
        _scope=scope,
    )


def _v1_hidden_layers(
    hidden_units: Sequence[int], activation_fn: Callable, dropout: float | None, batch_norm: bool
) -> list[tuple]:
    """(scope name, Dense, Dropout or None, BatchNormalization or None) per hidden layer, each made in its
    `hiddenlayer_<i>` variable scope as TF 1.x made them."""
    legacy = tf_internals.legacy_layers()
    layers = []
    for index, size in enumerate(hidden_units):
        with tf.compat.v1.variable_scope(f"hiddenlayer_{index}") as scope:
            dense = _v1_dense(size, activation_fn, scope)
            drop = legacy.Dropout(rate=dropout) if dropout is not None else None
            norm = (
                legacy.BatchNormalization(
                    momentum=_BATCH_NORM_MOMENTUM,
                    trainable=True,
                    name=f"batchnorm_{index}",
                    _scope=f"batchnorm_{index}",
                )
                if batch_norm
                else None
            )
        layers.append((scope.name, dense, drop, norm))
    return layers


def dnn_logit_fn_builder_v1(
    units: int,
    hidden_units: Sequence[int],
    feature_columns: Sequence,
    activation_fn: Callable,
    dropout: float | None,
    input_layer_partitioner: Any = None,
    batch_norm: bool = False,
) -> Callable:
    """TF 1.x's `logit_fn(features, mode)` -> `[batch_size, units]` logits, the variables under the caller's variable
    scope (`hiddenlayer_<i>/...`, `logits/...`, `input_from_feature_columns/input_layer/...`, the input layer cut by
    `input_layer_partitioner`). TF 1.x and TF2 feature columns are both accepted."""
    _check_units(units)

    def dnn_logit_fn(features: dict, mode: str) -> tf.Tensor:
        training = mode == ModeKeys.TRAIN
        hidden_layers = _v1_hidden_layers(hidden_units, activation_fn, dropout, batch_norm)
        with tf.compat.v1.variable_scope("logits") as logits_scope:
            logits_layer = _v1_dense(units, None, logits_scope)
        net = _v1_input_layer(features, feature_columns, input_layer_partitioner, training)
        for scope_name, dense, drop, norm in hidden_layers:
            net = dense(net)
            if drop is not None and training:
                net = drop(net, training=True)
            if norm is not None:
                net = norm(net, training=training)
            common.add_layer_summary(net, scope_name)
        logits = logits_layer(net)
        common.add_layer_summary(logits, logits_scope.name)
        return logits

    return dnn_logit_fn


def dnn_model_fn_v1(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    hidden_units: Sequence[int],
    feature_columns: Sequence,
    optimizer: Any = "Adagrad",
    activation_fn: Callable = tf.nn.relu,
    dropout: float | None = None,
    input_layer_partitioner: Any = None,
    config: Any = None,
    use_tpu: bool = False,
    batch_norm: bool = False,
) -> Any:
    """The model_fn of the v1 DNN estimators: the network under the variable scope `dnn` (the model's partitioner),
    its logits through `head`, trained by a tf.compat.v1.train `optimizer` (a name at 0.05, an optimizer or a callable,
    called in every mode as TF 1.x did). `use_tpu`: as `dnn_model_fn`'s."""
    del use_tpu
    optimizer = optimizers.get_v1_optimizer_instance(optimizer, _V1_LEARNING_RATE)
    common.check_features(features)
    with tf.compat.v1.variable_scope(
        "dnn", values=tuple(features.values()), partitioner=common.v1_model_partitioner(config)
    ):
        logit_fn = dnn_logit_fn_builder_v1(
            head.logits_dimension,
            hidden_units,
            feature_columns,
            activation_fn,
            dropout,
            input_layer_partitioner or common.v1_input_layer_partitioner(config),
            batch_norm,
        )
        logits = logit_fn(features=features, mode=mode)
        # made in the scope, as TF 1.x made it: its partitioner names the slots
        return v1_heads.v1_estimator_spec(head, features, mode, labels, logits, optimizer=optimizer)


class DNNEstimatorV1(Estimator):
    """tf.compat.v1.estimator.DNNEstimator: TF 1.x's DNN with any head. A TF2 head (tf.estimator.*Head) trains
    with the v1 optimizer through its `train_op_fn` (TF 2.15 refused the v1 optimizer there)."""

    def __init__(
        self,
        head: Any,
        hidden_units: Sequence[int],
        feature_columns: Sequence,
        model_dir: str | None = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable = tf.nn.relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        batch_norm: bool = False,
    ):
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))


class DNNClassifierV1(Estimator):
    """tf.compat.v1.estimator.DNNClassifier: TF 1.x's DNN with a sigmoid or softmax head, the loss summed over the
    batch (`loss_reduction`, a tf.compat.v1.losses.Reduction)."""

    def __init__(
        self,
        hidden_units: Sequence[int],
        feature_columns: Sequence,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable = tf.nn.relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
        batch_norm: bool = False,
    ):
        head = v1_heads.classifier_head_v1(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("DNNClassifierV1", locals(), network="dnn")


class DNNRegressorV1(Estimator):
    """tf.compat.v1.estimator.DNNRegressor: TF 1.x's DNN with a squared-error head, summed over the batch."""

    def __init__(
        self,
        hidden_units: Sequence[int],
        feature_columns: Sequence,
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Adagrad",
        activation_fn: Callable = tf.nn.relu,
        dropout: float | None = None,
        input_layer_partitioner: Any = None,
        config: Any = None,
        warm_start_from: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
        batch_norm: bool = False,
    ):
        head = v1_heads.regression_head(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        super().__init__(**common.estimator_arguments(_model_fn, common.TF1, head, locals()))
        self.keras_recipe = CannedRecipe.from_arguments("DNNRegressorV1", locals(), network="dnn")


__all__ = [
    "DNNClassifier",
    "DNNClassifierV1",
    "DNNEstimator",
    "DNNEstimatorV1",
    "DNNRegressor",
    "DNNRegressorV1",
    "dnn_logit_fn_builder",
    "dnn_logit_fn_builder_v1",
    "dnn_logits_and_variables",
    "dnn_model_fn",
    "dnn_model_fn_v1",
]
