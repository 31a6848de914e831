"""MultiLabelHead: any number of `n_classes` classes per example, a sigmoid each (tf.estimator.MultiLabelHead).

Labels are a multi-hot indicator Tensor `[D0, ... DN, n_classes]`, or a
SparseTensor of class ids (integers, or strings of `label_vocabulary`) with
one row per example, e.g. from a variable-length feature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.canned.prediction_keys import PredictionKeys
from compat.estimator.head import base_head

_VALID_KEYS = (PredictionKeys.LOGITS, PredictionKeys.PROBABILITIES, PredictionKeys.CLASSES)


def _class_ids(classes: Sequence[Any] | None, n_classes: int, label_vocabulary: Sequence[str] | None) -> tuple:
    """`classes_for_class_based_metrics` as class ids: names looked up in the vocabulary, ids range-checked."""
    if not classes:
        return ()
    classes = tuple(classes)
    if isinstance(classes[0], str):
        if not label_vocabulary:
            raise ValueError("label_vocabulary must be provided when classes_for_class_based_metrics are strings.")
        return tuple(label_vocabulary.index(name) for name in classes)
    for class_id in classes:
        if not 0 <= class_id < n_classes:
            raise ValueError(
                f"All classes_for_class_based_metrics must be in range [0, {n_classes - 1}]. Given: {class_id}"
            )
    return classes


class MultiLabelHead(base_head.ThresholdedHead):
    """A head for multi-label classification, with sigmoid cross-entropy averaged over the classes.

    Logits are `[D0, ... DN, n_classes]`; weights `[D0, ... DN]` or
    `[D0, ... DN, 1]` (per example, not per class).

    Args:
      n_classes: the number of classes, > 1.
      weight_column: a feature name or a `tf.feature_column.numeric_column`.
      thresholds: probabilities in (0, 1); accuracy, precision and recall are
        reported at each.
      label_vocabulary: the `n_classes` class names, when labels are a string SparseTensor.
      loss_reduction: a `tf.losses.Reduction` other than NONE.
      loss_fn: `(labels, logits[, features])` -> unreduced loss `[D0, ... DN, 1]`;
        it gets the multi-hot int64 labels.
      classes_for_class_based_metrics: class ids, or names of the vocabulary,
        for which the probability mean, AUC and PR AUC of that class alone are
        reported too.
      name: the head's name: `/<name>` is appended to its metric and summary keys.
    """

    def __init__(
        self,
        n_classes: int,
        weight_column: Any = None,
        thresholds: Sequence[float] | None = None,
        label_vocabulary: Sequence[str] | None = None,
        loss_reduction: str = base_head.Reduction.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        classes_for_class_based_metrics: Sequence[Any] | None = None,
        name: str | None = None,
    ):
        if n_classes is None or n_classes < 2:
            raise ValueError(f"n_classes must be > 1 for multi-label classification. Given: {n_classes}")
        thresholds = tuple(thresholds) if thresholds else ()
        for threshold in thresholds:
            if not 0.0 < threshold < 1.0:
                raise ValueError(f"thresholds must be in (0, 1) range. Given: {threshold}")
        base_head.validate_label_vocabulary(
            label_vocabulary, "label_vocabulary must be a list or tuple. Given type: {}"
        )
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(
                f"Length of label_vocabulary must be n_classes ({n_classes}). Given: {len(label_vocabulary)}"
            )
        if loss_fn:
            base_head.validate_loss_fn_args(loss_fn)
        base_head.validate_loss_reduction(loss_reduction)
        self._n_classes = n_classes
        self._weight_column = weight_column
        self._thresholds = thresholds
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._classes_for_class_based_metrics = _class_ids(classes_for_class_based_metrics, n_classes, label_vocabulary)
        self._name = name

    @property
    def logits_dimension(self) -> int:
        return self._n_classes

    def _sparse_indicator(self, labels: tf.sparse.SparseTensor) -> tf.Tensor:
        """Multi-hot `[D0, ... DN, n_classes]` from a SparseTensor of class ids or vocabulary strings."""
        if labels.dtype == tf.string:
            if self._label_vocabulary is None:
                raise ValueError("Labels are strings: give the head a label_vocabulary of the class names.")
            ids = base_head.label_ids_from_vocabulary(labels.values, self._label_vocabulary)
            return tf.sparse.to_indicator(
                tf.sparse.SparseTensor(labels.indices, ids, labels.dense_shape), self._n_classes
            )
        if not labels.values.dtype.is_integer:
            raise ValueError(f"Labels dtype should be integer. Instead got {labels.values.dtype}.")
        checked = base_head.check_label_range(
            labels.values,
            self._n_classes,
            message=f"labels must be an integer SparseTensor with values in [0, {self._n_classes})",
        )
        if tf.executing_eagerly():
            return tf.sparse.to_indicator(labels, self._n_classes)
        with tf.control_dependencies([checked]):
            return tf.sparse.to_indicator(labels, self._n_classes)

    def _processed_labels(self, logits: tf.Tensor, labels: Any) -> tf.Tensor:
        """Multi-hot labels `[D0, ... DN, n_classes]` (int64 from a SparseTensor), checked against the logits."""
        if labels is None:
            raise ValueError(base_head.LABELS_NONE_MESSAGE)
        labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
        if isinstance(labels, tf.sparse.SparseTensor):
            indicator = tf.cast(self._sparse_indicator(labels), tf.int64)
        else:
            indicator = base_head.check_label_range(
                labels, 2, message="labels must be an integer indicator Tensor with values in [0, 1]"
            )
        return base_head.check_dense_labels_match_logits_and_reshape(indicator, logits, self.logits_dimension)

    def _unweighted_loss_and_weights(self, logits: tf.Tensor, labels: tf.Tensor, features: Any) -> tuple:
        if self._loss_fn:
            unweighted_loss = base_head.call_loss_fn(self._loss_fn, labels, logits, features, expected_loss_dim=1)
        else:
            per_class = tf.compat.v1.losses.sigmoid_cross_entropy(
                multi_class_labels=labels, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE
            )
            unweighted_loss = tf.reduce_mean(per_class, axis=-1, keepdims=True)
        weights = base_head.get_weights_and_check_match_logits(features, self._weight_column, logits)
        return unweighted_loss, weights

    def predictions(self, logits: Any, keys: Sequence[str] | None = None) -> dict:
        """logits and probabilities (a sigmoid each) float32 `[D0, ... DN, n_classes]`; classes: every class
        name, strings `[D0, n_classes]`."""
        keys = base_head.requested_keys(keys, _VALID_KEYS)
        logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
        predictions = {}
        with tf.name_scope("predictions"):
            if PredictionKeys.LOGITS in keys:
                predictions[PredictionKeys.LOGITS] = logits
            if PredictionKeys.PROBABILITIES in keys:
                predictions[PredictionKeys.PROBABILITIES] = tf.math.sigmoid(logits, name=PredictionKeys.PROBABILITIES)
            if PredictionKeys.CLASSES in keys:
                predictions[PredictionKeys.CLASSES] = base_head.all_classes(
                    logits, self._n_classes, self._label_vocabulary
                )
        return predictions

    def _class_keys(self, id_template: str, name_template: str) -> list:
        """Per-class metric keys: by class id, or by class name when there is a vocabulary."""
        if self._label_vocabulary is None:
            keys = [id_template % class_id for class_id in self._classes_for_class_based_metrics]
        else:
            keys = [
                name_template % self._label_vocabulary[class_id] for class_id in self._classes_for_class_based_metrics
            ]
        return [self._summary_key(key) for key in keys]

    def _per_class_keys(self) -> list:
        """(probability mean, AUC, PR AUC) keys of each class of `classes_for_class_based_metrics`."""
        keys = MetricKeys
        return list(
            zip(
                self._class_keys(keys.PROBABILITY_MEAN_AT_CLASS, keys.PROBABILITY_MEAN_AT_NAME),
                self._class_keys(keys.AUC_AT_CLASS, keys.AUC_AT_NAME),
                self._class_keys(keys.AUC_PR_AT_CLASS, keys.AUC_PR_AT_NAME),
            )
        )

    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        """average_loss, auc, auc_precision_recall (`/<name>`-suffixed), regularization_loss when there are
        regularization losses, accuracy, precision and recall at each threshold, and probability mean, AUC and PR
        AUC of each class of `classes_for_class_based_metrics`."""
        keys, key = MetricKeys, self._summary_key
        with tf.name_scope("metrics"):
            eval_metrics = {
                key(keys.LOSS_MEAN): tf_keras.metrics.Mean(name=keys.LOSS_MEAN),
                key(keys.AUC): tf_keras.metrics.AUC(name=keys.AUC),
                key(keys.AUC_PR): tf_keras.metrics.AUC(curve="PR", name=keys.AUC_PR),
            }
            self._add_regularization_and_threshold_metrics(eval_metrics, regularization_losses)
            for probability_mean, auc, auc_pr in self._per_class_keys():
                eval_metrics[probability_mean] = tf_keras.metrics.Mean(name=probability_mean)
                eval_metrics[auc] = tf_keras.metrics.AUC(name=auc)
                eval_metrics[auc_pr] = tf_keras.metrics.AUC(curve="PR", name=auc_pr)
        return eval_metrics

    _metric_predictions = (PredictionKeys.PROBABILITIES,)

    def _update_metric_values(self, eval_metrics: dict, batch: base_head.MetricBatch) -> dict:
        """The mean loss, the AUCs, the threshold metrics and each chosen class's, from the probabilities."""
        keys, key = MetricKeys, self._summary_key
        labels, weights, probabilities = batch.labels, batch.weights, batch.predictions[PredictionKeys.PROBABILITIES]
        eval_metrics[key(keys.LOSS_MEAN)].update_state(values=batch.unweighted_loss, sample_weight=weights)
        for name in (keys.AUC, keys.AUC_PR):
            eval_metrics[key(name)].update_state(y_true=labels, y_pred=probabilities, sample_weight=weights)
        self._update_regularization_and_threshold_metrics(
            eval_metrics, labels, probabilities, weights, batch.regularization_losses
        )
        for class_id, (probability_mean, auc, auc_pr) in zip(
            self._classes_for_class_based_metrics, self._per_class_keys()
        ):
            class_probabilities = probabilities[..., class_id : class_id + 1]
            class_labels = labels[..., class_id : class_id + 1]
            base_head.update_metric_with_broadcast_weights(eval_metrics[probability_mean], class_probabilities, weights)
            for name in (auc, auc_pr):
                eval_metrics[name].update_state(y_true=class_labels, y_pred=class_probabilities, sample_weight=weights)
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        """serving_default and classification: each class's probability and name; predict: all predictions."""
        return base_head.classifier_export_outputs(predictions, self._n_classes, self._label_vocabulary)


__all__ = ["MultiLabelHead"]
