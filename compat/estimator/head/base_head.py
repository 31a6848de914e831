"""The Head interface (tf.estimator.Head) and what every head shares.

A head turns the last layer of a network, its `logits`, into what a model_fn
returns: predictions, a training loss, evaluation metrics, export signatures
and a train op, in an `EstimatorSpec`. The heads here are TF 2.15's, key for
key and value for value:

  - shapes: logits are `[D0, ... DN, logits_dimension]`; labels and weights
    `[D0, ... DN, k]` or, one dimension shorter, `[D0, ... DN]` (expanded);
  - the training loss is `compute_weighted_loss` of the unreduced loss and the
    weights (SUM_OVER_BATCH_SIZE: the weighted sum over the number of loss
    elements, the weights not normalised), plus the regularization losses;
  - eval metrics are Keras 2 (tf_keras) metric objects, which record their
    update ops in graph mode; `EstimatorSpec` turns them into
    `(value, update_op)` pairs with local variables;
  - shape and range checks are Python errors when executing eagerly (shapes
    are all known) and graph assertions otherwise, as TF 2.15's were: a
    program, or a test, that matches on their messages finds the same phrases.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf
import tf_keras

from compat.core import tf_internals
from compat.estimator.canned import optimizers
from compat.estimator.canned.metric_keys import MetricKeys
from compat.estimator.canned.prediction_keys import PredictionKeys
from compat.estimator.export.export_output import ClassificationOutput, PredictOutput
from compat.estimator.model_fn import EstimatorSpec, ModeKeys

DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
# signature names beside the default one (TF 2.15's; serving clients call them by name)
CLASSIFY_SERVING_KEY = "classification"
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"

Reduction = tf_keras.losses.Reduction

LABELS_NONE_MESSAGE = (
    "You must provide a labels Tensor. Given: None. Suggested troubleshooting steps: Check that your data contains "
    "your label feature. Check that your input_fn properly parses and returns labels."
)
_SPARSE_LABELS_MESSAGE = (
    "SparseTensor labels are not supported. Labels must be a Tensor of shape [D0, D1, ..., DN, {0}], e.g. "
    "[batch_size, {0}]. Each example must contain {0} value(s); in the input_fn, densify sparse labels with "
    "tf.sparse.to_dense()."
)
_LABEL_DIMENSION_MESSAGE = (
    "Mismatched label shape. Expected labels dimension={}.  Received {}. Check n_classes (or label_dimension) and the "
    "shape of your labels."
)
_LABEL_SHAPE_MESSAGE = (
    "labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your n_classes argument to "
    "the head and/or the shape of your label."
)
_LOGITS_SHAPE_MESSAGE = "logits shape must be [D0, D1, ... DN, logits_dimension]"
_WEIGHTS_SHAPE_MESSAGE = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
_PER_LOGIT_WEIGHTS_SHAPE_MESSAGE = (
    "weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or [D0, D1, ... DN, logits_dimension]"
)
_NOT_A_LIST_MESSAGE = "{} should be a list or a tuple. Given type: {}."


class Head(abc.ABC):
    """The top of a model (tf.estimator.Head): from logits to predictions, loss, metrics and an EstimatorSpec.

    A model_fn computes `logits` of shape `[batch_size, head.logits_dimension]`
    (or `[D0, ... DN, logits_dimension]`) and returns
    `head.create_estimator_spec(features, mode, logits, labels, optimizer=...)`.
    Eagerly, `loss`, `predictions`, `metrics` and `update_metrics` serve a
    custom training loop.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str | None:
        """The head's name: metric and summary keys get the suffix `/<name>`; MultiHead keys on it."""

    @property
    def native_keras_output(self) -> str | None:
        """This toolkit's, not TF 2.15's: the activation ("sigmoid", "softmax" or "identity") of the logits that
        gives this head's predictions in a native Keras model (`to_keras` of a canned Estimator), or None when
        none does (a link of its own, such as a Poisson head's exp): such an Estimator converts through its
        export."""
        return None

    @property
    @abc.abstractmethod
    def logits_dimension(self) -> Any:
        """The size of the logits' last dimension (classes, labels or values per example)."""

    @property
    @abc.abstractmethod
    def loss_reduction(self) -> str:
        """How the training loss is reduced over the batch: a `tf.losses.Reduction` other than NONE."""

    @abc.abstractmethod
    def loss(
        self,
        labels: Any,
        logits: Any,
        features: Any = None,
        mode: str | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> tf.Tensor:
        """The scalar training loss, regularization losses added."""

    @abc.abstractmethod
    def predictions(self, logits: Any, keys: Sequence[str] | None = None) -> dict:
        """The prediction tensors, by PredictionKeys (all the head's keys when `keys` is None)."""

    @abc.abstractmethod
    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        """New metric objects, by metric key; `update_metrics` updates them."""

    @abc.abstractmethod
    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: Any,
        regularization_losses: Sequence[Any] | None = None,
    ) -> dict:
        """Updates `eval_metrics` (from `metrics()`) with one batch and returns them."""

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
        """The EstimatorSpec for `mode`. A Head subclass that is not one of tf.estimator's implements it, or
        `_create_tpu_estimator_spec`."""
        spec = self._spec_from_tpu_spec(locals())
        if spec is None:
            raise NotImplementedError(
                "Subclasses of Head must implement `create_estimator_spec()` or _create_tpu_estimator_spec()."
            )
        return spec

    def _create_tpu_estimator_spec(
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
    ) -> Any:
        """A `_TPUEstimatorSpec` for `mode`: TF 2.15's way for a head to build its spec. A subclass that defines
        it (a custom head, or a library's subclass of a tf.estimator head, such as a differentially private
        one) is built through it by `create_estimator_spec`, as TF 2.15 built it."""
        raise NotImplementedError

    def _spec_from_tpu_spec(self, arguments: dict) -> EstimatorSpec | None:
        """The EstimatorSpec of a subclass's own `_create_tpu_estimator_spec`, or None where none is defined."""
        if type(self)._create_tpu_estimator_spec is Head._create_tpu_estimator_spec:
            return None
        # a TF 1.x head's takes fewer arguments (no trainable_variables, no update_ops)
        accepted = inspect.signature(self._create_tpu_estimator_spec).parameters
        arguments = {name: value for name, value in arguments.items() if name in accepted}
        return self._create_tpu_estimator_spec(**arguments).as_estimator_spec()


