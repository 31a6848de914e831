"""LinearClassifier, LinearRegressor and LinearEstimator: linear models over feature columns.

Variables as TF 2.15 named them: `linear/linear_model/<column>/weights` and
`linear/linear_model/bias_weights` (TensorFlow's own `linear_model`); the
default optimizer is FTRL at 0.2, as TF 2.15 trained it (`training/Ftrl/...`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from compat.estimator.canned import head as head_lib
from compat.estimator.canned.optimizers import optimizer_for, train_op_for
from compat.estimator.estimator import Estimator

_v1 = tf.compat.v1
# TF 2.15's linear models trained FTRL at this rate, whatever the number of columns (measured).
LINEAR_LEARNING_RATE = 0.2


def linear_logits(features: Any, feature_columns: Sequence, units: int, sparse_combiner: str = "sum") -> tf.Tensor:
    """The linear model's logits, under the variable scope `linear`, with TF 2.15's summaries."""
    with _v1.variable_scope("linear"):
        logits = _v1.feature_column.linear_model(features, list(feature_columns), units=units,
                                                 sparse_combiner=sparse_combiner)
    variables = _v1.get_collection(_v1.GraphKeys.TRAINABLE_VARIABLES, scope="linear/linear_model")
    bias = [v for v in variables if v.op.name.endswith("bias_weights")]
    weights = [v for v in variables if not v.op.name.endswith("bias_weights")]
    if bias and units == 1:
        _v1.summary.scalar("bias", bias[0][0])
    if weights:
        zeros = tf.add_n([tf.reduce_sum(tf.cast(tf.equal(w, 0), tf.float32)) for w in weights])
        count = float(sum(w.shape.num_elements() for w in weights))
        _v1.summary.scalar("fraction_of_zero_weights", zeros / count)
    return logits


def _check(feature_columns: Sequence, sparse_combiner: str) -> None:
    if not feature_columns:
        raise ValueError("feature_columns must be given: e.g. [tf.feature_column.numeric_column('x')]")
    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be one of 'sum', 'mean', 'sqrtn', given {sparse_combiner!r}")


def _linear_model_fn(head, feature_columns, optimizer, sparse_combiner) -> Callable:
    def model_fn(features, labels, mode, config):
        del config
        logits = linear_logits(features, feature_columns, head.logits_dimension, sparse_combiner)

        def train_op_fn(loss):
            variables = _v1.get_collection(_v1.GraphKeys.TRAINABLE_VARIABLES, scope="linear")
            return train_op_for([(optimizer, variables)], loss, _v1.train.get_global_step())

        return head.create_estimator_spec(features, mode, logits, labels, train_op_fn)

    return model_fn


class LinearEstimator(Estimator):
    """A linear model over feature columns with any head (tf.estimator.LinearEstimator)."""

    def __init__(self, head, feature_columns: Sequence, model_dir: str | None = None, optimizer: Any = "Ftrl",
                 config=None, sparse_combiner: str = "sum", warm_start_from=None):
        _check(feature_columns, sparse_combiner)
        super().__init__(model_fn=_linear_model_fn(head, list(feature_columns),
                                                   optimizer_for(optimizer, LINEAR_LEARNING_RATE), sparse_combiner),
                         model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearClassifier(LinearEstimator):
    """tf.estimator.LinearClassifier."""

    def __init__(self, feature_columns: Sequence, model_dir: str | None = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Sequence[str] | None = None, optimizer: Any = "Ftrl",
                 config=None, warm_start_from=None, loss_reduction: Any = head_lib.SUM_OVER_BATCH_SIZE,
                 sparse_combiner: str = "sum"):
        head = head_lib.class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, feature_columns, model_dir, optimizer, config, sparse_combiner, warm_start_from)


class LinearRegressor(LinearEstimator):
    """tf.estimator.LinearRegressor."""

    def __init__(self, feature_columns: Sequence, model_dir: str | None = None, label_dimension: int = 1,
                 weight_column: Any = None, optimizer: Any = "Ftrl", config=None, warm_start_from=None,
                 loss_reduction: Any = head_lib.SUM_OVER_BATCH_SIZE, sparse_combiner: str = "sum"):
        head = head_lib.RegressionHead(label_dimension, weight_column, loss_reduction)
        super().__init__(head, feature_columns, model_dir, optimizer, config, sparse_combiner, warm_start_from)
