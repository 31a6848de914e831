"""tf.compat.v1.estimator.experimental.KMeans: k-means clustering on the graph engine, as TF 2.15's.

The graph is TensorFlow's own (`clustering_ops.KMeans`, which TF 2.21 still
ships, through compat.core.tf_internals): the cluster centers are the variable
`clusters` (`KMeans.CLUSTER_CENTERS_VAR_NAME`), chosen from the first batches
by a hook before training (randomly, by k-means++, or given as a tensor, an
array or a function), then moved by each training step: one full-batch
Lloyd iteration, or with `use_mini_batch` one mini-batch whose contribution is
applied every `mini_batch_steps_per_iteration` steps.

  - predictions: `all_distances` (`[batch_size, num_clusters]`, the squared
    Euclidean or the cosine distance to each center) and `cluster_index`;
  - loss and the `score` metric: the sum over the batch of each point's
    distance to its nearest center (summary `loss/raw`);
  - `relative_tolerance` stops training once the loss changes by less than
    that, relative to 1 + the previous loss;
  - the export serves `cluster_index` (default), `cluster_index` and
    `all_distances` signatures.

Inputs are a Tensor `[batch_size, dimensions]`, or a dict of features: put
through `feature_columns` (tf.compat.v1.feature_column.input_layer), else
every feature concatenated in the order of its key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from compat.core import tf_internals
from compat.estimator.estimator import Estimator
from compat.estimator.export.export_output import PredictOutput
from compat.estimator.model_fn import EstimatorSpec


class _LossRelativeChangeHook(tf.compat.v1.train.SessionRunHook):
    """Stops training once the loss changes by less than `tolerance` relative to 1 + the previous loss."""

    def __init__(self, loss: tf.Tensor, tolerance: float):
        self._loss, self._tolerance = loss, tolerance
        self._previous: float | None = None

    def before_run(self, run_context: Any) -> tf.compat.v1.train.SessionRunArgs:
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        loss = run_values.results
        # a previous loss of exactly 0 counts as none, as in TF 2.15
        if self._previous and abs(loss - self._previous) / (1 + abs(self._previous)) < self._tolerance:
            run_context.request_stop()
        self._previous = loss


class _InitializeClustersHook(tf.compat.v1.train.SessionRunHook):
    """Chooses the initial centers once the session exists: the chief runs the init op (each run may choose some
    of them, from the next batch) until every center is chosen; other workers wait for it."""

    def __init__(self, init_op: tf.Operation, is_initialized: tf.Variable, is_chief: bool):
        self._init_op, self._is_initialized, self._is_chief = init_op, is_initialized, is_chief

    def after_create_session(self, session: Any, coord: Any) -> None:
        while True:
            try:
                if session.run(self._is_initialized):
                    return
                if self._is_chief:
                    session.run(self._init_op)
                else:
                    time.sleep(1)
            except RuntimeError as error:  # a session not ready yet on a worker
                tf.compat.v1.logging.info(error)


def _points(features: Any, feature_columns: Sequence | None) -> tf.Tensor:
    """The input points `[batch_size, dimensions]`: a Tensor as it is; a dict through `feature_columns`, else its
    features concatenated in key order."""
    if not isinstance(features, dict):
        return features
    if feature_columns:
        return tf.compat.v1.feature_column.input_layer(features, feature_columns)
    keys = sorted(features)
    with tf.compat.v1.colocate_with(features[keys[0]]):
        return tf.concat([features[key] for key in keys], axis=1)


class KMeans(Estimator):
    """tf.compat.v1.estimator.experimental.KMeans (TF 2.15's KMeansClustering).

    Args:
      num_clusters: the number of clusters (ignored when `initial_clusters` is
        a tensor or an array).
      model_dir, config: as Estimator's.
      initial_clusters: RANDOM_INIT (points of the first batches),
        KMEANS_PLUS_PLUS_INIT (k-means++ on the first batch, which must hold
        at least `num_clusters` points), a tensor or array of the centers, or
        `f(inputs, k)` returning up to k centers from a batch (called on
        batches until every center is chosen).
      distance_metric: SQUARED_EUCLIDEAN_DISTANCE or COSINE_DISTANCE.
      seed: the seed of the initial choice.
      use_mini_batch: mini-batch k-means (else each step must see the whole
        input, one full-batch iteration).
      mini_batch_steps_per_iteration: steps whose contributions are gathered
        before the centers move (with use_mini_batch).
      kmeans_plus_plus_num_retries: extra points drawn per k-means++ choice,
        the best kept (negative: O(log k)).
      relative_tolerance: stop once the loss changes by less than this.
      feature_columns: the columns making the points from a dict of
        features (None: every feature, concatenated in key order).
    """

    SQUARED_EUCLIDEAN_DISTANCE = "squared_euclidean"
    COSINE_DISTANCE = "cosine"
    RANDOM_INIT = "random"
    KMEANS_PLUS_PLUS_INIT = "kmeans_plus_plus"
    SCORE = "score"
    CLUSTER_INDEX = "cluster_index"
    ALL_DISTANCES = "all_distances"
    CLUSTER_CENTERS_VAR_NAME = "clusters"

    def __init__(
        self,
        num_clusters: Any,
        model_dir: str | None = None,
        initial_clusters: Any = RANDOM_INIT,
        distance_metric: str = SQUARED_EUCLIDEAN_DISTANCE,
        seed: int | None = None,
        use_mini_batch: bool = True,
        mini_batch_steps_per_iteration: int = 1,
        kmeans_plus_plus_num_retries: int = 2,
        relative_tolerance: float | None = None,
        config: Any = None,
        feature_columns: Sequence | None = None,
    ):
        if isinstance(initial_clusters, str) and initial_clusters not in (self.RANDOM_INIT, self.KMEANS_PLUS_PLUS_INIT):
            raise ValueError(
                f"Unsupported initialization algorithm '{initial_clusters}': give KMeans.RANDOM_INIT, "
                "KMeans.KMEANS_PLUS_PLUS_INIT, the centers or a function choosing them"
            )
        if distance_metric not in (self.SQUARED_EUCLIDEAN_DISTANCE, self.COSINE_DISTANCE):
            raise ValueError(
                f"Unsupported distance metric '{distance_metric}': give "
                "KMeans.SQUARED_EUCLIDEAN_DISTANCE or KMeans.COSINE_DISTANCE"
            )
        self._distance_metric = distance_metric
        graph_arguments = dict(
            num_clusters=num_clusters,
            initial_clusters=initial_clusters,
            distance_metric=distance_metric,
            use_mini_batch=use_mini_batch,
            mini_batch_steps_per_iteration=mini_batch_steps_per_iteration,
            random_seed=seed,
            kmeans_plus_plus_num_retries=kmeans_plus_plus_num_retries,
        )
        super().__init__(
            model_fn=_model_fn(graph_arguments, relative_tolerance, feature_columns), model_dir=model_dir, config=config
        )

    def _predict_one_key(self, input_fn: Callable, key: str) -> Iterator[np.ndarray]:
        for prediction in self.predict(input_fn=input_fn, predict_keys=[key]):
            yield prediction[key]

    def predict_cluster_index(self, input_fn: Callable) -> Iterator[np.ndarray]:
        """The index of the nearest center, for each input point."""
        yield from self._predict_one_key(input_fn, self.CLUSTER_INDEX)

    def score(self, input_fn: Callable) -> float:
        """The sum over the first batch of each point's distance to its nearest center (the squared distance for
        SQUARED_EUCLIDEAN_DISTANCE; positive, where scikit-learn's score is its negative)."""
        return self.evaluate(input_fn=input_fn, steps=1)[self.SCORE]

    def transform(self, input_fn: Callable) -> Iterator[np.ndarray]:
        """Each point's distances to every center: Euclidean (the square root of the model's squared distances, as
        scikit-learn's) or cosine."""
        for distances in self._predict_one_key(input_fn, self.ALL_DISTANCES):
            yield np.sqrt(distances) if self._distance_metric == self.SQUARED_EUCLIDEAN_DISTANCE else distances

    def cluster_centers(self) -> np.ndarray:
        """`[num_clusters, dimensions]`: the centers of the latest checkpoint."""
        return self.get_variable_value(self.CLUSTER_CENTERS_VAR_NAME)


def _model_fn(graph_arguments: dict, relative_tolerance: float | None, feature_columns: Sequence | None) -> Callable:
    def model_fn(features: Any, mode: str, config: Any) -> EstimatorSpec:
        """The k-means graph's predictions, loss and train op (see the module docstring); input_fn gives no
        labels (features alone, or (features, None))."""
        (all_distances, cluster_index, distances, is_initialized, init_op, training_op) = (
            tf_internals.kmeans_training_graph(inputs=_points(features, feature_columns), **graph_arguments)
        )
        loss = tf.reduce_sum(distances)
        tf.compat.v1.summary.scalar("loss/raw", loss)
        step = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
        with tf.control_dependencies([training_op, step]):
            train_op = tf.identity(loss)
        hooks = [_InitializeClustersHook(init_op, is_initialized, config.is_chief)]
        if relative_tolerance is not None:
            hooks.append(_LossRelativeChangeHook(loss, relative_tolerance))
        return EstimatorSpec(
            mode=mode,
            predictions={KMeans.ALL_DISTANCES: all_distances[0], KMeans.CLUSTER_INDEX: cluster_index[0]},
            loss=loss,
            train_op=train_op,
            eval_metric_ops={KMeans.SCORE: tf.compat.v1.metrics.mean(loss)},
            training_hooks=hooks,
            export_outputs={
                KMeans.ALL_DISTANCES: PredictOutput(all_distances[0]),
                KMeans.CLUSTER_INDEX: PredictOutput(cluster_index[0]),
                tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(cluster_index[0]),
            },
        )

    return model_fn


KMeansClustering = KMeans  # TF 2.15's class name

__all__ = ["KMeans", "KMeansClustering"]
