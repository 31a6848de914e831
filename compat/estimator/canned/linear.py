"""LinearClassifier, LinearRegressor and LinearEstimator: linear models over feature columns, as TF 2.15's.

The model is a Keras 2 (tf_keras) layer, `LinearModel`, as TF 2.15's: one
weight matrix per column, `[num_buckets or width, units]`, named
`linear/linear_model/<column>/weights`, and a bias
`linear/linear_model/bias_weights`, all zero-initialised and made with
`tf.compat.v1.get_variable`, so that TF 2.15's checkpoints restore and warm
starts (vocabulary remapping included) find them. A categorical column's ids
pick rows of its weights, combined by `sparse_combiner` ('sum', 'mean' or
'sqrtn'); a dense column's values multiply them. The training summaries are
`bias` and `fraction_of_zero_weights`. The default optimizer is FTRL at 0.2
(`training/Ftrl/...`).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import tensorflow as tf
import tf_keras

from compat import tf_internals
from compat.estimator.canned import common, optimizers
from compat.estimator.estimator import Estimator
from compat.estimator.head import RegressionHead
from compat.estimator.model_fn import ModeKeys

# TF 2.15's learning rate for an optimizer named by a string
_LEARNING_RATE = 0.2


class LinearModel(tf_keras.layers.Layer):
    """`[batch_size, units]` weighted sums of feature columns plus a bias: TF 2.15's linear model layer.

    Every variable is made under the variable scope `name` (no name scope of
    its own), so a layer named `linear/linear_model` holds
    `linear/linear_model/<column>/weights` and `linear/linear_model/bias_weights`.
    """

    def __init__(self, feature_columns: Sequence, units: int = 1, sparse_combiner: str = "sum",
                 trainable: bool = True, name: str | None = None, **kwargs: Any):
        super().__init__(name=name, trainable=trainable, **kwargs)
        self._feature_columns = tf_internals.normalize_feature_columns(feature_columns)
        for column in self._feature_columns:
            if not (tf_internals.is_dense_column(column) or tf_internals.is_categorical_column(column)):
                raise ValueError(f"Items of feature_columns must be either a DenseColumn or CategoricalColumn. "
                                 f"Given: {column}")
        self._units = units
        self._sparse_combiner = sparse_combiner
        self._state_manager = tf_internals.feature_state_manager(self, self.trainable)
        self.bias = None

    def _column_rows(self, column: Any) -> int:
        if tf_internals.is_categorical_column(column):
            return column.num_buckets
        return column.variable_shape.num_elements()

    def build(self, input_shape: Any) -> None:
        with tf.compat.v1.variable_scope(self.name, auxiliary_name_scope=False):
            for column in self._feature_columns:
                with tf.compat.v1.variable_scope(tf_internals.column_variable_scope_name(column.name),
                                                 auxiliary_name_scope=False):
                    column.create_state(self._state_manager)
                    self._state_manager.create_variable(column, name="weights", dtype=tf.float32,
                                                        shape=(self._column_rows(column), self._units),
                                                        initializer=tf_keras.initializers.zeros(),
                                                        trainable=self.trainable)
            self.bias = self.add_weight(name="bias_weights", dtype=tf.float32, shape=[self._units],
                                        initializer=tf_keras.initializers.zeros(), trainable=self.trainable,
                                        use_resource=True, getter=tf.compat.v1.get_variable)
        super().build(None)

    def call(self, features: dict) -> tf.Tensor:
        if not isinstance(features, dict):
            raise ValueError(f"We expected a dictionary here. Instead we got: {features}")
        cache = tf_internals.feature_transformation_cache(features)
        sums = []
        for column in self._feature_columns:
            with tf.name_scope(tf_internals.column_variable_scope_name(column.name)):
                sums.append(tf_internals.linear_weighted_sum(column, cache, self._state_manager,
                                                             self._sparse_combiner,
                                                             self._state_manager.get_variable(column, "weights")))
        tf_internals.check_same_batch_size(sums, self._feature_columns)
        return tf.nn.bias_add(tf.math.add_n(sums, name="weighted_sum_no_bias"), self.bias, name="weighted_sum")


def _fraction_of_zero(variables: Sequence[tf.Variable]) -> tf.Tensor:
    """The share of zero entries over all `variables` (NaN when they hold none): the model's sparsity."""
    with tf.name_scope("zero_fraction"):
        sizes = [tf.cast(tf.size(v, out_type=tf.int64), tf.float32) for v in variables]
        zeros = [size - tf.cast(tf.math.count_nonzero(v), tf.float32) for v, size in zip(variables, sizes)]
        return tf.math.add_n(zeros) / tf.math.add_n(sizes)


def _add_summaries(bias: tf.Variable, weights: Sequence[tf.Variable], units: int) -> None:
    if units > 1:
        tf.compat.v1.summary.histogram("bias", bias)
    else:
        tf.compat.v1.summary.scalar("bias", bias[0])
    if weights:
        tf.compat.v1.summary.scalar("fraction_of_zero_weights", _fraction_of_zero(weights))