@dataclasses.dataclass(frozen=True)
class MetricBatch:
    """One evaluation batch as a head's metrics read it: `SingleHead.update_metrics` makes it from the logits;
    the TF 1.x heads' `_eval_metric_ops` from the tensors they are given.

    Attributes:
      predictions: the predictions the head's metrics read, by PredictionKeys.
      labels: the labels as the head's loss reads them (`_processed_labels`).
      weights: each example's weight (1 without a weight column).
      unweighted_loss: the per-example loss.
      regularization_losses: the regularization losses, or None.
    """

    predictions: Mapping[str, Any]
    labels: Any
    weights: Any
    unweighted_loss: Any
    regularization_losses: Sequence[Any] | None = None


class SingleHead(Head):
    """A head over one logits tensor: builds the EstimatorSpec of each mode from the Head methods.

    A subclass processes its labels (`_processed_labels`), gives each example's loss and weight
    (`_unweighted_loss_and_weights`), names the predictions its metrics read (`_metric_predictions`; empty:
    all), updates its metrics from one `MetricBatch` (`_update_metric_values`) and says which export outputs it
    serves (`export_outputs`); the rest is the same for every tf.estimator head.
    """

    _name: str | None
    _loss_reduction: str

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def loss_reduction(self) -> str:
        return self._loss_reduction

    def _summary_key(self, key: str) -> str:
        """`key`, with `/<name>` appended when the head has a name."""
        return suffixed(key, self.name)

    @abc.abstractmethod
    def _processed_labels(self, logits: tf.Tensor, labels: Any) -> tf.Tensor:
        """The labels as this head's loss reads them, checked against `logits`."""

    @abc.abstractmethod
    def _unweighted_loss_and_weights(self, logits: tf.Tensor, labels: tf.Tensor, features: Any) -> tuple:
        """The per-example loss of `labels` (processed) and each example's weight."""

    def loss(
        self,
        labels: Any,
        logits: Any,
        features: Any = None,
        mode: str | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> tf.Tensor:
        """The head's per-example loss, weighted and reduced by `loss_reduction`, plus the regularization
        losses; the same in every mode."""
        del mode
        with tf.name_scope("losses"):
            logits = check_logits_final_dim(logits, self.logits_dimension)
            labels = self._processed_labels(logits, labels)
            unweighted_loss, weights = self._unweighted_loss_and_weights(logits, labels, features)
            return reduced_training_loss(unweighted_loss, weights, self.loss_reduction, regularization_losses)

    # the prediction keys a subclass's metrics read
    _metric_predictions: tuple[str, ...] = ()

    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: Any,
        regularization_losses: Sequence[Any] | None = None,
    ) -> dict:
        """Updates the metrics of `metrics()` with one batch, weighted by the example weights."""
        predictions = self.predictions(logits, self._metric_predictions)
        logits = check_logits_final_dim(logits, self.logits_dimension)
        labels = self._processed_labels(logits, labels)
        unweighted_loss, weights = self._unweighted_loss_and_weights(logits, labels, features)
        batch = MetricBatch(predictions, labels, weights, unweighted_loss, regularization_losses)
        return self._update_metric_values(eval_metrics, batch)

    def _update_metric_values(self, eval_metrics: dict, batch: MetricBatch) -> dict:
        """Updates `eval_metrics` (from `metrics()`) with `batch` and returns them. Not abstract, so that a
        subclass that overrides `update_metrics` itself need not define it."""
        raise NotImplementedError(
            f"{type(self).__name__} must override update_metrics(), or _update_metric_values(eval_metrics, batch) "
            "which update_metrics() calls with a MetricBatch"
        )

    @abc.abstractmethod
    def export_outputs(self, predictions: dict) -> dict:
        """The signatures a SavedModel serves, by signature name, from this head's predictions."""

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
        """The EstimatorSpec for `mode`.

        PREDICT: predictions and export outputs. EVAL: also the loss and the
        metrics. TRAIN: the loss, a train op from `optimizer`
        (`optimizer.get_updates(loss, trainable_variables)[0]`) or from
        `train_op_fn(loss)` (exactly one of them), `update_ops` grouped in, and
        loss summaries.
        """
        spec = self._spec_from_tpu_spec(locals())
        if spec is not None:
            return spec
        with tf.compat.v1.name_scope(self.name, "head"):
            predictions = self.predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(
                    mode=ModeKeys.PREDICT, predictions=predictions, export_outputs=self.export_outputs(predictions)
                )
            loss = self.loss(labels, logits, features=features, mode=mode, regularization_losses=regularization_losses)
            if mode == ModeKeys.EVAL:
                eval_metrics = self.metrics(regularization_losses=regularization_losses)
            else:
                train_op = train_op_for(
                    loss,
                    optimizer=optimizer,
                    trainable_variables=trainable_variables,
                    train_op_fn=train_op_fn,
                    update_ops=update_ops,
                    loss_reduction=self.loss_reduction,
                )
        if mode == ModeKeys.EVAL:
            eval_metrics = self.update_metrics(
                eval_metrics, features, logits, labels, regularization_losses=regularization_losses
            )
            return EstimatorSpec(mode=ModeKeys.EVAL, predictions=predictions, loss=loss, eval_metric_ops=eval_metrics)
        add_loss_summaries(loss, regularization_losses, self._summary_key)
        return EstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions, loss=loss, train_op=train_op)


