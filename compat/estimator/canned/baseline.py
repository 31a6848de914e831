"""BaselineClassifier, BaselineRegressor and BaselineEstimator: a bias and nothing else, as TF 2.15's.

The model ignores the feature values: its logits are one trained bias per
output (`baseline/bias`, zero-initialised) for every example, so it learns
the label mean (a regressor), the classes' log-odds from their frequencies (a
classifier), or whatever minimises the head's loss: the score any real model
must beat. The features still give the batch size, and must agree on it
(checked in the graph; the weight column is left out of that check, so that
serving needs no weights). The default optimizer is FTRL at 0.3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from compat.estimator.canned import common, optimizers, v1_heads
from compat.estimator.canned.recipe import CannedRecipe
from compat.estimator.estimator import Estimator
from compat.estimator.head import RegressionHead, base_head
from compat.estimator.model_fn import ModeKeys

# TF 2.15's learning rate for an optimizer named by a string
_LEARNING_RATE = 0.3


def _weight_key(weight_column: Any) -> str | None:
    if weight_column is None or isinstance(weight_column, str):
        return weight_column
    if not isinstance(weight_column, type(tf.feature_column.numeric_column("w"))):
        raise TypeError(f"Weight column must be either a string or NumericColumn. Given type: {type(weight_column)}.")
    return weight_column.key


def _batch_size_and_checks(features: dict, weight_key: str | None) -> tuple[tf.Tensor, list]:
    """The batch size (the first feature's first dimension) and assertions that every other feature agrees."""
    sizes = [tf.compat.v1.shape(value)[0] for key, value in features.items() if key != weight_key]
    if not sizes:
        raise ValueError(
            "features is an empty dictionary (or holds only the weight column): the baseline takes its "
            "batch size from the features; give at least one feature"
        )
    return sizes[0], [tf.compat.v1.debugging.assert_equal(sizes[0], size) for size in sizes[1:]]


def baseline_logits_and_variables(
    features: dict, num_outputs: int, weight_column: Any = None
) -> tuple[list, tf.Tensor]:
    """The bias variable (in a list: the trainable variables) and the `[batch_size, num_outputs]` logits."""
    common.check_features(features)
    batch_size, checks = _batch_size_and_checks(features, _weight_key(weight_column))
    with tf.name_scope("baseline"):
        # made before the checks: an initial value depending on them would read the input to initialise
        # (TF 2.15 made it under them, and failed with two features or more)
        bias = tf.Variable(initial_value=tf.zeros([num_outputs]), name="bias")
        with tf.control_dependencies(checks):
            logits = tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))
    return [bias], logits


def baseline_model_fn(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    optimizer: Any = "Ftrl",
    weight_column: Any = None,
    config: Any = None,
    loss_reduction: str | None = None,
) -> Any:
    """The model_fn of the baseline estimators: the bias through `head`, trained by `optimizer` (a name at 0.3,
    an optimizer or a callable) with the global step as its step counter. The loss is scaled for the replicas
    by `loss_reduction` (TF 2.15's argument), the head's where none is given."""
    del config
    trainable_variables, logits = baseline_logits_and_variables(features, head.logits_dimension, weight_column)
    if mode == ModeKeys.TRAIN:
        optimizer = optimizers.optimizer_for_graph(optimizer, _LEARNING_RATE)
        common.start_counting_with_global_step(optimizer)

    def train_op_fn(loss: tf.Tensor) -> tf.Operation:
        loss = base_head.scale_loss_for_replicas(loss, loss_reduction or getattr(head, "loss_reduction", None))
        return optimizer.get_updates(loss, trainable_variables)[0]

    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels, train_op_fn=train_op_fn
    )


def _model_fn(api: common.Api, head: Any, optimizer: Any, weight_column: Any = None) -> Callable:
    """The model_fn of a Baseline class of `api`."""
    family_model_fn = baseline_model_fn_v1 if api.v1 else baseline_model_fn
    return common.model_fn_calling(
        family_model_fn, head, optimizer=api.checked_optimizer(optimizer), weight_column=weight_column
    )


class BaselineEstimator(Estimator):
    """tf.estimator.BaselineEstimator: the bias-only model with any head (e.g. tf.estimator.MultiLabelHead)."""

    def __init__(self, head: Any, model_dir: str | None = None, optimizer: Any = "Ftrl", config: Any = None):
        super().__init__(model_fn=_model_fn(common.TF2, head, optimizer), model_dir=model_dir, config=config)


class BaselineClassifier(Estimator):
    """tf.estimator.BaselineClassifier: predicts the classes' frequencies in the training labels."""

    def __init__(
        self,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
    ):
        head = common.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(
            model_fn=_model_fn(common.TF2, head, optimizer, weight_column), model_dir=model_dir, config=config
        )
        self.keras_recipe = CannedRecipe.from_arguments("BaselineClassifier", locals(), network="baseline")


