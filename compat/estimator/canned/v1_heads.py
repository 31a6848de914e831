"""The heads of the TF 1.x canned estimators (tf.compat.v1.estimator.DNNClassifier, ...), as TF 2.15's v1 heads.

TF 2.15 kept a second set of heads for its tf.compat.v1.estimator classes.
They predict, export and evaluate as the TF2 heads (compat.estimator.head)
do, key for key, and train differently. The classes here are the TF2 heads
with that training:

  - the loss is reduced by a `tf.compat.v1.losses.Reduction`, as
    `tf.compat.v1.losses.compute_weighted_loss` reduces it: SUM (the default:
    the weighted sum over the batch), MEAN (over the weights),
    SUM_BY_NONZERO_WEIGHTS, SUM_OVER_BATCH_SIZE, ...;
  - the train op is `optimizer.minimize(loss, global_step)` with a
    tf.compat.v1.train optimizer (or `train_op_fn(loss)`), grouped with the
    graph's UPDATE_OPS (the moving statistics of tf.compat.v1.layers' batch
    normalization);
  - training summarises `loss` and, with SUM, `average_loss` (the loss per
    unit of example weight);
  - the binary head's `auc` and `auc_precision_recall` add the trapezoids of
    the curve between 200 thresholds with TF 1.x's epsilon, as
    tf.compat.v1.metrics.auc did (the TF2 head interpolates the PR curve).

`v1_estimator_spec` is how a v1 model_fn hands its logits to a head: a TF2
head given to a v1 `*Estimator` (TF 2.15 offered no public v1 head) trains
with the v1 optimizer through `train_op_fn`, where TF 2.15 raised.
"""

from __future__ import annotations

import abc
import collections
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import tensorflow as tf
import tf_keras

from compat.core import tf_internals
from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.canned.prediction_keys import PredictionKeys
from compat.estimator.head import BinaryClassHead, MultiClassHead, RegressionHead, base_head
from compat.estimator.model_fn import EstimatorSpec, ModeKeys

V1Reduction = tf.compat.v1.losses.Reduction

# What a TF 1.x head's `create_loss` returns (TF 2.15's `canned.head.LossSpec`): the reduced training loss, the
# unreduced loss, the example weights and the labels as the loss took them.
LossSpec = collections.namedtuple("LossSpec", ["training_loss", "unreduced_loss", "weights", "processed_labels"])


class V1Head(abc.ABC):
    """TF 1.x's head interface (TF 2.15's `canned.head._Head`), which libraries' own heads subclass.

    A subclass gives `name`, `logits_dimension` and `create_loss`, and either `create_estimator_spec` or
    `_create_tpu_estimator_spec` (whose TPUEstimatorSpec becomes the EstimatorSpec).
    """

    @property
    @abc.abstractmethod
    def name(self) -> str | None:
        """The head's name (a suffix of its metric keys), or None."""

    @property
    @abc.abstractmethod
    def logits_dimension(self) -> int:
        """The size of the logits' last dimension."""

    @abc.abstractmethod
    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> LossSpec:
        """The loss of `logits` against `labels`, as a LossSpec."""

    def create_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        train_op_fn: Callable | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> EstimatorSpec:
        """The EstimatorSpec a model_fn returns, from `_create_tpu_estimator_spec` unless a subclass overrides this.

        Raises:
            NotImplementedError: the subclass implements neither.
        """
        try:
            spec = self._create_tpu_estimator_spec(
                features, mode, logits, labels, optimizer, train_op_fn, regularization_losses
            )
        except NotImplementedError:
            raise NotImplementedError(
                "Subclasses of _Head must implement `create_estimator_spec()` or _create_tpu_estimator_spec()."
            ) from None
        return spec.as_estimator_spec()

    def _create_tpu_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        train_op_fn: Callable | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> Any:
        raise NotImplementedError("TPUEstimatorSpec not available for this model head.")


_EPSILON = 1e-7  # TF 1.x's AUC: added to the counts so that an empty class gives a rate, not NaN


def validate_v1_loss_reduction(loss_reduction: Any) -> None:
    """A v1 head reduces its loss with a `tf.compat.v1.losses.Reduction` other than NONE."""
    if loss_reduction not in V1Reduction.all() or loss_reduction == V1Reduction.NONE:
        raise ValueError(
            f"Invalid loss_reduction: {loss_reduction}. A tf.compat.v1.estimator class takes one of "
            "tf.compat.v1.losses.Reduction's values other than NONE (SUM, the default, MEAN, "
            "SUM_BY_NONZERO_WEIGHTS, SUM_OVER_BATCH_SIZE ...); the Keras reductions "
            "(tf.keras.losses.Reduction) are the TF2 estimators' (tf.estimator.<Name>)"
        )