class ThresholdedHead(SingleHead):
    """A SingleHead whose probabilities are also scored at fixed thresholds (BinaryClassHead, MultiLabelHead):
    accuracy, precision and recall at each of `_thresholds`, after the regularization loss's mean."""

    _thresholds: tuple

    def _threshold_keys(self, template: str) -> list:
        return [self._summary_key(template % threshold) for threshold in self._thresholds]

    def _add_regularization_and_threshold_metrics(
        self, eval_metrics: dict, regularization_losses: Sequence[Any] | None
    ) -> None:
        """Adds to `eval_metrics` the regularization loss's mean (when there are regularization losses) and the
        threshold metrics, in TF 2.15's order."""
        keys = MetricKeys
        if regularization_losses is not None:
            key = self._summary_key(keys.LOSS_REGULARIZATION)
            eval_metrics[key] = tf_keras.metrics.Mean(name=keys.LOSS_REGULARIZATION)
        for threshold, accuracy, precision, recall in zip(self._thresholds, *self._threshold_metric_keys()):
            eval_metrics[accuracy] = tf_keras.metrics.BinaryAccuracy(name=accuracy, threshold=threshold)
            eval_metrics[precision] = tf_keras.metrics.Precision(name=precision, thresholds=threshold)
            eval_metrics[recall] = tf_keras.metrics.Recall(name=recall, thresholds=threshold)

    def _threshold_metric_keys(self) -> tuple[list, list, list]:
        keys = MetricKeys
        return (
            self._threshold_keys(keys.ACCURACY_AT_THRESHOLD),
            self._threshold_keys(keys.PRECISION_AT_THRESHOLD),
            self._threshold_keys(keys.RECALL_AT_THRESHOLD),
        )

    def _update_regularization_and_threshold_metrics(
        self,
        eval_metrics: dict,
        labels: tf.Tensor,
        probabilities: tf.Tensor,
        weights: Any,
        regularization_losses: Sequence[Any] | None,
    ) -> None:
        """Updates what `_add_regularization_and_threshold_metrics` added with one batch."""
        key = self._summary_key(MetricKeys.LOSS_REGULARIZATION)
        update_regularization_metric(eval_metrics, key, regularization_losses)
        for names in zip(*self._threshold_metric_keys()):
            for name in names:
                eval_metrics[name].update_state(y_true=labels, y_pred=probabilities, sample_weight=weights)


# --- arguments ---------------------------------------------------------------------------------------------------


def suffixed(key: str, head_name: str | None) -> str:
    """A metric or summary key of a named head: `key/name`."""
    return f"{key}/{head_name}" if head_name else key


def validate_loss_fn_args(loss_fn: Callable) -> None:
    """A custom loss_fn takes `labels` and `logits`, optionally `features` and `loss_reduction`, nothing else."""
    names = tf_internals.fn_args(loss_fn)  # as TF 2.15's heads read them
    for required in ("labels", "logits"):
        if required not in names:
            raise ValueError(f"loss_fn must contain argument: {required}. Given arguments: {names}")
    unexpected = sorted(set(names) - {"labels", "logits", "features", "loss_reduction"})
    if unexpected:
        raise ValueError(f"loss_fn has unexpected args: {unexpected}")