class BaselineRegressor(Estimator):
    """tf.estimator.BaselineRegressor: predicts the mean of the training labels (per label dimension)."""

    def __init__(
        self,
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
    ):
        head = RegressionHead(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        # as TF 2.15: the weight column weighs the loss (the head), and is counted among the features' batch sizes
        super().__init__(model_fn=_model_fn(common.TF2, head, optimizer), model_dir=model_dir, config=config)
        self.keras_recipe = CannedRecipe.from_arguments("BaselineRegressor", locals(), network="baseline")


# -- the TF 1.x classes (tf.compat.v1.estimator.BaselineClassifier, ...) -------------------------------------------
# The same bias, `baseline/bias` made with tf.compat.v1.get_variable, trained by a tf.compat.v1.train optimizer (a name
# at 0.3; made when the train op is built, as TF 1.x made it); the loss is summed over the batch.


def baseline_logits_v1(features: dict, num_outputs: int, weight_column: Any = None) -> tf.Tensor:
    """`[batch_size, num_outputs]` logits: the bias `baseline/bias` (tf.compat.v1.get_variable, zeros) per example."""
    common.check_features(features)
    batch_size, checks = _batch_size_and_checks(features, _weight_key(weight_column))
    with tf.compat.v1.variable_scope("baseline"):
        bias = tf.compat.v1.get_variable("bias", shape=[num_outputs], initializer=tf.compat.v1.zeros_initializer())
    with tf.control_dependencies(checks):
        return tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))


def baseline_model_fn_v1(
    features: dict,
    labels: Any,
    mode: str,
    head: Any,
    optimizer: Any = "Ftrl",
    weight_column: Any = None,
    config: Any = None,
) -> Any:
    """The model_fn of the v1 baseline estimators: the bias through `head`, trained by a tf.compat.v1.train
    `optimizer` (a name at 0.3, an optimizer or a callable)."""
    del config
    logits = baseline_logits_v1(features, head.logits_dimension, weight_column)

    def train_op_fn(loss: tf.Tensor) -> tf.Operation:
        return optimizers.get_v1_optimizer_instance(optimizer, _LEARNING_RATE).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()
        )

    return v1_heads.v1_estimator_spec(head, features, mode, labels, logits, train_op_fn=train_op_fn)


class BaselineEstimatorV1(Estimator):
    """tf.compat.v1.estimator.BaselineEstimator: the bias-only model with any head, trained by a tf.compat.v1.train
    optimizer (a TF2 head reduces its loss as it says, as in TF 2.15)."""

    def __init__(self, head: Any, model_dir: str | None = None, optimizer: Any = "Ftrl", config: Any = None):
        super().__init__(model_fn=_model_fn(common.TF1, head, optimizer), model_dir=model_dir, config=config)


class BaselineClassifierV1(Estimator):
    """tf.compat.v1.estimator.BaselineClassifier: the classes' frequencies, the loss summed over the batch."""

    def __init__(
        self,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
    ):
        head = v1_heads.classifier_head_v1(n_classes, weight_column, label_vocabulary, loss_reduction)
        super().__init__(
            model_fn=_model_fn(common.TF1, head, optimizer, weight_column), model_dir=model_dir, config=config
        )
        self.keras_recipe = CannedRecipe.from_arguments("BaselineClassifierV1", locals(), network="baseline")


class BaselineRegressorV1(Estimator):
    """tf.compat.v1.estimator.BaselineRegressor: the label mean, the loss summed over the batch."""

    def __init__(
        self,
        model_dir: str | None = None,
        label_dimension: int = 1,
        weight_column: Any = None,
        optimizer: Any = "Ftrl",
        config: Any = None,
        loss_reduction: str = v1_heads.V1Reduction.SUM,
    ):
        head = v1_heads.regression_head(
            label_dimension=label_dimension, weight_column=weight_column, loss_reduction=loss_reduction
        )
        # as TF 2.15: the weight column weighs the loss, and is counted among the features' batch sizes
        super().__init__(model_fn=_model_fn(common.TF1, head, optimizer), model_dir=model_dir, config=config)
        self.keras_recipe = CannedRecipe.from_arguments("BaselineRegressorV1", locals(), network="baseline")


__all__ = [
    "BaselineClassifier",
    "BaselineClassifierV1",
    "BaselineEstimator",
    "BaselineEstimatorV1",
    "BaselineRegressor",
    "BaselineRegressorV1",
    "baseline_logits_and_variables",
    "baseline_logits_v1",
    "baseline_model_fn",
    "baseline_model_fn_v1",
]
