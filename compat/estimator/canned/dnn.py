"""DNNClassifier, DNNRegressor and DNNEstimator: feed-forward networks over feature columns.

Variables as TF 2.15 named them: `dnn/hiddenlayer_<i>/{kernel,bias}`,
`dnn/logits/{kernel,bias}` (and `dnn/hiddenlayer_<i>/batchnorm_<i>/...` with
batch_norm); the default optimizer is Adagrad at 0.001, as TF 2.15's TF2 path
actually trained it (`training/Adagrad/...`). The hidden layers' activations
are summarised as TF 2.15 did (`fraction_of_zero_values`, `activation`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from compat.estimator.canned import head as head_lib
from compat.estimator.canned.optimizers import optimizer_for, train_op_for
from compat.estimator.estimator import Estimator
from compat.estimator.model_fn import ModeKeys

_v1 = tf.compat.v1
_BATCH_NORM_MOMENTUM = 0.999


def _summarise(scope: str, values: tf.Tensor) -> None:
    _v1.summary.scalar(f"{scope}/fraction_of_zero_values", tf.math.zero_fraction(values))
    _v1.summary.histogram(f"{scope}/activation", values)


def _dense(net: tf.Tensor, units: int) -> tf.Tensor:
    kernel = _v1.get_variable("kernel", [net.shape[-1], units], initializer=_v1.glorot_uniform_initializer())
    bias = _v1.get_variable("bias", [units], initializer=_v1.zeros_initializer())
    return tf.matmul(net, kernel) + bias


def _batch_norm(net: tf.Tensor, index: int, training: bool) -> tf.Tensor:
    """Batch normalisation with moving statistics, updated through UPDATE_OPS in training."""
    with _v1.variable_scope(f"batchnorm_{index}"):
        size = net.shape[-1]
        gamma = _v1.get_variable("gamma", [size], initializer=_v1.ones_initializer())
        beta = _v1.get_variable("beta", [size], initializer=_v1.zeros_initializer())
        moving_mean = _v1.get_variable("moving_mean", [size], initializer=_v1.zeros_initializer(), trainable=False)
        moving_variance = _v1.get_variable("moving_variance", [size], initializer=_v1.ones_initializer(),
                                           trainable=False)
    if training:
        mean, variance = tf.nn.moments(net, axes=[0])
        for variable, value in ((moving_mean, mean), (moving_variance, variance)):
            _v1.add_to_collection(_v1.GraphKeys.UPDATE_OPS,
                                  variable.assign_sub((variable - value) * (1 - _BATCH_NORM_MOMENTUM)))
    else:
        mean, variance = moving_mean, moving_variance
    return tf.nn.batch_normalization(net, mean, variance, beta, gamma, 1e-3)


def dnn_logits(features: Any, feature_columns: Sequence, hidden_units: Sequence[int], logits_dimension: int,
               activation_fn: Callable, dropout: float | None, batch_norm: bool, training: bool) -> tf.Tensor:
    """The network's logits, under the variable scope `dnn`."""
    with _v1.variable_scope("dnn"):
        with _v1.variable_scope("input_from_feature_columns"):
            net = _v1.feature_column.input_layer(features, list(feature_columns))
        for index, units in enumerate(hidden_units):
            with _v1.variable_scope(f"hiddenlayer_{index}"):
                net = _dense(net, units)
                if batch_norm:
                    net = _batch_norm(net, index, training)
                net = activation_fn(net)
                if dropout and training:
                    net = tf.nn.dropout(net, rate=dropout)
            _summarise(f"dnn/hiddenlayer_{index}", net)
        with _v1.variable_scope("logits"):
            logits = _dense(net, logits_dimension)
        _summarise("dnn/logits", logits)
    return logits


def _check(hidden_units: Sequence[int], feature_columns: Sequence, dropout: float | None) -> None:
    if not hidden_units:
        raise ValueError("hidden_units must be a non-empty list of layer sizes, e.g. [64, 32]")
    if not feature_columns:
        raise ValueError("feature_columns must be given: e.g. [tf.feature_column.numeric_column('x', shape=(4,))]")
    if dropout is not None and not 0 <= dropout < 1:
        raise ValueError(f"dropout must be in [0, 1), given {dropout}")


def _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm) -> Callable:
    def model_fn(features, labels, mode, config):
        del config
        training = mode == ModeKeys.TRAIN
        logits = dnn_logits(features, feature_columns, hidden_units, head.logits_dimension, activation_fn, dropout,
                            batch_norm, training)

        def train_op_fn(loss):
            dnn_variables = _v1.get_collection(_v1.GraphKeys.TRAINABLE_VARIABLES, scope="dnn")
            with tf.control_dependencies(_v1.get_collection(_v1.GraphKeys.UPDATE_OPS)):
                return train_op_for([(optimizer, dnn_variables)], loss, _v1.train.get_global_step())

        return head.create_estimator_spec(features, mode, logits, labels, train_op_fn)

    return model_fn


class DNNEstimator(Estimator):
    """A DNN over feature columns with any head (tf.estimator.DNNEstimator)."""

    def __init__(self, head, hidden_units: Sequence[int], feature_columns: Sequence, model_dir: str | None = None,
                 optimizer: Any = "Adagrad", activation_fn: Callable = tf.nn.relu, dropout: float | None = None,
                 config=None, warm_start_from=None, batch_norm: bool = False):
        _check(hidden_units, feature_columns, dropout)
        model_fn = _dnn_model_fn(head, list(hidden_units), list(feature_columns), optimizer_for(optimizer),
                                 activation_fn, dropout, batch_norm)
        super().__init__(model_fn=model_fn,
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNClassifier(DNNEstimator):
    """tf.estimator.DNNClassifier: softmax (or sigmoid, for 2 classes) over a DNN."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Sequence, model_dir: str | None = None,
                 n_classes: int = 2, weight_column: Any = None, label_vocabulary: Sequence[str] | None = None,
                 optimizer: Any = "Adagrad", activation_fn: Callable = tf.nn.relu, dropout: float | None = None,
                 config=None, warm_start_from=None, loss_reduction: Any = head_lib.SUM_OVER_BATCH_SIZE,
                 batch_norm: bool = False):
        head = head_lib.class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, hidden_units, feature_columns, model_dir, optimizer, activation_fn, dropout, config,
                         warm_start_from, batch_norm)


class DNNRegressor(DNNEstimator):
    """tf.estimator.DNNRegressor: squared error over a DNN."""

    def __init__(self, hidden_units: Sequence[int], feature_columns: Sequence, model_dir: str | None = None,
                 label_dimension: int = 1, weight_column: Any = None, optimizer: Any = "Adagrad",
                 activation_fn: Callable = tf.nn.relu, dropout: float | None = None, config=None,
                 warm_start_from=None, loss_reduction: Any = head_lib.SUM_OVER_BATCH_SIZE, batch_norm: bool = False):
        head = head_lib.RegressionHead(label_dimension, weight_column, loss_reduction)
        super().__init__(head, hidden_units, feature_columns, model_dir, optimizer, activation_fn, dropout, config,
                         warm_start_from, batch_norm)
