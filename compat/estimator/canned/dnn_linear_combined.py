"""DNNLinearCombinedClassifier / Regressor / Estimator: a wide linear part plus a deep DNN.

The logits are the sum of both parts' logits. Each part trains with its own
optimizer, as TF 2.15: the DNN with Adagrad at 0.001 (counting with the global
step), the linear part with FTRL at 0.005 (counting in `training/Ftrl/iter`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from compat.estimator.canned import head as head_lib
from compat.estimator.canned.dnn import dnn_logits
from compat.estimator.canned.linear import linear_logits
from compat.estimator.canned.optimizers import optimizer_for, train_op_for
from compat.estimator.estimator import Estimator
from compat.estimator.model_fn import ModeKeys

_v1 = tf.compat.v1
_LINEAR_LEARNING_RATE = 0.005  # TF 2.15's combined estimators (measured)


def _combined_model_fn(head, linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
                       dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm, linear_sparse_combiner) -> Callable:
    def model_fn(features, labels, mode, config):
        del config
        parts = []
        if dnn_feature_columns:
            parts.append(dnn_logits(features, dnn_feature_columns, dnn_hidden_units, head.logits_dimension,
                                    dnn_activation_fn, dnn_dropout, batch_norm, mode == ModeKeys.TRAIN))
        if linear_feature_columns:
            parts.append(linear_logits(features, linear_feature_columns, head.logits_dimension,
                                       linear_sparse_combiner))
        logits = tf.add_n(parts)

        def train_op_fn(loss):
            parts = [(dnn_optimizer, _v1.get_collection(_v1.GraphKeys.TRAINABLE_VARIABLES, scope="dnn")),
                     (linear_optimizer, _v1.get_collection(_v1.GraphKeys.TRAINABLE_VARIABLES, scope="linear"))]
            with tf.control_dependencies(_v1.get_collection(_v1.GraphKeys.UPDATE_OPS)):
                return train_op_for(parts, loss, _v1.train.get_global_step())

        return head.create_estimator_spec(features, mode, logits, labels, train_op_fn)

    return model_fn


class DNNLinearCombinedEstimator(Estimator):
    """tf.estimator.DNNLinearCombinedEstimator: wide and deep with any head."""

    def __init__(self, head, model_dir: str | None = None, linear_feature_columns: Sequence | None = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Sequence | None = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Sequence[int] | None = None,
                 dnn_activation_fn: Callable = tf.nn.relu, dnn_dropout: float | None = None, config=None,
                 batch_norm: bool = False, linear_sparse_combiner: str = "sum", warm_start_from=None):
        linear_feature_columns, dnn_feature_columns = list(linear_feature_columns or ()), list(dnn_feature_columns or ())
        if not linear_feature_columns and not dnn_feature_columns:
            raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
        if dnn_feature_columns and not dnn_hidden_units:
            raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")
        wide = optimizer_for(linear_optimizer, _LINEAR_LEARNING_RATE)
        wide.own_iterations = True  # TF 2.15's wide part counted its own steps (training/Ftrl/iter)
        super().__init__(
            model_fn=_combined_model_fn(head, linear_feature_columns, wide, dnn_feature_columns,
                                        optimizer_for(dnn_optimizer), list(dnn_hidden_units or ()), dnn_activation_fn,
                                        dnn_dropout, batch_norm, linear_sparse_combiner),
            model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class DNNLinearCombinedClassifier(DNNLinearCombinedEstimator):
    """tf.estimator.DNNLinearCombinedClassifier."""

    def __init__(self, model_dir: str | None = None, linear_feature_columns: Sequence | None = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Sequence | None = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Sequence[int] | None = None,
                 dnn_activation_fn: Callable = tf.nn.relu, dnn_dropout: float | None = None, n_classes: int = 2,
                 weight_column: Any = None, label_vocabulary: Sequence[str] | None = None, config=None,
                 warm_start_from=None, loss_reduction: Any = head_lib.SUM_OVER_BATCH_SIZE, batch_norm: bool = False,
                 linear_sparse_combiner: str = "sum"):
        head = head_lib.class_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(head, model_dir, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                         dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout, config, batch_norm,
                         linear_sparse_combiner, warm_start_from)


class DNNLinearCombinedRegressor(DNNLinearCombinedEstimator):
    """tf.estimator.DNNLinearCombinedRegressor."""

    def __init__(self, model_dir: str | None = None, linear_feature_columns: Sequence | None = None,
                 linear_optimizer: Any = "Ftrl", dnn_feature_columns: Sequence | None = None,
                 dnn_optimizer: Any = "Adagrad", dnn_hidden_units: Sequence[int] | None = None,
                 dnn_activation_fn: Callable = tf.nn.relu, dnn_dropout: float | None = None, label_dimension: int = 1,
                 weight_column: Any = None, config=None, warm_start_from=None,
                 loss_reduction: Any = head_lib.SUM_OVER_BATCH_SIZE, batch_norm: bool = False,
                 linear_sparse_combiner: str = "sum"):
        head = head_lib.RegressionHead(label_dimension, weight_column, loss_reduction)
        super().__init__(head, model_dir, linear_feature_columns, linear_optimizer, dnn_feature_columns,
                         dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout, config, batch_norm,
                         linear_sparse_combiner, warm_start_from)
