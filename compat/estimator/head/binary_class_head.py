"""BinaryClassHead: one logit per example, sigmoid cross-entropy (tf.estimator.BinaryClassHead).

Labels are 0/1 (or any float in [0, 1]: soft labels), or strings of a
two-entry `label_vocabulary`. The logit is the log-odds of class 1: class 1 is
predicted when it is positive (probability above 0.5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.canned.prediction_keys import PredictionKeys
from compat.estimator.export.export_output import RegressionOutput
from compat.estimator.head import base_head

_VALID_KEYS = (
    PredictionKeys.LOGITS,
    PredictionKeys.LOGISTIC,
    PredictionKeys.PROBABILITIES,
    PredictionKeys.CLASS_IDS,
    PredictionKeys.CLASSES,
    PredictionKeys.ALL_CLASS_IDS,
    PredictionKeys.ALL_CLASSES,
)


class _AccuracyBaseline(tf_keras.metrics.Metric):
    """The accuracy of always predicting the more frequent class: max(p, 1 - p) for the weighted label mean p.

    It has no state of its own: it reads the `label/mean` metric's weighted
    total and count, so it is right after any number of batches.
    """

    def __init__(self, label_mean: tf_keras.metrics.Mean, name: str = MetricKeys.ACCURACY_BASELINE):
        super().__init__(name=name)
        self._label_mean = label_mean

    def update_state(self, *args: Any, **kwargs: Any) -> tf.Tensor:
        # the label mean metric holds the state; a tensor is returned so that graph mode records an update op
        return tf.constant(0.0)

    def result(self) -> tf.Tensor:
        total, count = self._label_mean.total, self._label_mean.count
        return tf.math.divide_no_nan(tf.maximum(total, count - total), count)

    def reset_state(self) -> None:
        """Nothing to reset: resetting the label mean resets this."""


class BinaryClassHead(base_head.ThresholdedHead):
    """A head for binary classification, with sigmoid cross-entropy loss.

    Logits are `[D0, ... DN, 1]` (usually `[batch_size, 1]`); labels have the
    same shape, or `[D0, ... DN]`, and weights (the `weight_column` feature)
    `[D0, ... DN]` or `[D0, ... DN, 1]`.

    Args:
      weight_column: a feature name or a `tf.feature_column.numeric_column`:
        each example's loss is multiplied by its weight.
      thresholds: probabilities in (0, 1); accuracy, precision and recall are
        also reported at each (`accuracy/positive_threshold_0.7`, ...).
      label_vocabulary: the two class names, when labels are strings.
      loss_reduction: a `tf.losses.Reduction` other than NONE.
      loss_fn: `(labels, logits[, features])` -> unreduced loss
        `[D0, ... DN, 1]`, in place of sigmoid cross-entropy; it gets float
        labels (the vocabulary applied).
      name: the head's name: `/<name>` is appended to its metric and summary
        keys, and MultiHead keys its logits and labels by it.
    """

    def __init__(
        self,
        weight_column: Any = None,
        thresholds: Sequence[float] | None = None,
        label_vocabulary: Sequence[str] | None = None,
        loss_reduction: str = base_head.Reduction.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        name: str | None = None,
    ):
        base_head.validate_label_vocabulary(
            label_vocabulary, "label_vocabulary should be a list or a tuple. Given type: {}"
        )
        thresholds = tuple(thresholds) if thresholds else ()
        if any(not 0.0 < threshold < 1.0 for threshold in thresholds):
            raise ValueError(f"thresholds not in (0, 1): {(thresholds,)}.")
        base_head.validate_loss_reduction(loss_reduction)
        if loss_fn:
            base_head.validate_loss_fn_args(loss_fn)
        self._set(weight_column, thresholds, label_vocabulary, loss_reduction, loss_fn, name)

    def _set(
        self,
        weight_column: Any,
        thresholds: tuple[float, ...],
        label_vocabulary: Sequence[str] | None,
        loss_reduction: str,
        loss_fn: Callable | None,
        name: str | None,
    ) -> None:
        """Keeps the (checked) arguments; TF 1.x's head class keeps them unchecked, as TF 2.15's did."""
        self._weight_column = weight_column
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name

    @property
    def native_keras_output(self) -> str | None:
        return "sigmoid"

    @property
    def logits_dimension(self) -> int:
        return 1

    def _processed_labels(self, logits: tf.Tensor, labels: Any) -> tf.Tensor:
        """float32 labels `[D0, ... DN, 1]` in [0, 1] (vocabulary strings as their ids)."""
        labels = base_head.check_dense_labels_match_logits_and_reshape(labels, logits, 1)
        if self._label_vocabulary is not None:
            labels = base_head.label_ids_from_vocabulary(labels, self._label_vocabulary)
        return base_head.check_label_range(tf.cast(labels, tf.float32), n_classes=2)

    def _unweighted_loss_and_weights(self, logits: tf.Tensor, labels: tf.Tensor, features: Any) -> tuple:
        if self._loss_fn:
            unweighted_loss = base_head.call_loss_fn(self._loss_fn, labels, logits, features, expected_loss_dim=1)
        else:
            unweighted_loss = tf.compat.v1.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        weights = base_head.get_weights_and_check_match_logits(features, self._weight_column, logits)
        return unweighted_loss, weights

    def predictions(self, logits: Any, keys: Sequence[str] | None = None) -> dict:
        """logits and logistic float32 `[D0, ... DN, 1]`; probabilities `[..., 2]`; class_ids int64 and classes
        strings `[..., 1]`; all_class_ids int32 and all_classes strings `[D0, 2]`."""
        keys = base_head.requested_keys(keys, _VALID_KEYS)
        logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
        predictions = {}
        with tf.name_scope("predictions"):
            if PredictionKeys.LOGITS in keys:
                predictions[PredictionKeys.LOGITS] = logits
            if PredictionKeys.LOGISTIC in keys:
                predictions[PredictionKeys.LOGISTIC] = tf.math.sigmoid(logits, name=PredictionKeys.LOGISTIC)
            # class 0's logit is 0: the softmax of [0, x] is [1 - sigmoid(x), sigmoid(x)]
            two_class_logits = tf.concat([tf.zeros_like(logits), logits], axis=-1, name="two_class_logits")
            if PredictionKeys.PROBABILITIES in keys:
                predictions[PredictionKeys.PROBABILITIES] = tf.nn.softmax(
                    two_class_logits, name=PredictionKeys.PROBABILITIES
                )
            if PredictionKeys.CLASS_IDS in keys or PredictionKeys.CLASSES in keys:
                class_ids = tf.expand_dims(
                    tf.math.argmax(two_class_logits, axis=-1, name=PredictionKeys.CLASS_IDS), axis=-1
                )
                if PredictionKeys.CLASS_IDS in keys:
                    predictions[PredictionKeys.CLASS_IDS] = class_ids
                if PredictionKeys.CLASSES in keys:
                    predictions[PredictionKeys.CLASSES] = self._class_names(class_ids)
            if PredictionKeys.ALL_CLASS_IDS in keys:
                predictions[PredictionKeys.ALL_CLASS_IDS] = base_head.all_class_ids(logits, n_classes=2)
            if PredictionKeys.ALL_CLASSES in keys:
                predictions[PredictionKeys.ALL_CLASSES] = base_head.all_classes(logits, 2, self._label_vocabulary)
        return predictions

    def _class_names(self, class_ids: tf.Tensor) -> tf.Tensor:
        if self._label_vocabulary is not None:
            return base_head.class_names_from_ids(class_ids, self._label_vocabulary)
        return tf.strings.as_string(class_ids, name="str_classes")

    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        """average_loss, accuracy, precision, recall, prediction/mean, label/mean, accuracy_baseline, auc,
        auc_precision_recall (each `/<name>`-suffixed), regularization_loss when there are regularization
        losses, and accuracy, precision and recall at each threshold."""
        keys, key = MetricKeys, self._summary_key
        with tf.name_scope("metrics"):
            label_mean = tf_keras.metrics.Mean(name=keys.LABEL_MEAN)
            eval_metrics = {
                key(keys.LOSS_MEAN): tf_keras.metrics.Mean(name=keys.LOSS_MEAN),
                key(keys.ACCURACY): tf_keras.metrics.Accuracy(name=keys.ACCURACY),
                key(keys.PRECISION): tf_keras.metrics.Precision(name=keys.PRECISION),
                key(keys.RECALL): tf_keras.metrics.Recall(name=keys.RECALL),
                key(keys.PREDICTION_MEAN): tf_keras.metrics.Mean(name=keys.PREDICTION_MEAN),
                key(keys.LABEL_MEAN): label_mean,
                key(keys.ACCURACY_BASELINE): _AccuracyBaseline(label_mean),
                # AUC's default summation is interpolation, as TF 2.15's heads used it
                key(keys.AUC): tf_keras.metrics.AUC(name=keys.AUC),
                key(keys.AUC_PR): tf_keras.metrics.AUC(curve="PR", name=keys.AUC_PR),
            }
            self._add_regularization_and_threshold_metrics(eval_metrics, regularization_losses)
        return eval_metrics

    _metric_predictions = (PredictionKeys.CLASS_IDS, PredictionKeys.LOGISTIC)

    def _update_metric_values(self, eval_metrics: dict, batch: base_head.MetricBatch) -> dict:
        """Class ids for accuracy, precision and recall, the logistic for the means, AUCs and threshold metrics."""
        keys, key = MetricKeys, self._summary_key
        labels, weights, unweighted_loss = batch.labels, batch.weights, batch.unweighted_loss
        logistic, class_ids = batch.predictions[PredictionKeys.LOGISTIC], batch.predictions[PredictionKeys.CLASS_IDS]
        eval_metrics[key(keys.LOSS_MEAN)].update_state(values=unweighted_loss, sample_weight=weights)
        for name in (keys.ACCURACY, keys.PRECISION, keys.RECALL):
            eval_metrics[key(name)].update_state(y_true=labels, y_pred=class_ids, sample_weight=weights)
        base_head.update_metric_with_broadcast_weights(eval_metrics[key(keys.PREDICTION_MEAN)], logistic, weights)
        base_head.update_metric_with_broadcast_weights(eval_metrics[key(keys.LABEL_MEAN)], labels, weights)
        eval_metrics[key(keys.ACCURACY_BASELINE)].update_state()
        auc_weights = tf.__internal__.ops.broadcast_weights(weights, logistic)
        for name in (keys.AUC, keys.AUC_PR):
            eval_metrics[key(name)].update_state(y_true=labels, y_pred=logistic, sample_weight=auc_weights)
        self._update_regularization_and_threshold_metrics(
            eval_metrics, labels, logistic, weights, batch.regularization_losses
        )
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        """serving_default and classification: scores and class names; regression: the logistic; predict: all."""
        outputs = base_head.classifier_export_outputs(predictions, 2, self._label_vocabulary)
        predict = outputs.pop(base_head.PREDICT_SERVING_KEY)  # TF 2.15's order: regression, then predict
        outputs[base_head.REGRESS_SERVING_KEY] = RegressionOutput(value=predictions[PredictionKeys.LOGISTIC])
        outputs[base_head.PREDICT_SERVING_KEY] = predict
        return outputs


__all__ = ["BinaryClassHead"]
