"""Heads: from logits to predictions, loss, metrics and export outputs, as TF 2.15's canned estimators.

  MultiClassHead   n_classes > 2: softmax; metrics accuracy, average_loss
  BinaryClassHead  n_classes = 2: sigmoid; adds auc, auc_precision_recall, precision, recall,
                   label/mean, prediction/mean, accuracy_baseline; predictions add `logistic`
  RegressionHead   squared error; metrics average_loss, label/mean, prediction/mean

The training loss is TF 2.15's SUM_OVER_BATCH_SIZE: the weighted sum of the
per-example losses over the number of loss elements (weights not normalised);
the Estimator's evaluation `loss` is the mean of it over batches, and
`average_loss` the weighted mean over examples. Prediction keys, dtypes and
signatures are TF 2.15's (classes as strings, `all_class_ids` int32, ...).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from compat.estimator import export
from compat.estimator.model_fn import EstimatorSpec, ModeKeys

_v1 = tf.compat.v1
SUM_OVER_BATCH_SIZE = "sum_over_batch_size"
SUM = "sum"


def _reduction_name(reduction: Any) -> str:
    name = str(getattr(reduction, "value", reduction)).lower()
    if name not in (SUM_OVER_BATCH_SIZE, SUM):
        raise ValueError(f"loss_reduction must be SUM_OVER_BATCH_SIZE or SUM, given {reduction!r}")
    return name


def _column_key(weight_column: Any) -> str | None:
    if weight_column is None or isinstance(weight_column, str):
        return weight_column
    key = getattr(weight_column, "key", None)
    if key is None:
        raise ValueError(f"weight_column must be a string or a numeric_column, given {weight_column!r}")
    return key


def _as_column(tensor: tf.Tensor, what: str) -> tf.Tensor:
    """`[batch]` or `[batch, 1]` as `[batch, 1]`."""
    if tensor.shape.rank == 1:
        return tf.expand_dims(tensor, -1)
    if tensor.shape.rank == 2 and tensor.shape[1] in (1, None):
        return tensor
    raise ValueError(f"{what} must have shape [batch] or [batch, 1], given {tensor.shape}")


def _weights(features: Any, weight_column: Any, like: tf.Tensor) -> tf.Tensor:
    key = _column_key(weight_column)
    if key is None:
        return tf.ones_like(like[:, :1], tf.float32)
    if not isinstance(features, dict) or key not in features:
        raise ValueError(f"weight_column '{key}' is not among the features {sorted(features)}; add it to the input_fn")
    return _as_column(tf.cast(features[key], tf.float32), f"weight column '{key}'")


def _reduce(unreduced: tf.Tensor, weights: tf.Tensor, reduction: str) -> tf.Tensor:
    weighted = unreduced * weights
    total = tf.reduce_sum(weighted)
    if reduction == SUM:
        return total
    return total / tf.cast(tf.size(weighted), tf.float32)


class _Head:
    """What every head shares: the spec for each mode from predictions, losses and metrics."""

    logits_dimension: int

    def create_estimator_spec(self, features: Any, mode: str, logits: tf.Tensor, labels: Any = None,
                              train_op_fn: Callable[[tf.Tensor], tf.Operation] | None = None) -> EstimatorSpec:
        predictions = self.predictions(logits)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=predictions, export_outputs=self.export_outputs(predictions))
        if labels is None:
            raise ValueError(f"Labels must not be None in {mode} mode: the input_fn gave features only")
        loss, metric_inputs = self.loss(features, logits, labels)
        if mode == ModeKeys.EVAL:
            return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                 eval_metric_ops=self.metrics(predictions, **metric_inputs))
        if train_op_fn is None:
            raise ValueError("train_op_fn must be given in TRAIN mode")
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op_fn(loss))


class _ClassHead(_Head):
    def __init__(self, n_classes: int, weight_column: Any, label_vocabulary: Sequence[str] | None, loss_reduction: Any):
        if label_vocabulary is not None:
            if not isinstance(label_vocabulary, (list, tuple)) or not all(isinstance(v, str) for v in label_vocabulary):
                raise ValueError(f"label_vocabulary should be a list or tuple of strings, given {label_vocabulary!r}")
            if len(label_vocabulary) != n_classes:
                raise ValueError(f"label_vocabulary has {len(label_vocabulary)} entries but n_classes is {n_classes}")
        self.n_classes = n_classes
        self.weight_column = weight_column
        self.label_vocabulary = list(label_vocabulary) if label_vocabulary is not None else None
        self.loss_reduction = _reduction_name(loss_reduction)

    def _class_strings(self) -> tf.Tensor:
        if self.label_vocabulary is not None:
            return tf.constant(self.label_vocabulary)
        return tf.strings.as_string(tf.range(self.n_classes))

    def _label_ids(self, labels: tf.Tensor) -> tf.Tensor:
        labels = _as_column(labels if isinstance(labels, tf.Tensor) else tf.convert_to_tensor(labels), "labels")
        if self.label_vocabulary is not None:
            if labels.dtype != tf.string:
                raise ValueError(f"Labels must be strings when label_vocabulary is given, given {labels.dtype.name}")
            table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(tf.constant(self.label_vocabulary),
                                                    tf.range(self.n_classes, dtype=tf.int64)), default_value=-1)
            ids = table.lookup(labels)
            check = tf.debugging.assert_non_negative(ids, message="Labels must be in label_vocabulary")
            with tf.control_dependencies([check]):
                return tf.identity(ids)
        if labels.dtype == tf.string:
            raise ValueError("Labels are strings: give the estimator label_vocabulary to map them to classes")
        ids = tf.cast(labels, tf.int64)
        checks = [tf.debugging.assert_non_negative(ids, message="Labels must be >= 0"),
                  tf.debugging.assert_less(ids, tf.constant(self.n_classes, tf.int64),
                                           message=f"Labels must be < n_classes ({self.n_classes})")]
        with tf.control_dependencies(checks):
            return tf.identity(ids)

    def export_outputs(self, predictions: dict) -> dict:
        classification = export.ClassificationOutput(scores=predictions["probabilities"],
                                                     classes=predictions["all_classes"])
        return {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: classification, "classification": classification,
                "predict": export.PredictOutput(predictions)}

    def _common_predictions(self, logits: tf.Tensor, probabilities: tf.Tensor, class_ids: tf.Tensor) -> dict:
        batch = tf.shape(logits)[0]
        strings = self._class_strings()
        return {
            "logits": logits,
            "probabilities": probabilities,
            "class_ids": class_ids,
            "classes": tf.gather(strings, class_ids),
            "all_class_ids": tf.tile(tf.range(self.n_classes, dtype=tf.int32)[tf.newaxis], [batch, 1]),
            "all_classes": tf.tile(strings[tf.newaxis], [batch, 1]),
        }


class MultiClassHead(_ClassHead):
    """Softmax over `n_classes` (> 2) logits."""

    def __init__(self, n_classes: int, weight_column: Any = None, label_vocabulary: Sequence[str] | None = None,
                 loss_reduction: Any = SUM_OVER_BATCH_SIZE, loss_fn: Callable | None = None, name: str | None = None):
        if n_classes is None or n_classes <= 2:
            raise ValueError(f"n_classes must be > 2: {n_classes}")
        if loss_fn is not None or name is not None:
            raise NotImplementedError("MultiClassHead: loss_fn and name are not supported by compat.estimator")
        super().__init__(n_classes, weight_column, label_vocabulary, loss_reduction)
        self.logits_dimension = n_classes

    def predictions(self, logits: tf.Tensor) -> dict:
        class_ids = tf.expand_dims(tf.argmax(logits, axis=-1), -1)
        return self._common_predictions(logits, tf.nn.softmax(logits), class_ids)

    def loss(self, features: Any, logits: tf.Tensor, labels: Any) -> tuple[tf.Tensor, dict]:
        label_ids = self._label_ids(labels)
        unreduced = tf.expand_dims(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.squeeze(label_ids, -1), logits=logits), -1)
        weights = _weights(features, self.weight_column, logits)
        return _reduce(unreduced, weights, self.loss_reduction), {
            "label_ids": label_ids, "unreduced_loss": unreduced, "weights": weights}

    def metrics(self, predictions: dict, label_ids, unreduced_loss, weights) -> dict:
        return {
            "accuracy": _v1.metrics.accuracy(label_ids, predictions["class_ids"], weights=weights, name="accuracy"),
            "average_loss": _v1.metrics.mean(unreduced_loss, weights=weights, name="average_loss"),
        }


class BinaryClassHead(_ClassHead):
    """Sigmoid over one logit: two classes."""

    def __init__(self, weight_column: Any = None, thresholds: Sequence[float] | None = None,
                 label_vocabulary: Sequence[str] | None = None, loss_reduction: Any = SUM_OVER_BATCH_SIZE,
                 loss_fn: Callable | None = None, name: str | None = None):
        if thresholds or loss_fn is not None or name is not None:
            raise NotImplementedError("BinaryClassHead: thresholds, loss_fn and name are not supported by "
                                      "compat.estimator")
        super().__init__(2, weight_column, label_vocabulary, loss_reduction)
        self.logits_dimension = 1

    def predictions(self, logits: tf.Tensor) -> dict:
        two_class_logits = tf.concat([tf.zeros_like(logits), logits], axis=-1)
        class_ids = tf.expand_dims(tf.argmax(two_class_logits, axis=-1), -1)
        predictions = self._common_predictions(logits, tf.nn.softmax(two_class_logits), class_ids)
        predictions["logistic"] = tf.sigmoid(logits)
        return predictions

    def export_outputs(self, predictions: dict) -> dict:
        return {**super().export_outputs(predictions), "regression": export.RegressionOutput(predictions["logistic"])}

    def loss(self, features: Any, logits: tf.Tensor, labels: Any) -> tuple[tf.Tensor, dict]:
        label_ids = self._label_ids(labels)
        unreduced = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(label_ids, tf.float32), logits=logits)
        weights = _weights(features, self.weight_column, logits)
        return _reduce(unreduced, weights, self.loss_reduction), {
            "label_ids": label_ids, "unreduced_loss": unreduced, "weights": weights}

    def metrics(self, predictions: dict, label_ids, unreduced_loss, weights) -> dict:
        class_ids, logistic = predictions["class_ids"], predictions["logistic"]
        labels = tf.cast(label_ids, tf.float32)
        label_mean, label_mean_update = _v1.metrics.mean(labels, weights=weights, name="label/mean")
        return {
            "accuracy": _v1.metrics.accuracy(label_ids, class_ids, weights=weights, name="accuracy"),
            "accuracy_baseline": (tf.maximum(label_mean, 1.0 - label_mean), label_mean_update),
            "auc": _v1.metrics.auc(labels, logistic, weights=weights, curve="ROC", name="auc",
                                   summation_method="careful_interpolation"),
            "auc_precision_recall": _v1.metrics.auc(labels, logistic, weights=weights, curve="PR",
                                                    name="auc_precision_recall",
                                                    summation_method="careful_interpolation"),
            "average_loss": _v1.metrics.mean(unreduced_loss, weights=weights, name="average_loss"),
            "label/mean": (label_mean, label_mean_update),
            "precision": _v1.metrics.precision(label_ids, class_ids, weights=weights, name="precision"),
            "prediction/mean": _v1.metrics.mean(logistic, weights=weights, name="prediction/mean"),
            "recall": _v1.metrics.recall(label_ids, class_ids, weights=weights, name="recall"),
        }


class RegressionHead(_Head):
    """Squared error over `label_dimension` outputs."""

    def __init__(self, label_dimension: int = 1, weight_column: Any = None, loss_reduction: Any = SUM_OVER_BATCH_SIZE,
                 loss_fn: Callable | None = None, inverse_link_fn: Callable | None = None, name: str | None = None):
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        if loss_fn is not None or name is not None:
            raise NotImplementedError("RegressionHead: loss_fn and name are not supported by compat.estimator")
        self.logits_dimension = label_dimension
        self.weight_column = weight_column
        self.loss_reduction = _reduction_name(loss_reduction)
        self.inverse_link_fn = inverse_link_fn

    def predictions(self, logits: tf.Tensor) -> dict:
        predictions = self.inverse_link_fn(logits) if self.inverse_link_fn else logits
        return {"predictions": predictions}

    def export_outputs(self, predictions: dict) -> dict:
        regression = export.RegressionOutput(predictions["predictions"])
        return {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: regression, "regression": regression,
                "predict": export.PredictOutput(predictions)}

    def loss(self, features: Any, logits: tf.Tensor, labels: Any) -> tuple[tf.Tensor, dict]:
        labels = tf.cast(labels if isinstance(labels, tf.Tensor) else tf.convert_to_tensor(labels), tf.float32)
        if labels.shape.rank == 1:
            labels = tf.expand_dims(labels, -1)
        predictions = self.predictions(logits)["predictions"]
        unreduced = tf.math.squared_difference(predictions, labels)
        weights = _weights(features, self.weight_column, logits)
        return _reduce(unreduced, weights, self.loss_reduction), {
            "labels": labels, "unreduced_loss": unreduced, "weights": weights}

    def metrics(self, predictions: dict, labels, unreduced_loss, weights) -> dict:
        broadcast = tf.ones_like(unreduced_loss) * weights
        return {
            "average_loss": _v1.metrics.mean(unreduced_loss, weights=broadcast, name="average_loss"),
            "label/mean": _v1.metrics.mean(labels, weights=broadcast, name="label/mean"),
            "prediction/mean": _v1.metrics.mean(predictions["predictions"], weights=broadcast,
                                                name="prediction/mean"),
        }


def class_head(n_classes: int, weight_column: Any, label_vocabulary: Sequence[str] | None,
               loss_reduction: Any) -> _ClassHead:
    """The head a canned classifier uses for `n_classes`, as TF 2.15 chose it."""
    if n_classes is None or n_classes < 2:
        raise ValueError(f"n_classes must be > 1: {n_classes}")
    if n_classes == 2:
        return BinaryClassHead(weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    return MultiClassHead(n_classes, weight_column, label_vocabulary, loss_reduction)
