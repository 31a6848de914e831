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

from typing import Any, Callable, Sequence

import tensorflow as tf
import tf_keras

from compat.estimator.canned import common, optimizers
from compat.estimator.estimator import Estimator
from compat.estimator.head import RegressionHead
from compat.estimator.model_fn import ModeKeys

# TF 2.15's batch normalization momentum: Keras' 0.99 diverged on some problems
_BATCH_NORM_MOMENTUM = 0.999


class _DNNModel(tf_keras.Model):
    """The network: input layer, hidden layers (dropout, batch norm) and logits; called as `model(features, mode)`."""

    def __init__(self, units: int, hidden_units: Sequence[int], feature_columns: Sequence, activation_fn: Callable,
                 dropout: float | None, batch_norm: bool, name: str = "dnn"):
        super().__init__(name=name)
        common.check_v2_columns(feature_columns)
        self._input_layer = tf_keras.layers.DenseFeatures(feature_columns,
                                                          name="input_from_feature_columns/input_layer")
        self._dropout = dropout
        self._layer_names = [f"hiddenlayer_{index}" for index in range(len(hidden_units))]
        self._hidden_layers = [
            tf_keras.layers.Dense(size, activation=activation_fn,
                                  kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), name=name)
            for name, size in zip(self._layer_names, hidden_units)]
        self._dropout_layers = [tf_keras.layers.Dropout(rate=dropout) for _ in hidden_units] if dropout is not None \
            else []
        self._batch_norm_layers = [
            tf_keras.layers.BatchNormalization(momentum=_BATCH_NORM_MOMENTUM, trainable=True,
                                               name=f"{name}/batchnorm_{index}")
            for index, name in enumerate(self._layer_names)] if batch_norm else []
        self._logits_layer = tf_keras.layers.Dense(units, activation=None,
                                                   kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
                                                   name="logits")

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
        common.add_layer_summary(logits, "logits")
        return logits


def _check_units(units: Any) -> None:
    if not isinstance(units, int):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")


def dnn_logit_fn_builder(units: int, hidden_units: Sequence[int], feature_columns: Sequence,
                         activation_fn: Callable, dropout: float | None, input_layer_partitioner: Any = None,
                         batch_norm: bool = False) -> Callable:
    """A `logit_fn(features, mode)` -> `[batch_size, units]` logits of a DNN under the scope `dnn`
    (tf.compat.v1.estimator.experimental.dnn_logit_fn_builder).

    `units` is the head's `logits_dimension` (for a MultiHead, the sum of its
    heads'). `input_layer_partitioner` is taken for TF 2.15's positional
    signature and not used: TF2's input layer is not partitioned.
    """
    del input_layer_partitioner
    _check_units(units)

    def dnn_logit_fn(features: dict, mode: str) -> tf.Tensor:
        return _DNNModel(units, hidden_units, feature_columns, activation_fn, dropout, batch_norm)(features, mode)

    return dnn_logit_fn


def dnn_logits_and_variables(units: int, hidden_units: Sequence[int], feature_columns: Sequence,
                             activation_fn: Callable, dropout: float | None, batch_norm: bool, features: dict,
                             mode: str) -> tuple[tf.Tensor, list, list]:
    """The DNN's logits, its trainable variables and its update ops (batch norm's moving statistics)."""
    _check_units(units)
    model = _DNNModel(units, hidden_units, feature_columns, activation_fn, dropout, batch_norm)
    logits = model(features, mode)
    return logits, model.trainable_variables, model.updates


def dnn_model_fn(features: dict, labels: Any, mode: str, head: Any, hidden_units: Sequence[int],
                 feature_columns: Sequence, optimizer: Any = "Adagrad", activation_fn: Callable = tf.nn.relu,
                 dropout: float | None = None, config: Any = None, batch_norm: bool = False) -> Any:
    """The model_fn of the DNN estimators: the DNN's logits through `head`, trained by `optimizer` (a name, an
    optimizer or a callable: see optimizers.py) with the global step as its step counter."""
    del config
    common.check_features(features)
    logits, trainable_variables, update_ops = dnn_logits_and_variables(
        head.logits_dimension, hidden_units, feature_columns, activation_fn, dropout, batch_norm, features, mode)
    if mode == ModeKeys.TRAIN:
        optimizer = optimizers.optimizer_for_graph(optimizer)
        common.start_counting_with_global_step(optimizer)
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, optimizer=optimizer,
                                      logits=logits, trainable_variables=trainable_variables, update_ops=update_ops)


def _model_fn(head: Any, hidden_units: Sequence[int], feature_columns: Sequence, optimizer: Any,
              activation_fn: Callable, dropout: float | None, batch_norm: bool) -> Callable:
    optimizer = optimizers.checked_optimizer_argument(optimizer)
    feature_columns = tuple(feature_columns or ())

    def model_fn(features, labels, mode, config):
        return dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns, optimizer=optimizer,
                            activation_fn=activation_fn, dropout=dropout, config=config, batch_norm=batch_norm)

    return model_fn


class DNNEstimator(Estimator):
    """tf.estimator.DNNEstimator: a DNN over feature columns with any head (e.g. tf.estimator.MultiLabelHead)."""

    def __init__(self, head: Any, hidden_units: Sequence[int], feature_columns: Sequence,
                 model_dir: str | None = None, optimizer: Any = "Adagrad", activation_fn: Callable = tf.nn.relu,
                 dropout: float | None = None, config: Any = None, warm_start_from: Any = None,
                 batch_norm: bool = False):
        super().__init__(model_fn=_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                            batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNClassifier(Estimator):
    """tf.estimator.DNNClassifier: a DNN with a sigmoid (2 classes) or softmax (more) cross-entropy head."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Sequence, model_dir: str | None = None,
                 n_classes: int = 2, weight_column: Any = None, label_vocabulary: Sequence[str] | None = None,
                 optimizer: Any = "Adagrad", activation_fn: Callable = tf.nn.relu, dropout: float | None = None,
                 config: Any = None, warm_start_from: Any = None, loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
                 batch_norm: bool = False):
        head = common.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(model_fn=_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                            batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """tf.estimator.DNNRegressor: a DNN with a squared-error head over `label_dimension` values."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Sequence, model_dir: str | None = None,
                 label_dimension: int = 1, weight_column: Any = None, optimizer: Any = "Adagrad",
                 activation_fn: Callable = tf.nn.relu, dropout: float | None = None, config: Any = None,
                 warm_start_from: Any = None, loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
                 batch_norm: bool = False):
        head = RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                              loss_reduction=loss_reduction)
        super().__init__(model_fn=_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout,
                                            batch_norm),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


__all__ = ["DNNClassifier", "DNNEstimator", "DNNRegressor", "dnn_logit_fn_builder", "dnn_logits_and_variables",
           "dnn_model_fn"]