class _V1Auc(tf_keras.metrics.AUC):
    """The area under the ROC or PR curve as TF 1.x summed it: trapezoids between the thresholds, the rates
    computed with a small epsilon (`tf.compat.v1.metrics.auc`'s default 'trapezoidal' summation). The counts
    are Keras' (the same 200 thresholds), so only the sum differs."""

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        # Keras runs a metric class of its own as it is, and one from outside (this one) as a tf.function, which
        # must not return AUC's update Operation
        super().update_state(*args, **kwargs)

    def result(self) -> tf.Tensor:
        tp, fp, tn, fn = self.true_positives, self.false_positives, self.true_negatives, self.false_negatives
        recall = (tp + _EPSILON) / (tp + fn + _EPSILON)
        if self.curve.value == "PR":
            x, y = recall, (tp + _EPSILON) / (tp + fp + _EPSILON)
        else:
            x, y = fp / (fp + tn + _EPSILON), recall
        return tf.reduce_sum((x[:-1] - x[1:]) * (y[:-1] + y[1:]) / 2.0)


def v1_train_op(
    loss: tf.Tensor, optimizer: Any = None, train_op_fn: Callable | None = None, update_ops: Sequence[Any] | None = None
) -> tf.Operation:
    """`optimizer.minimize(loss, global_step)` (a tf.compat.v1.train optimizer) or `train_op_fn(loss)`, with the
    graph's UPDATE_OPS and `update_ops` grouped in."""
    base_head.validate_update_ops(update_ops)
    if optimizer is not None:
        if train_op_fn is not None:
            raise ValueError("train_op_fn and optimizer cannot both be set.")
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    elif train_op_fn is not None:
        train_op = train_op_fn(loss)
    else:
        raise ValueError("train_op_fn and optimizer cannot both be None.")
    return append_update_ops(train_op, update_ops)


def append_update_ops(train_op: Any, update_ops: Sequence[Any] | None = None) -> Any:
    """`train_op` with the graph's UPDATE_OPS (and `update_ops`) grouped in; itself when there are none."""
    updates = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS) + list(update_ops or [])
    return tf.group(train_op, *updates) if updates else train_op


# the mixin reads the TF2 head it is mixed into (the class after it in the bases)
_HeadBase: type = base_head.Head if TYPE_CHECKING else object


