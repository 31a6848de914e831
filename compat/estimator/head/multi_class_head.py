"""MultiClassHead: one logit per class, softmax cross-entropy (tf.estimator.MultiClassHead).

Labels are class ids in [0, n_classes), or strings of `label_vocabulary`.
For two classes BinaryClassHead is the head to use (it is refused here, as in
TF 2.15).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.canned.prediction_keys import PredictionKeys
from compat.estimator.head import base_head

_VALID_KEYS = (
    PredictionKeys.LOGITS,
    PredictionKeys.PROBABILITIES,
    PredictionKeys.CLASS_IDS,
    PredictionKeys.CLASSES,
    PredictionKeys.ALL_CLASS_IDS,
    PredictionKeys.ALL_CLASSES,
)


class MultiClassHead(base_head.SingleHead):
    """A head for classification into `n_classes` > 2 exclusive classes, with softmax cross-entropy loss.

    Logits are `[D0, ... DN, n_classes]` (usually `[batch_size, n_classes]`);
    labels `[D0, ... DN, 1]` or `[D0, ... DN]`: integer ids, or strings of
    `label_vocabulary`; weights `[D0, ... DN]` or `[D0, ... DN, 1]`.

    Args:
      n_classes: the number of classes, > 2 (an int, or an int32 Tensor).
      weight_column: a feature name or a `tf.feature_column.numeric_column`:
        each example's loss is multiplied by its weight.
      label_vocabulary: the `n_classes` class names, when labels are strings.
      loss_reduction: a `tf.losses.Reduction` other than NONE.
      loss_fn: `(labels, logits[, features])` -> unreduced loss
        `[D0, ... DN, 1]`, in place of softmax cross-entropy; it gets integer
        label ids (the vocabulary applied).
      name: the head's name: `/<name>` is appended to its metric and summary keys.
    """

    def __init__(
        self,
        n_classes: Any,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        loss_reduction: str = base_head.Reduction.SUM_OVER_BATCH_SIZE,
        loss_fn: Callable | None = None,
        name: str | None = None,
    ):
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        base_head.validate_label_vocabulary(
            label_vocabulary, "label_vocabulary should be a list or a tuple. Given type: {}"
        )
        if label_vocabulary is not None and len(label_vocabulary) != n_classes:
            raise ValueError(
                f'"label_vocabulary" does not have "n_classes" items. '
                f"len(label_vocabulary)={len(label_vocabulary)}, n_classes={n_classes}, "
                f"label_vocabulary={label_vocabulary}"
            )
        base_head.validate_loss_reduction(loss_reduction)
        if loss_fn:
            base_head.validate_loss_fn_args(loss_fn)
        self._set(
            base_head.validate_n_classes(n_classes), weight_column, label_vocabulary, loss_reduction, loss_fn, name
        )

    def _set(
        self,
        n_classes: Any,
        weight_column: Any,
        label_vocabulary: Sequence[str] | None,
        loss_reduction: str,
        loss_fn: Callable | None,
        name: str | None,
    ) -> None:
        """Keeps the (checked) arguments; TF 1.x's head class checks less first, as TF 2.15's did."""
        self._n_classes = n_classes
        self._weight_column = weight_column
        self._label_vocabulary = label_vocabulary
        self._loss_reduction = loss_reduction
        self._loss_fn = loss_fn
        self._name = name

    @property
    def native_keras_output(self) -> str | None:
        return "softmax"

    @property
    def logits_dimension(self) -> Any:
        return self._n_classes

    def _processed_labels(self, logits: tf.Tensor, labels: Any) -> tf.Tensor:
        """Integer label ids `[D0, ... DN, 1]` in [0, n_classes)."""
        labels = base_head.check_dense_labels_match_logits_and_reshape(labels, logits, 1)
        if self._label_vocabulary is None:
            if not labels.dtype.is_integer:
                raise ValueError(f"Labels dtype should be integer. Instead got {labels.dtype}.")
            label_ids = labels
        else:
            if labels.dtype != tf.string:
                raise ValueError(f"Labels dtype should be string if there is a vocabulary. Instead got {labels.dtype}")
            label_ids = base_head.label_ids_from_vocabulary(labels, self._label_vocabulary)
        return base_head.check_label_range(label_ids, self._n_classes)

    def _unweighted_loss_and_weights(self, logits: tf.Tensor, label_ids: tf.Tensor, features: Any) -> tuple:
        if self._loss_fn:
            unweighted_loss = base_head.call_loss_fn(self._loss_fn, label_ids, logits, features, expected_loss_dim=1)
        else:
            unweighted_loss = tf.expand_dims(
                tf.compat.v1.losses.sparse_softmax_cross_entropy(
                    labels=label_ids, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE
                ),
                axis=-1,
            )
        weights = base_head.get_weights_and_check_match_logits(features, self._weight_column, logits)
        return unweighted_loss, weights

    def predictions(self, logits: Any, keys: Sequence[str] | None = None) -> dict:
        """logits and probabilities float32 `[D0, ... DN, n_classes]`; class_ids int64 and classes strings
        `[..., 1]`; all_class_ids int32 and all_classes strings `[D0, n_classes]`."""
        keys = base_head.requested_keys(keys, _VALID_KEYS)
        logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
        predictions = {}
        with tf.name_scope("predictions"):
            if PredictionKeys.LOGITS in keys:
                predictions[PredictionKeys.LOGITS] = logits
            if PredictionKeys.PROBABILITIES in keys:
                predictions[PredictionKeys.PROBABILITIES] = tf.nn.softmax(logits, name=PredictionKeys.PROBABILITIES)
            if PredictionKeys.CLASS_IDS in keys or PredictionKeys.CLASSES in keys:
                class_ids = tf.expand_dims(tf.math.argmax(logits, axis=-1, name=PredictionKeys.CLASS_IDS), axis=-1)
                if PredictionKeys.CLASS_IDS in keys:
                    predictions[PredictionKeys.CLASS_IDS] = class_ids
                if PredictionKeys.CLASSES in keys:
                    predictions[PredictionKeys.CLASSES] = self._class_names(class_ids)
            if PredictionKeys.ALL_CLASS_IDS in keys:
                predictions[PredictionKeys.ALL_CLASS_IDS] = base_head.all_class_ids(logits, self._n_classes)
            if PredictionKeys.ALL_CLASSES in keys:
                predictions[PredictionKeys.ALL_CLASSES] = base_head.all_classes(
                    logits, self._n_classes, self._label_vocabulary
                )
        return predictions

    def _class_names(self, class_ids: tf.Tensor) -> tf.Tensor:
        if self._label_vocabulary:
            return base_head.class_names_from_ids(class_ids, self._label_vocabulary)
        return tf.strings.as_string(class_ids, name="str_classes")

    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        """average_loss and accuracy (`/<name>`-suffixed), and regularization_loss when there are regularization
        losses."""
        keys, key = MetricKeys, self._summary_key
        with tf.name_scope("metrics"):
            eval_metrics = {key(keys.LOSS_MEAN): tf_keras.metrics.Mean(name=keys.LOSS_MEAN)}
            if regularization_losses is not None:
                eval_metrics[key(keys.LOSS_REGULARIZATION)] = tf_keras.metrics.Mean(name=keys.LOSS_REGULARIZATION)
            eval_metrics[key(keys.ACCURACY)] = tf_keras.metrics.Accuracy(name=keys.ACCURACY)
        return eval_metrics

    _metric_predictions = (PredictionKeys.CLASS_IDS,)

    def _update_metric_values(self, eval_metrics: dict, batch: base_head.MetricBatch) -> dict:
        """The mean loss and the accuracy of the class ids against the label ids."""
        keys, key = MetricKeys, self._summary_key
        weights, class_ids = batch.weights, batch.predictions[PredictionKeys.CLASS_IDS]
        eval_metrics[key(keys.LOSS_MEAN)].update_state(values=batch.unweighted_loss, sample_weight=weights)
        eval_metrics[key(keys.ACCURACY)].update_state(y_true=batch.labels, y_pred=class_ids, sample_weight=weights)
        base_head.update_regularization_metric(eval_metrics, key(keys.LOSS_REGULARIZATION), batch.regularization_losses)
        return eval_metrics

    def export_outputs(self, predictions: dict) -> dict:
        """serving_default and classification: scores and class names; predict: all predictions."""
        return base_head.classifier_export_outputs(predictions, self._n_classes, self._label_vocabulary)


__all__ = ["MultiClassHead"]
