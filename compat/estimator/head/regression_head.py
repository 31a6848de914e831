"""Regression heads (tf.estimator.RegressionHead, PoissonRegressionHead, LogisticRegressionHead).

RegressionHead predicts `label_dimension` real values per example with mean
squared error; the two others are generalized linear models on it: a custom
loss and an inverse link function from logits to predictions (exp for counts,
sigmoid for probabilities).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.canned.prediction_keys import PredictionKeys
from compat.estimator.export.export_output import PredictOutput, RegressionOutput
from compat.estimator.head import base_head


class RegressionHead(base_head.SingleHead):
    """A head for regression, with squared-error loss summed over all label dimensions.

    Logits and labels are `[D0, ... DN, label_dimension]` (labels may be
    `[D0, ... DN]` when label_dimension is 1); weights `[D0, ... DN]`,
    `[D0, ... DN, 1]` or `[D0, ... DN, label_dimension]` (one per value).

    Args:
      label_dimension: the number of values per example.
      weight_column: a feature name or a `tf.feature_column.numeric_column`.
      loss_reduction: a `tf.losses.Reduction` other than NONE; the default
        divides the weighted sum by `batch_size * label_dimension`.
      loss_fn: `(labels, logits[, features])` -> unreduced loss
        `[D0, ... DN, label_dimension]`, in place of squared error.
      inverse_link_fn: logits -> predicted values (the GLM mean function);
        with it, predictions also hold the logits.
      name: the head's name: `/<name>` is appended to its metric and summary keys.
    """

    def __init__(
        self,
        label_dimension: int = 1,
        weight_column: Any = None,
        loss_reduction: str = base_head.Reduction.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        inverse_link_fn: Callable | None = None,
        name: str | None = None,
    ):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        base_head.validate_loss_reduction(loss_reduction)
        if loss_fn:
            base_head.validate_loss_fn_args(loss_fn)
        self._set(label_dimension, weight_column, loss_reduction, loss_fn, inverse_link_fn, name)

    def _set(
        self,
        label_dimension: int,
        weight_column: Any,
        loss_reduction: str,
        loss_fn: Callable | None,
        inverse_link_fn: Callable | None,
        name: str | None,
    ) -> None:
        """Keeps the (checked) arguments; TF 1.x's head class checks less first, as TF 2.15's did."""
        self._logits_dimension = label_dimension
        self._weight_column = weight_column
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._inverse_link_fn = inverse_link_fn
        self._name = name

    @property
    def native_keras_output(self) -> str | None:
        return "identity" if self._inverse_link_fn is None else None

    @property
    def logits_dimension(self) -> int:
        return self._logits_dimension

    def _processed_labels(self, logits: tf.Tensor, labels: Any) -> tf.Tensor:
        labels = base_head.check_dense_labels_match_logits_and_reshape(labels, logits, self._logits_dimension)
        return tf.cast(labels, tf.float32)

    def _unweighted_loss_and_weights(self, logits: tf.Tensor, labels: tf.Tensor, features: Any) -> tuple:
        if self._loss_fn:
            unweighted_loss = base_head.call_loss_fn(
                self._loss_fn, labels, logits, features, expected_loss_dim=self._logits_dimension
            )
        else:
            unweighted_loss = tf.compat.v1.losses.mean_squared_error(
                labels=labels, predictions=logits, reduction=tf.compat.v1.losses.Reduction.NONE
            )
        weights = base_head.get_weights_and_check_match_logits(
            features, self._weight_column, logits, allow_per_logit_weights=True
        )
        return unweighted_loss, weights

    def predictions(self, logits: Any, keys: Sequence[str] | None = None) -> dict:
        """predictions float32 `[D0, ... DN, label_dimension]` (the inverse link of the logits), and the logits
        when there is an inverse link function."""
        logits = base_head.check_logits_final_dim(logits, self._logits_dimension)
        with tf.name_scope("predictions"):
            if self._inverse_link_fn:
                predictions = {PredictionKeys.PREDICTIONS: self._inverse_link_fn(logits), PredictionKeys.LOGITS: logits}
            else:
                predictions = {PredictionKeys.PREDICTIONS: logits}
        if keys:
            base_head.check_prediction_keys(keys, list(predictions))
            predictions = {key: value for key, value in predictions.items() if key in keys}
        return predictions

    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        """average_loss, prediction/mean and label/mean (`/<name>`-suffixed), and regularization_loss when there
        are regularization losses."""
        keys, key = MetricKeys, self._summary_key
        with tf.name_scope("metrics"):
            eval_metrics = {
                key(keys.LOSS_MEAN): tf_keras.metrics.Mean(name=keys.LOSS_MEAN),
                key(keys.PREDICTION_MEAN): tf_keras.metrics.Mean(name=keys.PREDICTION_MEAN),
                key(keys.LABEL_MEAN): tf_keras.metrics.Mean(name=keys.LABEL_MEAN),
            }
            if regularization_losses is not None:
                eval_metrics[key(keys.LOSS_REGULARIZATION)] = tf_keras.metrics.Mean(name=keys.LOSS_REGULARIZATION)
        return eval_metrics

    _metric_predictions = (PredictionKeys.PREDICTIONS,)

    def _update_metric_values(self, eval_metrics: dict, batch: base_head.MetricBatch) -> dict:
        """The mean loss, label and predicted value, weighted by the example (or value) weights."""
        keys, key = MetricKeys, self._summary_key
        weights, predicted = batch.weights, batch.predictions[PredictionKeys.PREDICTIONS]
        eval_metrics[key(keys.LOSS_MEAN)].update_state(values=batch.unweighted_loss, sample_weight=weights)
        eval_metrics[key(keys.LABEL_MEAN)].update_state(values=batch.labels, sample_weight=weights)
        base_head.update_metric_with_broadcast_weights(eval_metrics[key(keys.PREDICTION_MEAN)], predicted, weights)
        base_head.update_regularization_metric(eval_metrics, key(keys.LOSS_REGULARIZATION), batch.regularization_losses)
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        """serving_default and regression: the predicted values; predict: all predictions."""
        regression = RegressionOutput(value=predictions[PredictionKeys.PREDICTIONS])
        return {
            base_head.DEFAULT_SERVING_KEY: regression,
            base_head.REGRESS_SERVING_KEY: regression,
            base_head.PREDICT_SERVING_KEY: PredictOutput(predictions),
        }


class PoissonRegressionHead(RegressionHead):
    """A head for Poisson regression of counts: `tf.nn.log_poisson_loss` on log-rate logits, predictions exp(logits).

    Args as RegressionHead's, and `compute_full_loss`: whether the loss
    includes the Stirling term of log(labels!) (it does not change the
    gradients).
    """

    def __init__(
        self,
        label_dimension: int = 1,
        weight_column: Any = None,
        loss_reduction: str = base_head.Reduction.SUM_OVER_BATCH_SIZE,
        compute_full_loss: bool = True,
        name: str | None = None,
    ):
        self._compute_full_loss = compute_full_loss
        super().__init__(
            label_dimension=label_dimension,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
            loss_fn=self._poisson_loss,
            inverse_link_fn=tf.math.exp,
            name=name,
        )

    def _poisson_loss(self, labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
        return tf.nn.log_poisson_loss(targets=labels, log_input=logits, compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
    """A head for logistic regression: sigmoid cross-entropy on float labels in [0, 1], predictions sigmoid(logits).

    Unlike BinaryClassHead it has no vocabulary, no classification metrics
    (AUC, ...) and serves a regression signature by default; its predictions
    are only `predictions` and `logits`. Args as RegressionHead's (one label).
    """

    def __init__(
        self,
        weight_column: Any = None,
        loss_reduction: str = base_head.Reduction.SUM_OVER_BATCH_SIZE,
        name: str | None = None,
    ):
        super().__init__(
            label_dimension=1,
            weight_column=weight_column,
            loss_reduction=loss_reduction,
            loss_fn=self._logistic_loss,
            inverse_link_fn=tf.math.sigmoid,
            name=name,
        )

    def _logistic_loss(self, labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
        labels = base_head.check_label_range(labels, n_classes=2, message="Labels must be in range [0, 1]")
        return tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)


__all__ = ["LogisticRegressionHead", "PoissonRegressionHead", "RegressionHead"]