class _V1Training(_HeadBase):
    """What makes a TF2 head (the class after this one in the bases) a v1 head: the v1 loss reduction, the v1
    train op and summaries. Predictions, metrics and export signatures stay the TF2 head's."""

    # The reduction is a tf.compat.v1.losses.Reduction, kept where TF 2.15's TF 1.x heads kept it,
    # `_loss_reduction` (libraries' heads read it), and checked by the factories only, as TF 2.15 checked it:
    # libraries make the classes with NONE (TF Privacy's heads, whose DP optimizers take one loss per example).

    def create_loss(self, features: Any, mode: str, logits: Any, labels: Any) -> LossSpec:
        """The reduced training loss, the unreduced loss `[D0, ... DN, k]`, the weights and the processed labels
        (TF 1.x's `_Head.create_loss`, which libraries' heads call)."""
        del mode  # the same loss in every mode
        with tf.name_scope("losses"):
            logits = base_head.check_logits_final_dim(logits, self.logits_dimension)
            labels = self._processed_labels(logits, labels)
            unreduced, weights = self._unweighted_loss_and_weights(logits, labels, features)
            training_loss = tf.compat.v1.losses.compute_weighted_loss(
                unreduced, weights=weights, reduction=self._loss_reduction
            )
        return LossSpec(training_loss, unreduced, weights, labels)

    def loss(
        self,
        labels: Any,
        logits: Any,
        features: Any = None,
        mode: str | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> tf.Tensor:
        """The weighted loss reduced by the v1 `loss_reduction`, plus the regularization losses."""
        training_loss = self.create_loss(features, mode or ModeKeys.TRAIN, logits, labels).training_loss
        return base_head.add_regularization(training_loss, regularization_losses)

    def _average_loss(self, training_loss: tf.Tensor, unreduced: tf.Tensor, weights: Any) -> tf.Tensor | None:
        """The training loss per unit of example weight, which TF 2.15 summarised for SUM only."""
        if self._loss_reduction != V1Reduction.SUM:
            return None
        return training_loss / tf.reduce_sum(weights * tf.ones_like(unreduced))

    def create_estimator_spec(
        self,
        features: Any,
        mode: str,
        logits: Any,
        labels: Any = None,
        optimizer: Any = None,
        trainable_variables: Sequence[tf.Variable] | None = None,
        train_op_fn: Callable[[tf.Tensor], Any] | None = None,
        update_ops: Sequence[Any] | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> EstimatorSpec:
        """The EstimatorSpec for `mode`, trained by a tf.compat.v1.train `optimizer` or `train_op_fn`
        (`trainable_variables` is not needed: `minimize` trains the graph's trainable variables)."""
        spec = self._spec_from_tpu_spec(locals())  # a library's subclass building its own, as in TF 2.15
        if spec is not None:
            return spec
        del trainable_variables
        with tf.compat.v1.name_scope(self.name, "head"):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT, predictions=predictions, export_outputs=self.export_outputs(predictions)
                )
            training_loss, unreduced, weights, _ = self.create_loss(features, mode, logits, labels)
            loss = base_head.add_regularization(training_loss, regularization_losses)
            if mode == ModeKeys.EVAL:
                eval_metrics = self.update_metrics(
                    self.metrics(regularization_losses),
                    features,
                    logits,
                    labels,
                    regularization_losses=regularization_losses,
                )
                return EstimatorSpec(
                    mode=ModeKeys.EVAL, predictions=predictions, loss=loss, eval_metric_ops=eval_metrics
                )
            train_op = v1_train_op(loss, optimizer, train_op_fn, update_ops)
            average_loss = self._average_loss(training_loss, unreduced, weights)
        base_head.add_loss_summaries(loss, regularization_losses, self._summary_key)
        if average_loss is not None:
            with tf.compat.v1.name_scope(""):
                tf.compat.v1.summary.scalar(self._summary_key(MetricKeys.LOSS_MEAN), average_loss)
        return EstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions, loss=loss, train_op=train_op)


class BinaryClassHeadV1(_V1Training, BinaryClassHead):
    """The v1 binary head: sigmoid cross-entropy, reduced by a tf.compat.v1.losses.Reduction (default SUM)."""

    def __init__(
        self,
        weight_column: Any = None,
        thresholds: Sequence[float] | None = None,
        label_vocabulary: Sequence[str] | None = None,
        loss_reduction: str = V1Reduction.SUM,
        loss_fn: Callable | None = None,
        name: str | None = None,
    ):
        # TF 2.15's class checked none of these: its factory did (`binary_head_v1`)
        thresholds = tuple(thresholds) if thresholds else ()
        self._set(weight_column, thresholds, label_vocabulary, loss_reduction, loss_fn, name)

    def _eval_metric_ops(
        self,
        labels: tf.Tensor,
        logits: tf.Tensor,
        logistic: tf.Tensor,
        class_ids: tf.Tensor,
        weights: Any,
        unreduced_loss: tf.Tensor,
        regularization_loss: tf.Tensor | None,
    ) -> dict:
        """The metrics of one batch from its tensors (TF 1.x's signature, which libraries' heads call)."""
        del logits  # the logistic carries them
        predictions = {PredictionKeys.LOGISTIC: logistic, PredictionKeys.CLASS_IDS: class_ids}
        batch = _batch(predictions, labels, weights, unreduced_loss, regularization_loss)
        return self._update_metric_values(self.metrics(batch.regularization_losses), batch)

    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        """The TF2 head's metrics, with TF 1.x's sums of the AUCs."""
        eval_metrics = super().metrics(regularization_losses)
        with tf.name_scope("metrics"):
            eval_metrics[self._summary_key(MetricKeys.AUC)] = _V1Auc(name=MetricKeys.AUC)
            eval_metrics[self._summary_key(MetricKeys.AUC_PR)] = _V1Auc(curve="PR", name=MetricKeys.AUC_PR)
        return eval_metrics


