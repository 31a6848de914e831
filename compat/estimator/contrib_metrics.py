"""TF 1.x's `tf.contrib.metrics` streaming metrics that estimator-era models used in their `eval_metric_ops` and
TensorFlow 2 lacks, with TF 1.x's results: `(value, update_op)` pairs over local variables, as `tf.compat.v1.metrics`.

`check --fix` rewrites `from tensorflow.contrib import metrics as contrib_metrics` to import this module when every
name the file takes from it is here (`__all__`), and `tf.contrib.metrics.<name>` to `compat.estimator.contrib_metrics
.<name>`: google-research's BERT and ALBERT compute their STS-B metrics with `streaming_pearson_correlation` and
`streaming_concat`. The names that were TF 1.x's own metrics under another order of arguments (`streaming_accuracy(
predictions, labels)`, `tf.compat.v1.metrics.accuracy(labels, predictions)`) call those. Importing this module loads
nothing; TensorFlow loads with the first call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "streaming_accuracy",
    "streaming_auc",
    "streaming_concat",
    "streaming_covariance",
    "streaming_mean",
    "streaming_mean_absolute_error",
    "streaming_mean_squared_error",
    "streaming_mean_tensor",
    "streaming_pearson_correlation",
    "streaming_precision",
    "streaming_recall",
    "streaming_root_mean_squared_error",
]

Collections = Sequence[str] | None


def _local_variable(name: str, shape: Any, dtype: Any, grows_along: int | None = None) -> Any:
    """A metric's state: zeros, in the graph's local and metric variables (not saved, reset by local init); of
    any size along axis `grows_along` where given."""
    import tensorflow as tf

    v1 = tf.compat.v1
    declared = tf.TensorShape([None if axis == grows_along else size for axis, size in enumerate(shape)])
    return v1.Variable(
        tf.zeros(shape, dtype),
        trainable=False,
        collections=[v1.GraphKeys.LOCAL_VARIABLES, v1.GraphKeys.METRIC_VARIABLES],
        name=name,
        shape=declared,
    )


def _collected(value: Any, update_op: Any, metrics_collections: Collections, updates_collections: Collections) -> tuple:
    import tensorflow as tf

    for name in metrics_collections or ():
        tf.compat.v1.add_to_collection(name, value)
    for name in updates_collections or ():
        tf.compat.v1.add_to_collection(name, update_op)
    return value, update_op


def streaming_concat(
    values: Any,
    axis: int = 0,
    max_size: int | None = None,
    use_locking: bool = True,
    metrics_collections: Collections = None,
    updates_collections: Collections = None,
    name: str | None = None,
) -> tuple:
    """TF 1.x's `tf.contrib.metrics.streaming_concat`: every batch of `values` seen, concatenated along `axis`
    (at most `max_size` entries along it; later ones are dropped).

    Returns:
      (the concatenation so far, an op that adds this batch and returns the concatenation).
    """
    del use_locking  # one assignment, which TensorFlow orders itself
    import tensorflow as tf

    with tf.compat.v1.variable_scope(name, "streaming_concat", (values,)):
        values = tf.convert_to_tensor(values)
        rank = values.shape.rank
        if rank is None or rank == 0:
            raise ValueError("`values` must have a known rank of at least 1 (got a scalar or an unknown rank)")
        axis = axis % rank
        empty = [0 if index == axis else (size if size is not None else 0) for index, size in enumerate(values.shape)]
        array = _local_variable("array", empty, values.dtype, grows_along=axis)
        joined = tf.concat([array, values], axis)
        if max_size is not None:
            joined = tf.gather(joined, tf.range(tf.minimum(tf.shape(joined)[axis], max_size)), axis=axis)
        update = array.assign(joined)
        shape = values.shape.as_list()
        shape[axis] = None
        value = tf.ensure_shape(tf.identity(array), shape)
        update_op = tf.ensure_shape(tf.identity(update), shape)
        return _collected(value, update_op, metrics_collections, updates_collections)


def streaming_covariance(
    predictions: Any,
    labels: Any,
    weights: Any = None,
    metrics_collections: Collections = None,
    updates_collections: Collections = None,
    name: str | None = None,
) -> tuple:
    """TF 1.x's `tf.contrib.metrics.streaming_covariance`: the unbiased (weighted) covariance of `predictions`
    and `labels` over every batch seen; NaN until more than one unit of weight was seen.

    Each batch's count, means and co-moment are merged into the running ones (Chan et al.'s pairwise update),
    so the result does not depend on how the examples were split into batches.

    Returns:
      (the covariance so far, an op that adds this batch and returns the covariance).
    """
    import tensorflow as tf

    with tf.compat.v1.variable_scope(name, "covariance", (predictions, labels, weights)):
        predictions = tf.reshape(tf.cast(predictions, tf.float32), [-1])
        labels = tf.reshape(tf.cast(labels, tf.float32), [-1])
        if weights is None:
            weights = tf.ones_like(labels)
        else:
            weights = tf.reshape(tf.broadcast_to(tf.cast(weights, tf.float32), tf.shape(labels)), [-1])
        count = _local_variable("count", [], tf.float32)
        mean_prediction = _local_variable("mean_prediction", [], tf.float32)
        mean_label = _local_variable("mean_label", [], tf.float32)
        comoment = _local_variable("comoment", [], tf.float32)

        updates = _merged_moments((count, mean_prediction, mean_label, comoment), predictions, labels, weights)

        def covariance(of_count: Any, of_comoment: Any) -> Any:
            return tf.where(of_count <= 1.0, float("nan"), of_comoment / (of_count - 1.0))

        value = covariance(count.read_value(), comoment.read_value())
        with tf.control_dependencies(updates):
            update_op = covariance(count.read_value(), comoment.read_value())
        return _collected(value, update_op, metrics_collections, updates_collections)


def _merged_moments(state: tuple, predictions: Any, labels: Any, weights: Any) -> list:
    """The assignments that merge one batch's weight, means and co-moment into the running `state` (count, mean
    prediction, mean label, co-moment); each computed from the values before the batch, and run after those reads."""
    import tensorflow as tf

    before = [variable.read_value() for variable in state]
    count, mean_prediction, mean_label, comoment = before
    batch_count = tf.reduce_sum(weights)
    batch_mean_prediction = tf.math.divide_no_nan(tf.reduce_sum(weights * predictions), batch_count)
    batch_mean_label = tf.math.divide_no_nan(tf.reduce_sum(weights * labels), batch_count)
    batch_comoment = tf.reduce_sum(weights * (predictions - batch_mean_prediction) * (labels - batch_mean_label))
    total = count + batch_count
    share = tf.math.divide_no_nan(batch_count, total)  # of the merged weight, this batch's
    merged = (
        total,
        mean_prediction + (batch_mean_prediction - mean_prediction) * share,
        mean_label + (batch_mean_label - mean_label) * share,
        comoment
        + batch_comoment
        + (mean_prediction - batch_mean_prediction) * (mean_label - batch_mean_label) * count * share,
    )
    with tf.control_dependencies(before):
        return [tf.compat.v1.assign(variable, value) for variable, value in zip(state, merged)]


def streaming_pearson_correlation(
    predictions: Any,
    labels: Any,
    weights: Any = None,
    metrics_collections: Collections = None,
    updates_collections: Collections = None,
    name: str | None = None,
) -> tuple:
    """TF 1.x's `tf.contrib.metrics.streaming_pearson_correlation`: the (weighted) Pearson correlation of
    `predictions` and `labels` over every batch seen, from three `streaming_covariance`s.

    Returns:
      (the correlation so far, an op that adds this batch and returns the correlation).
    """
    import tensorflow as tf

    with tf.compat.v1.variable_scope(name, "pearson_r", (predictions, labels, weights)):
        covariance, update_covariance = streaming_covariance(predictions, labels, weights, name="covariance")
        variance_p, update_variance_p = streaming_covariance(
            predictions, predictions, weights, name="variance_predictions"
        )
        variance_l, update_variance_l = streaming_covariance(labels, labels, weights, name="variance_labels")
        value = tf.truediv(covariance, tf.sqrt(variance_p) * tf.sqrt(variance_l), name="pearson_r")
        update_op = tf.truediv(
            update_covariance, tf.sqrt(update_variance_p) * tf.sqrt(update_variance_l), name="update_op"
        )
        return _collected(value, update_op, metrics_collections, updates_collections)


def _labels_first(metric: str) -> Any:
    """`tf.contrib.metrics.streaming_<x>(predictions, labels, ...)`: tf.compat.v1.metrics' `<x>(labels, predictions,
    ...)` with TF 1.x contrib's order of the first two arguments."""

    def streaming(predictions: Any, labels: Any, *args: Any, **kwargs: Any) -> tuple:
        import tensorflow as tf

        return getattr(tf.compat.v1.metrics, metric)(labels, predictions, *args, **kwargs)

    streaming.__name__ = streaming.__qualname__ = f"streaming_{metric}"
    streaming.__doc__ = (
        f"TF 1.x's `tf.contrib.metrics.streaming_{metric}(predictions, labels, ...)`: "
        f"`tf.compat.v1.metrics.{metric}(labels, predictions, ...)`."
    )
    return streaming


def _same_order(metric: str) -> Any:
    """`tf.contrib.metrics.streaming_<x>(values, ...)`: tf.compat.v1.metrics' `<x>`, arguments alike."""

    def streaming(*args: Any, **kwargs: Any) -> tuple:
        import tensorflow as tf

        return getattr(tf.compat.v1.metrics, metric)(*args, **kwargs)

    streaming.__name__ = streaming.__qualname__ = f"streaming_{metric}"
    streaming.__doc__ = f"TF 1.x's `tf.contrib.metrics.streaming_{metric}`: `tf.compat.v1.metrics.{metric}`."
    return streaming


streaming_accuracy = _labels_first("accuracy")
streaming_auc = _labels_first("auc")
streaming_precision = _labels_first("precision")
streaming_recall = _labels_first("recall")
streaming_mean_absolute_error = _labels_first("mean_absolute_error")
streaming_mean_squared_error = _labels_first("mean_squared_error")
streaming_root_mean_squared_error = _labels_first("root_mean_squared_error")
streaming_mean = _same_order("mean")
streaming_mean_tensor = _same_order("mean_tensor")