def _linear_logits(units: int, feature_columns: Sequence, sparse_combiner: str, features: dict,
                   name: str) -> tuple[tf.Tensor, list]:
    common.check_v2_columns(feature_columns)
    model = LinearModel(feature_columns=feature_columns, units=units, sparse_combiner=sparse_combiner, name=name)
    logits = model(features)
    variables = list(model.variables)
    _add_summaries(model.bias, [v for v in variables if v is not model.bias], units)
    return logits, variables


def linear_logit_fn_builder(units: int, feature_columns: Sequence, sparse_combiner: str = "sum") -> Callable:
    """A `logit_fn(features)` -> `[batch_size, units]` logits of a linear model whose variables are
    `linear_model/<column>/weights` and `linear_model/bias_weights` under the caller's variable scope
    (tf.compat.v1.estimator.experimental.linear_logit_fn_builder)."""

    def linear_logit_fn(features: dict) -> tf.Tensor:
        return _linear_logits(units, feature_columns, sparse_combiner, features, "linear_model")[0]

    return linear_logit_fn


def linear_logits_and_variables(units: int, feature_columns: Sequence, sparse_combiner: str,
                                features: dict) -> tuple[tf.Tensor, list]:
    """The linear estimators' logits and trainable variables, under `linear/linear_model`."""
    return _linear_logits(units, feature_columns, sparse_combiner, features, "linear/linear_model")


def default_linear_learning_rate(feature_columns: Sequence, cap: float = _LEARNING_RATE) -> float:
    """TF 2.15's rate for a linear model given no optimizer: 1/sqrt(number of columns), at most `cap`."""
    return min(cap, 1.0 / math.sqrt(len(feature_columns)))


def linear_model_fn(features: dict, labels: Any, mode: str, head: Any, feature_columns: Sequence,
                    optimizer: Any = "Ftrl", config: Any = None, sparse_combiner: str = "sum") -> Any:
    """The model_fn of the linear estimators: the linear logits through `head`, trained by `optimizer` (a name
    at 0.2, an optimizer or a callable; None: FTRL at `default_linear_learning_rate`)."""
    del config
    common.check_features(features)
    logits, trainable_variables = linear_logits_and_variables(head.logits_dimension, feature_columns,
                                                              sparse_combiner, features)
    if mode == ModeKeys.TRAIN:
        if optimizer is None:
            optimizer = tf_keras.optimizers.legacy.Ftrl(learning_rate=default_linear_learning_rate(feature_columns))
        optimizer = optimizers.optimizer_for_graph(optimizer, _LEARNING_RATE)
        common.start_counting_with_global_step(optimizer)
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, optimizer=optimizer,
                                      trainable_variables=trainable_variables, logits=logits)


def _model_fn(head: Any, feature_columns: Sequence, optimizer: Any, sparse_combiner: str) -> Callable:
    common.check_sparse_combiner(sparse_combiner)
    optimizer = optimizers.checked_optimizer_argument(optimizer)
    feature_columns = tuple(feature_columns or ())

    def model_fn(features, labels, mode, config):
        return linear_model_fn(features, labels, mode, head, feature_columns, optimizer=optimizer, config=config,
                               sparse_combiner=sparse_combiner)

    return model_fn


class LinearEstimator(Estimator):
    """tf.estimator.LinearEstimator: a linear model over feature columns with any head."""

    def __init__(self, head: Any, feature_columns: Sequence, model_dir: str | None = None, optimizer: Any = "Ftrl",
                 config: Any = None, sparse_combiner: str = "sum", warm_start_from: Any = None):
        super().__init__(model_fn=_model_fn(head, feature_columns, optimizer, sparse_combiner), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class LinearClassifier(Estimator):
    """tf.estimator.LinearClassifier: logistic (2 classes) or softmax (more) regression."""

    def __init__(self, feature_columns: Sequence, model_dir: str | None = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Sequence[str] | None = None, optimizer: Any = "Ftrl",
                 config: Any = None, warm_start_from: Any = None, loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
                 sparse_combiner: str = "sum"):
        head = common.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(model_fn=_model_fn(head, feature_columns, optimizer, sparse_combiner), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """tf.estimator.LinearRegressor: least squares over `label_dimension` values."""

    def __init__(self, feature_columns: Sequence, model_dir: str | None = None, label_dimension: int = 1,
                 weight_column: Any = None, optimizer: Any = "Ftrl", config: Any = None, warm_start_from: Any = None,
                 loss_reduction: str = common.SUM_OVER_BATCH_SIZE, sparse_combiner: str = "sum"):
        head = RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                              loss_reduction=loss_reduction)
        super().__init__(model_fn=_model_fn(head, feature_columns, optimizer, sparse_combiner), model_dir=model_dir,
                         config=config, warm_start_from=warm_start_from)


__all__ = ["LinearClassifier", "LinearEstimator", "LinearModel", "LinearRegressor", "default_linear_learning_rate",
           "linear_logit_fn_builder", "linear_logits_and_variables", "linear_model_fn"]