class MultiClassHeadV1(_V1Training, MultiClassHead):
    """The v1 multi-class head: softmax cross-entropy, reduced by a tf.compat.v1.losses.Reduction (default SUM)."""

    def __init__(
        self,
        n_classes: int,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        loss_reduction: str = V1Reduction.SUM,
        loss_fn: Callable | None = None,
        name: str | None = None,
    ):
        # TF 2.15's class checked `n_classes` only: its factory checked the rest (`multi_class_head_v1`)
        if n_classes is None:
            raise ValueError("n_classes cannot be None")
        n_classes = base_head.validate_n_classes(n_classes)
        self._set(n_classes, weight_column, label_vocabulary, loss_reduction, loss_fn, name)

    def _eval_metric_ops(
        self,
        labels: tf.Tensor,
        class_ids: tf.Tensor,
        weights: Any,
        unreduced_loss: tf.Tensor,
        regularization_loss: tf.Tensor | None,
    ) -> dict:
        """The metrics of one batch from its tensors (TF 1.x's signature, which libraries' heads call)."""
        predictions = {PredictionKeys.CLASS_IDS: class_ids}
        batch = _batch(predictions, labels, weights, unreduced_loss, regularization_loss)
        return self._update_metric_values(self.metrics(batch.regularization_losses), batch)


class RegressionHeadV1(_V1Training, RegressionHead):
    """The v1 regression head: squared error, reduced by a tf.compat.v1.losses.Reduction (default SUM)."""

    def __init__(
        self,
        label_dimension: int,
        weight_column: Any = None,
        loss_reduction: str = V1Reduction.SUM,
        loss_fn: Callable | None = None,
        inverse_link_fn: Callable | None = None,
        name: str | None = None,
    ):
        # TF 2.15's class checked `label_dimension` only: its factory checked the rest (`regression_head`)
        if label_dimension < 1:
            raise ValueError(f"Invalid label_dimension {label_dimension}.")
        self._set(label_dimension, weight_column, loss_reduction, loss_fn, inverse_link_fn, name)

    def _eval_metric_ops(
        self,
        predicted_value: tf.Tensor,
        labels: tf.Tensor,
        weights: Any,
        unreduced_loss: tf.Tensor,
        regularization_loss: tf.Tensor | None,
    ) -> dict:
        """The metrics of one batch from its tensors (TF 1.x's signature, which libraries' heads call)."""
        predictions = {PredictionKeys.PREDICTIONS: predicted_value}
        batch = _batch(predictions, labels, weights, unreduced_loss, regularization_loss)
        return self._update_metric_values(self.metrics(batch.regularization_losses), batch)


def _batch(
    predictions: dict, labels: Any, weights: Any, unreduced_loss: Any, regularization_loss: Any
) -> base_head.MetricBatch:
    """A TF 1.x head's batch for its TF2 head's metrics: TF 1.x's heads took the regularization loss summed, TF2's
    take the list of losses."""
    losses = None if regularization_loss is None else [regularization_loss]
    return base_head.MetricBatch(predictions, labels, weights, unreduced_loss, losses)


def regression_head(
    weight_column: Any = None,
    label_dimension: int = 1,
    loss_reduction: str = V1Reduction.SUM,
    loss_fn: Callable | None = None,
    inverse_link_fn: Callable | None = None,
    name: str | None = None,
) -> RegressionHeadV1:
    """TF 1.x's regression head in the argument order of TF 2.15's `canned.head._regression_head` (the weight
    column first, unlike the class), its `loss_reduction` checked.

    Raises:
      ValueError: `loss_reduction` is not one of tf.compat.v1.losses.Reduction's other than NONE.
    """
    validate_v1_loss_reduction(loss_reduction)
    _validate_v1_loss_fn(loss_fn)
    return RegressionHeadV1(label_dimension, weight_column, loss_reduction, loss_fn, inverse_link_fn, name)


def binary_head_v1(
    weight_column: Any = None,
    thresholds: Sequence[float] | None = None,
    label_vocabulary: Sequence[str] | None = None,
    loss_reduction: str = V1Reduction.SUM,
    loss_fn: Callable | None = None,
    name: str | None = None,
) -> BinaryClassHeadV1:
    """TF 2.15's `canned.head._binary_logistic_head_with_sigmoid_cross_entropy_loss`: the class, its
    `loss_reduction` checked (the class takes any, as TF 2.15's did).

    Raises:
      ValueError: `loss_reduction` is not one of tf.compat.v1.losses.Reduction's other than NONE.
    """
    thresholds = tuple(thresholds) if thresholds else ()
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise TypeError(f"label_vocabulary should be a list or tuple. Given type: {type(label_vocabulary)}")
    if any(not 0.0 < threshold < 1.0 for threshold in thresholds):
        raise ValueError(f"thresholds not in (0, 1): {(thresholds,)}.")
    validate_v1_loss_reduction(loss_reduction)
    _validate_v1_loss_fn(loss_fn)
    return BinaryClassHeadV1(weight_column, thresholds, label_vocabulary, loss_reduction, loss_fn, name)