def validate_loss_reduction(loss_reduction: Any) -> None:
    """A head reduces its loss to a scalar: any `tf.losses.Reduction` but NONE."""
    if loss_reduction not in Reduction.all() or loss_reduction == Reduction.NONE:
        raise ValueError(
            f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` for valid options "
            "(SUM_OVER_BATCH_SIZE, SUM or AUTO)."
        )


def validate_label_vocabulary(label_vocabulary: Any, message: str) -> None:
    """`label_vocabulary` is None or a list or tuple; `message` (with `{}` for the type given) says otherwise."""
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(message.format(type(label_vocabulary)))


def validate_n_classes(n_classes: Any) -> Any:
    """More than 2 classes; returned as given.

    As TF 2.15 checked it: a Python int now; anything else is compared, as a tensor, with the int32 2, which
    fails now when eager (a value not above 2, or of another dtype: float, int64, a string) and when the graph
    runs otherwise.

    Raises:
      ValueError: a Python int not above 2.
      tf.errors.InvalidArgumentError: an eager value not above 2, or not an int32.
    """
    if isinstance(n_classes, int) and n_classes <= 2:
        raise ValueError(f"n_classes must be > 2: {n_classes}.")
    if not isinstance(n_classes, int):
        tf.compat.v1.debugging.assert_greater(
            tf.convert_to_tensor(n_classes), tf.constant(2), message="n_classes must be greater than 2"
        )
    return n_classes


def check_prediction_keys(pred_keys: Iterable[str], valid_keys: Sequence[str]) -> None:
    for key in pred_keys:
        if key not in valid_keys:
            raise ValueError(
                f"Prediction key must be in PredictionKeys, given: {key}. Valid prediction keys include "
                f"{list(valid_keys)}."
            )


def requested_keys(keys: Sequence[str] | None, valid_keys: Sequence[str]) -> Sequence[str]:
    """The prediction keys to compute: `keys` checked, or all of `valid_keys`."""
    if not keys:
        return valid_keys
    check_prediction_keys(keys, valid_keys)
    return keys


# --- shapes ------------------------------------------------------------------------------------------------------


def _shape_tuple(tensor: Any) -> tuple:
    """An eager tensor's shape, which is always fully known (the graph checks use dynamic shapes)."""
    return tuple(tensor.shape.as_list())


def _shapes_equal(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """Whether two dynamic shapes are the same; False (not an error) when their ranks differ."""
    return tf.cond(tf.equal(tf.size(a), tf.size(b)), lambda: tf.reduce_all(tf.equal(a, b)), lambda: False)


def check_logits_final_dim(logits: Any, expected_logits_dimension: Any) -> tf.Tensor:
    """`logits` as float32, checked to be `[D0, ... DN, expected_logits_dimension]` with N >= 0 (rank >= 2)."""
    with tf.name_scope("logits"):
        logits = tf.cast(logits, tf.float32)
        if tf.executing_eagerly():
            return _checked_eager_logits(logits, expected_logits_dimension)
        return _checked_graph_logits(logits, expected_logits_dimension)


def _checked_eager_logits(logits: tf.Tensor, expected: Any) -> tf.Tensor:
    shape = _shape_tuple(logits)
    if len(shape) < 2:
        raise ValueError(f"logits must have rank at least 2.  Received rank {len(shape)}, shape {shape}")
    if isinstance(expected, int) and shape[-1] != expected:
        raise ValueError(f"{_LOGITS_SHAPE_MESSAGE}, got {shape}.")
    return logits


def _checked_graph_logits(logits: tf.Tensor, expected: Any) -> tf.Tensor:
    shape = tf.shape(logits)
    has_rank = tf.compat.v1.debugging.assert_rank_at_least(logits, 2, data=[shape], message=_LOGITS_SHAPE_MESSAGE)
    with tf.control_dependencies([has_rank]):
        if logits.shape.rank is not None and logits.shape[-1] is not None:
            if isinstance(expected, int) and logits.shape[-1] != expected:
                raise ValueError(f"{_LOGITS_SHAPE_MESSAGE}, got {logits.shape}.")
            return logits
        has_dimension = tf.compat.v1.debugging.assert_equal(
            expected, shape[-1], data=[shape], message=_LOGITS_SHAPE_MESSAGE
        )
        with tf.control_dependencies([has_dimension]):
            return tf.identity(logits)


def dense_labels(labels: Any, expected_labels_dimension: Any) -> tf.Tensor:
    """`labels` as a Tensor; None and SparseTensors refused with TF 2.15's messages."""
    if labels is None:
        raise ValueError(LABELS_NONE_MESSAGE)
    labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
    if isinstance(labels, tf.sparse.SparseTensor):
        raise ValueError(_SPARSE_LABELS_MESSAGE.format(expected_labels_dimension))
    return labels


def check_dense_labels_match_logits_and_reshape(
    labels: Any, logits: tf.Tensor, expected_labels_dimension: Any
) -> tf.Tensor:
    """`labels` checked to be `[D0, ... DN, expected_labels_dimension]` for logits `[D0, ... DN, d]`.

    Labels one dimension shorter than the logits get a last dimension of 1
    (`[batch_size]` becomes `[batch_size, 1]`). Labels of unknown rank (e.g.
    from tf.io.parse_example) are checked when the graph runs.
    """
    labels = dense_labels(labels, expected_labels_dimension)
    with tf.name_scope("labels"):
        if (
            labels.shape.rank is not None
            and logits.shape.rank is not None
            and labels.shape.rank == logits.shape.rank - 1
        ):
            labels = tf.expand_dims(labels, -1)
        if tf.executing_eagerly():
            return _checked_eager_labels(labels, logits, expected_labels_dimension)
        return _checked_graph_labels(labels, logits, expected_labels_dimension)


def _checked_eager_labels(labels: tf.Tensor, logits: tf.Tensor, expected: Any) -> tf.Tensor:
    shape = _shape_tuple(labels)
    if len(shape) < 2:
        raise ValueError(f"labels must have rank at least 2.  Received rank {len(shape)}, shape {shape}")
    if shape[-1] != expected:
        raise ValueError(_LABEL_DIMENSION_MESSAGE.format(expected, shape[-1]))
    expected_shape = _shape_tuple(logits)[:-1] + (expected,)
    if shape != expected_shape:
        raise ValueError(
            f"{_LABEL_SHAPE_MESSAGE.format(expected)}, expected_labels_shape: {expected_shape}. labels_shape: {shape}."
        )
    return labels


def _checked_graph_labels(labels: tf.Tensor, logits: tf.Tensor, expected: Any) -> tf.Tensor:
    message = _LABEL_SHAPE_MESSAGE.format(expected)
    has_rank = tf.compat.v1.debugging.assert_rank_at_least(labels, 2, message=message)
    with tf.control_dependencies([has_rank]):
        if labels.shape.rank is not None:
            last = labels.shape[-1]
            if last is not None and last != expected:
                raise ValueError(_LABEL_DIMENSION_MESSAGE.format(expected, last))
        expected_shape = tf.concat([tf.shape(logits)[:-1], [expected]], axis=0)
        shape = tf.shape(labels)
        matches = tf.compat.v1.debugging.assert_equal(
            expected_shape,
            shape,
            message=message,
            data=["expected_labels_shape: ", expected_shape, "labels_shape: ", shape],
        )
        with tf.control_dependencies([matches]):
            return tf.identity(labels)


def check_label_range(labels: tf.Tensor, n_classes: Any, message: str | None = None) -> tf.Tensor:
    """`labels`, checked to lie in `[0, n_classes - 1]`; `message` replaces the default error text."""
    with tf.name_scope("check_label_range"):
        if tf.executing_eagerly():
            if not bool(tf.reduce_all(labels <= n_classes - 1)):
                raise ValueError(message or f"Labels must be <= {n_classes} - 1")
            if not bool(tf.reduce_all(labels >= 0)):
                raise ValueError(message or "Labels must be >= 0")
            return labels
        # with constant labels these raise InvalidArgumentError already here, as TF 2.15's did
        below = tf.compat.v1.debugging.assert_less_equal(
            labels,
            tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype),
            message=message or "Labels must be <= n_classes - 1",
        )
        non_negative = tf.compat.v1.debugging.assert_non_negative(labels, message=message or "Labels must be >= 0")
        with tf.control_dependencies([below, non_negative]):
            return tf.identity(labels)


# --- weights -----------------------------------------------------------------------------------------------------


def _numeric_column_types() -> tuple:
    """The classes `tf.feature_column.numeric_column` returns (v2 and v1 style)."""
    column = tf.feature_column.numeric_column("weight")
    v1_column = getattr(tf.compat.v1.feature_column, "numeric_column", tf.feature_column.numeric_column)("weight")
    return tuple({type(column), type(v1_column)})


def _weight_feature(features: Mapping[str, Any] | None, weight_column: Any) -> tf.Tensor:
    """The weight column's values from `features`: normalized, float32, a rank-1 feature as `[batch_size, 1]`."""
    if isinstance(weight_column, str):
        key, normalizer = weight_column, None
    elif isinstance(weight_column, _numeric_column_types()):
        key, normalizer = weight_column.key, weight_column.normalizer_fn
    else:
        raise TypeError(f"Weight column must be either a string or NumericColumn. Given type: {type(weight_column)}.")
    if not features or key not in features:
        raise ValueError(
            f"Feature {key} is not in features dictionary: the weight column '{key}' must be a feature "
            "the input_fn returns."
        )
    weights = tf.compat.v1.convert_to_tensor_or_sparse_tensor(features[key])
    if isinstance(weights, tf.sparse.SparseTensor):
        raise ValueError(f"The weight column '{key}' must be dense, given a SparseTensor. Densify it in the input_fn.")
    if weights.shape.rank == 0:
        raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {weights}")
    if weights.shape.rank == 1:
        weights = tf.expand_dims(weights, -1)
    if normalizer is not None:
        weights = normalizer(weights)
    if not (weights.dtype.is_floating or weights.dtype.is_integer):
        raise ValueError(f"Weight column should be castable to float. Given dtype: {weights.dtype}")
    return tf.cast(weights, tf.float32, name="weights")


def get_weights_and_check_match_logits(
    features: Mapping[str, Any] | None, weight_column: Any, logits: tf.Tensor, allow_per_logit_weights: bool = False
) -> Any:
    """The example weights, shaped to broadcast against logits `[D0, ... DN, d]`; 1. without a weight column.

    Weights may be `[D0, ... DN]` (expanded to `[D0, ... DN, 1]`), `[D0, ... DN, 1]`,
    or, with `allow_per_logit_weights` (regression), `[D0, ... DN, d]`: one weight per label dimension.
    """
    if weight_column is None:
        return 1.0
    message = _PER_LOGIT_WEIGHTS_SHAPE_MESSAGE if allow_per_logit_weights else _WEIGHTS_SHAPE_MESSAGE
    with tf.name_scope("weights"):
        weights = _weight_feature(features, weight_column)
        if tf.executing_eagerly():
            return _checked_eager_weights(weights, logits, allow_per_logit_weights, message)
        return _checked_graph_weights(weights, logits, allow_per_logit_weights, message)


def _checked_eager_weights(weights: tf.Tensor, logits: tf.Tensor, per_logit: bool, message: str) -> tf.Tensor:
    weights_shape, logits_shape = _shape_tuple(weights), _shape_tuple(logits)
    mismatch = ValueError(f"{message}, logits_shape: {logits_shape}. weights_shape: {weights_shape}.")
    if len(weights_shape) == len(logits_shape) - 1:
        if weights_shape != logits_shape[:-1]:
            raise mismatch
        return tf.expand_dims(weights, -1)
    allowed = [logits_shape[:-1] + (1,)] + ([logits_shape] if per_logit else [])
    if weights_shape not in allowed:
        raise mismatch
    return weights


def _checked_graph_weights(weights: tf.Tensor, logits: tf.Tensor, per_logit: bool, message: str) -> tf.Tensor:
    weights_shape, logits_shape = tf.shape(weights), tf.shape(logits)
    data = ["logits_shape: ", logits_shape, "weights_shape: ", weights_shape]
    if weights.shape.rank is not None and logits.shape.rank is not None and weights.shape.rank == logits.shape.rank - 1:
        matches = tf.compat.v1.debugging.assert_equal(logits_shape[:-1], weights_shape, message=message, data=data)
        with tf.control_dependencies([matches]):
            return tf.expand_dims(weights, -1)
    one_per_example = tf.concat([logits_shape[:-1], [1]], axis=0)
    condition = _shapes_equal(one_per_example, weights_shape)
    if per_logit:
        condition = tf.logical_or(condition, _shapes_equal(logits_shape, weights_shape))
    matches = tf.debugging.Assert(condition, data=[message] + data)
    with tf.control_dependencies([matches]):
        return tf.identity(weights)


# --- losses ------------------------------------------------------------------------------------------------------


def call_loss_fn(
    loss_fn: Callable,
    labels: tf.Tensor,
    logits: tf.Tensor,
    features: Mapping[str, Any] | None,
    expected_loss_dim: int = 1,
) -> tf.Tensor:
    """A custom `loss_fn`'s unreduced loss, checked to be `[D0, ... DN, expected_loss_dim]`.

    `features` is passed when loss_fn takes it (e.g. to read per-example data).
    """
    kwargs = {"features": features} if "features" in tf_internals.fn_args(loss_fn) else {}
    with tf.name_scope("call_loss_fn"):
        loss = loss_fn(labels=labels, logits=logits, **kwargs)
        message = f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. "
        if tf.executing_eagerly():
            loss_shape, logits_shape = _shape_tuple(loss), _shape_tuple(logits)
            if loss_shape != logits_shape[:-1] + (expected_loss_dim,):
                raise ValueError(f"{message}logits_shape: {logits_shape}. loss_shape: {loss_shape}.")
            return loss
        logits_shape = tf.shape(logits, name="logits_shape")
        expected_shape = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0, name="expected_loss_shape")
        loss_shape = tf.shape(loss, name="loss_shape")
        matches = tf.debugging.Assert(
            _shapes_equal(loss_shape, expected_shape),
            data=[message, "logits_shape: ", logits_shape, "loss_shape: ", loss_shape],
            name="check_loss_shape",
        )
        with tf.control_dependencies([matches]):
            return tf.identity(loss)


def add_regularization(loss: tf.Tensor, regularization_losses: Sequence[Any] | None) -> tf.Tensor:
    """`loss` plus the sum of `regularization_losses` (scalars), when there are any."""
    if regularization_losses is None:
        return loss
    return loss + tf.math.add_n(regularization_losses)


def reduced_training_loss(
    unweighted_loss: tf.Tensor, weights: Any, reduction: str, regularization_losses: Sequence[Any] | None
) -> tf.Tensor:
    """The scalar training loss: Keras 2's weighted reduction of the unreduced loss, regularization added."""
    training_loss = tf_keras.__internal__.losses.compute_weighted_loss(
        unweighted_loss, sample_weight=weights, reduction=reduction
    )
    return add_regularization(training_loss, regularization_losses)


# --- metrics -----------------------------------------------------------------------------------------------------


def update_metric_with_broadcast_weights(eval_metric: Any, values: tf.Tensor, weights: Any) -> None:
    """Updates a Mean metric with `values`, each weighted by its example's weight."""
    values = tf.cast(values, tf.float32)
    if weights is not None:
        weights = tf.__internal__.ops.broadcast_weights(weights, values)
    eval_metric.update_state(values=values, sample_weight=weights)


def update_regularization_metric(eval_metrics: dict, key: str, regularization_losses: Sequence[Any] | None) -> None:
    if regularization_losses is not None:
        eval_metrics[key].update_state(values=tf.math.add_n(regularization_losses))


# --- classes -----------------------------------------------------------------------------------------------------


def label_ids_from_vocabulary(labels: tf.Tensor, label_vocabulary: Sequence[str]) -> tf.Tensor:
    """int64 ids of string labels in `label_vocabulary`; -1 for a string not in it (refused by the range check).

    The table is made where it is used (in the graph of the current mode, as
    Estimator builds one per mode); its initializer runs with the tables'.
    """
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(list(label_vocabulary), tf.string), tf.range(len(label_vocabulary), dtype=tf.int64)
        ),
        default_value=-1,
        name="class_id_lookup",
    )
    return table.lookup(labels)


def class_names_from_ids(class_ids: tf.Tensor, label_vocabulary: Sequence[str]) -> tf.Tensor:
    """The vocabulary's strings for int64 class ids ('UNK' for an id outside it)."""
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.range(len(label_vocabulary), dtype=tf.int64), tf.constant(list(label_vocabulary), tf.string)
        ),
        default_value="UNK",
        name="class_string_lookup",
    )
    return table.lookup(class_ids)


def all_class_ids(logits: tf.Tensor, n_classes: Any) -> tf.Tensor:
    """`[batch_size, n_classes]` int32: 0 ... n_classes - 1 on every row."""
    batch_size = tf.shape(logits)[0]
    return tf.tile(tf.expand_dims(tf.range(n_classes), 0), [batch_size, 1])


def all_classes(logits: tf.Tensor, n_classes: Any, label_vocabulary: Sequence[str] | None = None) -> tf.Tensor:
    """`[batch_size, n_classes]` strings: the class names (the vocabulary, else the ids) on every row."""
    batch_size = tf.shape(logits)[0]
    if label_vocabulary:
        names = tf.convert_to_tensor([list(label_vocabulary)])
    else:
        names = tf.strings.as_string(tf.expand_dims(tf.range(n_classes), 0))
    return tf.tile(names, [batch_size, 1])


def classification_output(
    scores: tf.Tensor, n_classes: Any, label_vocabulary: Sequence[str] | None = None
) -> ClassificationOutput:
    """The `classification` signature: the scores and, since it needs strings, every class name."""
    return ClassificationOutput(scores=scores, classes=all_classes(scores, n_classes, label_vocabulary))


def classifier_export_outputs(
    predictions: Mapping[str, Any], n_classes: Any, label_vocabulary: Sequence[str] | None
) -> dict:
    """A classifier head's signatures: serving_default and classification (each class's probability and name)
    and predict (all predictions)."""
    classifier = classification_output(predictions[PredictionKeys.PROBABILITIES], n_classes, label_vocabulary)
    return {
        DEFAULT_SERVING_KEY: classifier,
        CLASSIFY_SERVING_KEY: classifier,
        PREDICT_SERVING_KEY: PredictOutput(dict(predictions)),
    }


# --- training ----------------------------------------------------------------------------------------------------


def validate_update_ops(update_ops: Any = None) -> None:
    if update_ops is not None and not isinstance(update_ops, (list, tuple)):
        raise ValueError(_NOT_A_LIST_MESSAGE.format("update_ops", type(update_ops)))


def validate_trainable_variables(trainable_variables: Any = None) -> None:
    if trainable_variables is None:
        raise ValueError(f"trainable_variables cannot be None. Given {trainable_variables}")
    if not isinstance(trainable_variables, (list, tuple)):
        raise ValueError(_NOT_A_LIST_MESSAGE.format("trainable_variables", type(trainable_variables)))


_OPTIMIZER_TYPES = (tf_keras.optimizers.Optimizer, tf_keras.optimizers.legacy.Optimizer, keras.optimizers.Optimizer)


def validate_v2_optimizer(optimizer: Any) -> None:
    """A Keras optimizer: Keras 2's (tf_keras, legacy or not) or Keras 3's (tf.keras.optimizers on TF >= 2.16)."""
    if not isinstance(optimizer, _OPTIMIZER_TYPES):
        raise ValueError(
            "The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received optimizer of "
            f"type {type(optimizer)}"
        )


def _optimizer_train_op(optimizer: Any, loss: tf.Tensor, trainable_variables: Sequence[tf.Variable]) -> Any:
    """The op that applies one step of `optimizer` to `loss`: `get_updates(loss, variables)[0]`, as TF 2.15 made it.

    A Keras 2 OptimizerV2 (tf_keras.optimizers.legacy) builds its updates in
    the graph. Keras 3's optimizers (what `tf.keras.optimizers.*` are on
    TF >= 2.16) and Keras 2's newer ones cannot (TF 2.15 refused the latter):
    they train as the canned estimators train them, as the OptimizerV2 of the
    same class and settings (canned/optimizers.py), fresh, counting with the global step.
    """
    if not callable(getattr(optimizer, "get_updates", None)):
        optimizer = optimizers.as_graph_optimizer(optimizer)
        # a Keras 3 optimizer's `iterations` cannot be set to the global step, as TF 2.15's programs set an
        # OptimizerV2's: its converted copy counts with the global step, so that training advances it
        optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return optimizer.get_updates(loss, list(trainable_variables))[0]


def train_op_for(
    loss: tf.Tensor,
    optimizer: Any = None,
    trainable_variables: Sequence[tf.Variable] | None = None,
    train_op_fn: Callable[[tf.Tensor], Any] | None = None,
    update_ops: Sequence[Any] | None = None,
    loss_reduction: str = Reduction.SUM_OVER_BATCH_SIZE,
) -> Any:
    """The TRAIN spec's train op: from `optimizer` or `train_op_fn` (exactly one), `update_ops` grouped in.

    Built under the root name scope `training`, as Keras 2 named its optimizer
    variables (`training/<Optimizer>/...`), whatever scope the head is in.
    """
    validate_update_ops(update_ops)
    with tf.compat.v1.name_scope(""), tf.compat.v1.name_scope("training"):
        if optimizer is not None:
            if train_op_fn is not None:
                raise ValueError("train_op_fn and optimizer cannot both be set.")
            validate_v2_optimizer(optimizer)
            validate_trainable_variables(trainable_variables)
            loss = scale_loss_for_replicas(loss, loss_reduction)
            train_op = _optimizer_train_op(optimizer, loss, trainable_variables or [])
        elif train_op_fn is not None:
            train_op = train_op_fn(loss)
        else:
            raise ValueError("train_op_fn and optimizer cannot both be None.")
        if update_ops is not None:
            train_op = tf.group(train_op, *update_ops)
        return train_op


def scale_loss_for_replicas(loss: tf.Tensor, loss_reduction: str | None) -> tf.Tensor:
    """A replica's mean loss scaled by 1/replicas under a strategy of several (TF 2.15's canned estimators did):
    the replicas' gradients are summed, so the step is the global batch's mean, as on one device."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if loss_reduction == Reduction.SUM_OVER_BATCH_SIZE and replicas > 1:
        return loss * (1.0 / replicas)
    return loss


def add_loss_summaries(
    loss: tf.Tensor,
    regularization_losses: Sequence[Any] | None = None,
    summary_key_fn: Callable[[str], str] | None = None,
) -> None:
    """Scalar summaries of the training loss (`loss[/name]`) and regularization loss, tagged at the root scope."""
    key = summary_key_fn or (lambda k: k)
    with tf.compat.v1.name_scope(""):
        tf.compat.v1.summary.scalar(key(MetricKeys.LOSS), loss)
        if regularization_losses is not None:
            tf.compat.v1.summary.scalar(key(MetricKeys.LOSS_REGULARIZATION), tf.math.add_n(regularization_losses))


def create_estimator_spec_train_op(
    head_name: str | None,
    optimizer: Any = None,
    trainable_variables: Sequence[tf.Variable] | None = None,
    train_op_fn: Callable[[tf.Tensor], Any] | None = None,
    update_ops: Sequence[Any] | None = None,
    regularized_training_loss: tf.Tensor | None = None,
    loss_reduction: str = Reduction.SUM_OVER_BATCH_SIZE,
) -> Any:
    """`train_op_for` under TF 2.15's name and argument order, which custom heads (and libraries' heads) call."""
    del head_name  # TF 2.15 took it and did not use it
    return train_op_for(
        regularized_training_loss, optimizer, trainable_variables, train_op_fn, update_ops, loss_reduction
    )


def create_estimator_spec_summary(
    regularized_training_loss: tf.Tensor,
    regularization_losses: Sequence[Any] | None = None,
    summary_key_fn: Callable[[str], str] | None = None,
) -> None:
    """`add_loss_summaries` under TF 2.15's name, which custom heads call."""
    add_loss_summaries(regularized_training_loss, regularization_losses, summary_key_fn)


def create_eval_metrics_tuple(fn: Callable[..., dict], kwargs: dict) -> tuple[Callable[..., dict], dict]:
    """`(metric_fn, tensors)` for a TPUEstimatorSpec's `eval_metrics` from a `fn` that also takes non-tensors.

    A TPU metric function takes tensors only: the non-tensor arguments are bound here, the tensors passed later.

    Args:
        fn: returns `{name: (value, update_op)}` from the keyword arguments `kwargs`.
        kwargs: the arguments, tensors and others.
    """
    tensors = {key: value for key, value in kwargs.items() if tf.is_tensor(value)}
    others = {key: value for key, value in kwargs.items() if key not in tensors}

    def metric_fn(**given: Any) -> dict:
        return fn(**others, **given)

    return metric_fn, tensors


__all__ = [
    "CLASSIFY_SERVING_KEY",
    "DEFAULT_SERVING_KEY",
    "Head",
    "PREDICT_SERVING_KEY",
    "REGRESS_SERVING_KEY",
    "SingleHead",
    "add_loss_summaries",
    "add_regularization",
    "all_class_ids",
    "all_classes",
    "call_loss_fn",
    "check_dense_labels_match_logits_and_reshape",
    "check_label_range",
    "check_logits_final_dim",
    "check_prediction_keys",
    "class_names_from_ids",
    "classification_output",
    "create_estimator_spec_summary",
    "create_estimator_spec_train_op",
    "create_eval_metrics_tuple",
    "dense_labels",
    "get_weights_and_check_match_logits",
    "label_ids_from_vocabulary",
    "reduced_training_loss",
    "requested_keys",
    "suffixed",
    "train_op_for",
    "update_metric_with_broadcast_weights",
    "update_regularization_metric",
    "validate_label_vocabulary",
    "validate_loss_fn_args",
    "validate_loss_reduction",
    "validate_n_classes",
    "validate_trainable_variables",
    "validate_update_ops",
    "validate_v2_optimizer",
]