def multi_class_head_v1(
    n_classes: int,
    weight_column: Any = None,
    label_vocabulary: Sequence[str] | None = None,
    loss_reduction: str = V1Reduction.SUM,
    loss_fn: Callable | None = None,
    name: str | None = None,
) -> MultiClassHeadV1:
    """TF 2.15's `canned.head._multi_class_head_with_softmax_cross_entropy_loss`: the class, its `loss_reduction`
    checked (the class takes any, as TF 2.15's did).

    Raises:
      ValueError: `loss_reduction` is not one of tf.compat.v1.losses.Reduction's other than NONE.
    """
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}")
    validate_v1_loss_reduction(loss_reduction)
    _validate_v1_loss_fn(loss_fn)
    return MultiClassHeadV1(n_classes, weight_column, label_vocabulary, loss_reduction, loss_fn, name)


def _validate_v1_loss_fn(loss_fn: Callable | None) -> None:
    """TF 1.x's rule for a head's `loss_fn`: it takes `labels` and `logits`, and `features` at most (TF2's heads
    also pass `loss_reduction`).

    Raises:
      ValueError: an argument is missing or unexpected.
    """
    if not loss_fn:
        return
    arguments = tf_internals.fn_args(loss_fn)
    for required in ("labels", "logits"):
        if required not in arguments:
            raise ValueError(f"loss_fn must contain argument: {required}. Given arguments: {arguments}")
    unexpected = sorted(set(arguments) - {"labels", "logits", "features"})
    if unexpected:
        raise ValueError(f"loss_fn has unexpected args: {unexpected}")


def summary_key(head_name: str | None, val: str) -> str:
    """A summary key of a named head, `val/head_name`, in the argument order of TF 2.15's `canned.head._summary_key`
    (the head's name first)."""
    return base_head.suffixed(val, head_name)


def classifier_head_v1(
    n_classes: int, weight_column: Any, label_vocabulary: Sequence[str] | None, loss_reduction: str
) -> Any:
    """The head of a v1 canned classifier: sigmoid for 2 classes, softmax for more (TF 2.15's
    `canned.head._binary_logistic_or_multi_class_head`), through the factories, which check the arguments.

    Raises:
      TypeError, ValueError: as `binary_head_v1` and `multi_class_head_v1`.
    """
    if n_classes == 2:
        return binary_head_v1(weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
    return multi_class_head_v1(
        n_classes, weight_column, label_vocabulary=label_vocabulary, loss_reduction=loss_reduction
    )


def is_v1_head(head: Any) -> bool:
    return isinstance(head, _V1Training)


def v1_estimator_spec(
    head: Any,
    features: dict,
    mode: str,
    labels: Any,
    logits: tf.Tensor,
    optimizer: Any = None,
    train_op_fn: Callable | None = None,
) -> EstimatorSpec:
    """A v1 model_fn's EstimatorSpec: `head` trains with the tf.compat.v1.train `optimizer` (or `train_op_fn`).

    A v1 head takes the optimizer itself. A TF2 head (tf.estimator.*Head,
    given to a v1 `*Estimator`) takes `train_op_fn` only, so the optimizer's
    `minimize` is handed to it as one, with the graph's UPDATE_OPS.
    """
    if mode != ModeKeys.TRAIN:
        optimizer = train_op_fn = None
    if is_v1_head(head):
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, logits=logits, optimizer=optimizer, train_op_fn=train_op_fn
        )
    if optimizer is not None:
        train_op_fn = _minimizing(optimizer)
    update_ops = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS) if train_op_fn else None
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        logits=logits,
        train_op_fn=train_op_fn,
        update_ops=update_ops or None,
    )


def _minimizing(optimizer: Any) -> Callable[[tf.Tensor], tf.Operation]:
    def train_op_fn(loss: tf.Tensor) -> tf.Operation:
        return optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())

    return train_op_fn


__all__ = [
    "BinaryClassHeadV1",
    "MultiClassHeadV1",
    "RegressionHeadV1",
    "V1Reduction",
    "binary_head_v1",
    "classifier_head_v1",
    "is_v1_head",
    "multi_class_head_v1",
    "regression_head",
    "v1_estimator_spec",
    "v1_train_op",
    "validate_v1_loss_reduction",
]
