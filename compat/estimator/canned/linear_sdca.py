"""tf.estimator.experimental.LinearSDCA: the linear estimators trained by stochastic dual coordinate ascent, as TF 2.15.

`LinearClassifier(..., optimizer=LinearSDCA(example_id_column='id', ...))`
(or LinearRegressor, v1 or TF2) trains the linear model with TensorFlow's own
SDCA kernels (`SdcaOptimizerV2`, `SdcaFprint`), which TF 2.21 still ships:
each step solves the dual problem for the batch's examples and moves the
weights. It keeps TF 2.15's state, under TF 2.15's names, so that TF 2.15's
model folders restore and train on:

  - per weight variable an unshrunk copy `<variable op name>_unshrunk` (made
    in the model_fn's name scope), which the kernel updates; after each step
    the model's weights are set from it, then shrunk by the L1 term;
  - per example (keyed by the fingerprint of its id) its dual variable,
    primal loss, dual loss and weight, in dense hash tables
    `ShardedMutableHashTable-<i>-of-<n>` (sharded by the fingerprint), which
    the checkpoint holds (`ShardedMutableHashTable-1-of-1-keys`, `-values`);
  - the summaries `approximate_duality_gap` and `examples_seen`.

The model must be a binary classifier (logistic loss) or a regressor of one
value (squared loss), over TF2 feature columns: dense ones of rank 1 and
categorical ones (ids repeated in an example count once, their values summed;
negative ids, out-of-vocabulary lookups, are dropped), with `sparse_combiner`
'sum'. The bias is a dense feature of ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import tensorflow as tf

from compat.core import tf_internals

_SHARD_NAME = "ShardedMutableHashTable"
_TABLE_DEFAULT = [0.0, 0.0, 0.0, 0.0]  # dual variable, primal loss, dual loss, example weight
_EMPTY_KEY, _DELETED_KEY = [0, 0], [1, 1]  # fingerprints never take these values


class LinearSDCA:
    """The SDCA optimizer of the linear estimators (tf.estimator.experimental.LinearSDCA).

    Args:
      example_id_column: the feature holding each example's id, a string
        `[batch_size]` Tensor: an example seen again continues from its dual.
      num_loss_partitions: how many parts the loss is split into: at least
        the number of workers training at once (1 on one machine).
      num_table_shards: shards of the examples' state table (e.g. the number
        of parameter servers); one when None.
      symmetric_l1_regularization: the L1 strength, >= 0.
      symmetric_l2_regularization: the L2 strength, > 0 (SDCA needs it; it is
        typically above 1, of the order of the examples' L2 norm).
      adaptive: whether the kernel samples examples adaptively.
    """

    def __init__(
        self,
        example_id_column: str,
        num_loss_partitions: int = 1,
        num_table_shards: int | None = None,
        symmetric_l1_regularization: float = 0.0,
        symmetric_l2_regularization: float = 1.0,
        adaptive: bool = False,
    ):
        # TF 2.15 checked these when training began; here the estimator's constructor fails
        if symmetric_l2_regularization <= 0.0:
            raise ValueError("symmetric_l2_regularization should be positive.")
        if symmetric_l1_regularization < 0.0:
            raise ValueError("symmetric_l1_regularization should be non-negative.")
        self._example_id_column = example_id_column
        self._num_loss_partitions = num_loss_partitions
        self._num_table_shards = num_table_shards
        self._symmetric_l1_regularization = symmetric_l1_regularization
        self._symmetric_l2_regularization = symmetric_l2_regularization
        self._adaptive = adaptive

    def get_train_step(
        self,
        state_manager: Any,
        weight_column_name: str | None,
        loss_type: str,
        feature_columns: Sequence,
        features: dict,
        targets: tf.Tensor,
        bias_var: Any,
        global_step: tf.Variable,
    ) -> tuple[SdcaModel, tf.Operation]:
        """(the SDCA model, its train op) for one batch: the columns' weights from `state_manager` (a linear model's),
        `bias_var`, the examples' weights (`features[weight_column_name]`) and ids, labels `targets`.
        The train op advances `global_step`; `model.update_weights(train_op)` then sets the weights."""
        if self._symmetric_l2_regularization <= 1.0:
            tf.compat.v1.logging.warn(
                "symmetric_l2_regularization for SDCA should typically be larger than for "
                "online optimization methods. Recommended value is of the order of the average "
                "L2 norm of the training examples."
            )
        batch_size = tf.compat.v1.shape(targets)[0]
        inputs = _sdca_inputs(feature_columns, features, state_manager)
        dense_features = [*inputs.dense_features, tf.ones([batch_size, 1])]
        dense_weights = [*inputs.dense_weights, bias_var]
        if weight_column_name:
            example_weights = tf.reshape(features[weight_column_name], [-1])
        else:
            example_weights = tf.ones([batch_size])
        model = SdcaModel(
            examples=_Examples(
                sparse_features=inputs.sparse_features,
                dense_features=dense_features,
                labels=tf.cast(tf.reshape(targets, [-1]), tf.float32),
                weights=tf.cast(example_weights, tf.float32),
                ids=features[self._example_id_column],
            ),
            sparse_weights=inputs.sparse_weights,
            dense_weights=dense_weights,
            loss_type=loss_type,
            l1=self._symmetric_l1_regularization,
            l2=self._symmetric_l2_regularization,
            num_loss_partitions=self._num_loss_partitions,
            num_table_shards=self._num_table_shards or 1,
            adaptive=self._adaptive,
        )
        return model, model.minimize(global_step)


# -- the batch as the kernel reads it -------------------------------------------------------------------------------


class SparseIds(NamedTuple):
    """One categorical column of a batch: per (example, id) pair its example index, feature id and value."""

    example_indices: tf.Tensor
    feature_indices: tf.Tensor
    feature_values: tf.Tensor


class _Examples(NamedTuple):
    sparse_features: list
    dense_features: list
    labels: tf.Tensor
    weights: tf.Tensor
    ids: tf.Tensor


class _Inputs(NamedTuple):
    sparse_features: list
    sparse_weights: list
    dense_features: list
    dense_weights: list


def unique_sparse_ids(id_weight_pair: Any) -> SparseIds:
    """A categorical column's ids and values for SDCA: negative ids dropped, and an id repeated in one example
    kept once, with the sum of its values (1 each without a weight column)."""
    ids = id_weight_pair.id_tensor
    if id_weight_pair.weight_tensor is not None:
        values = id_weight_pair.weight_tensor.values
    else:
        values = tf.ones([tf.compat.v1.shape(ids.indices)[0]], tf.float32)
    examples = tf.reshape(ids.indices[:, 0], [-1])
    feature_ids = tf.cast(tf.reshape(ids.values, [-1]), tf.int64)
    valid = feature_ids >= 0
    examples, feature_ids, values = (tf.boolean_mask(t, valid) for t in (examples, feature_ids, values))
    # one key per (example, id): a row of width max id + 1 per example
    width = tf.reduce_max(feature_ids) + 1
    keys, position = tf.unique(examples * width + feature_ids)
    count = tf.compat.v1.shape(keys)[0]
    pair_examples = tf.math.unsorted_segment_min(examples, position, count)
    return SparseIds(
        pair_examples,
        keys - width * pair_examples,
        tf.reshape(tf.math.unsorted_segment_sum(values, position, count), [-1]),
    )


def _sdca_inputs(feature_columns: Sequence, features: dict, state_manager: Any) -> _Inputs:
    """The columns' inputs and weight variables, split into categorical (sparse) and dense ones, in name order."""
    cache = tf_internals.feature_transformation_cache(features)
    inputs = _Inputs([], [], [], [])
    for column in sorted(feature_columns, key=lambda c: c.name):
        if tf_internals.is_categorical_column(column):
            inputs.sparse_features.append(unique_sparse_ids(column.get_sparse_tensors(cache, state_manager)))
            inputs.sparse_weights.append(state_manager.get_variable(column, "weights"))
        elif tf_internals.is_dense_column(column):
            if column.variable_shape.ndims != 1:
                raise ValueError(
                    f"Column {type(column).__name__} has rank {column.variable_shape.ndims}, larger "
                    "than 1. LinearSDCA takes dense columns of rank 1: reshape or flatten it."
                )
            inputs.dense_features.append(column.get_dense_tensor(cache, state_manager))
            inputs.dense_weights.append(state_manager.get_variable(column, "weights"))
        else:
            raise ValueError(
                f"LinearSDCA does not support column type {type(column).__name__}. Give dense or "
                "categorical tf.feature_column columns."
            )
    return inputs


# -- partitioned variables ------------------------------------------------------------------------------------------


def _whole(parts: list) -> tf.Tensor:
    return tf.convert_to_tensor(parts[0]) if len(parts) == 1 else tf.concat(parts, axis=0)


def _split_ids(parts: list, ids: tf.Tensor) -> tuple[tf.Tensor, list, list]:
    """(the part of each id, per part its ids within it, per part the positions of those ids in `ids`)."""
    offsets = tf.constant([0] + [int(p.shape[0]) for p in parts], tf.int64)
    offsets = tf.math.cumsum(offsets)
    assignment = tf.cast(tf.searchsorted(offsets[1:-1], ids, side="right"), tf.int32)
    local_ids = ids - tf.gather(offsets, assignment)
    positions = tf.range(tf.compat.v1.shape(ids)[0])
    return (
        assignment,
        tf.dynamic_partition(local_ids, assignment, len(parts)),
        tf.dynamic_partition(positions, assignment, len(parts)),
    )


def _gather(parts: list, ids: tf.Tensor) -> tf.Tensor:
    """Rows `ids` of a (possibly partitioned) variable."""
    if len(parts) == 1:
        with tf.compat.v1.device(parts[0].device):
            return tf.gather(parts[0], ids)
    _, local_ids, positions = _split_ids(parts, ids)
    gathered = []
    for part, part_ids in zip(parts, local_ids):
        with tf.compat.v1.colocate_with(part):
            gathered.append(tf.gather(part, part_ids))
    return tf.dynamic_stitch(positions, gathered)


def _scatter_add(parts: list, ids: tf.Tensor, deltas: tf.Tensor) -> list:
    """Adds `deltas` to rows `ids` of a (possibly partitioned) variable."""
    if len(parts) == 1:
        return [tf.compat.v1.scatter_add(parts[0], ids, deltas)]
    assignment, local_ids, _ = _split_ids(parts, ids)
    updates = []
    for part, part_ids, part_deltas in zip(parts, local_ids, tf.dynamic_partition(deltas, assignment, len(parts))):
        with tf.compat.v1.colocate_with(part):
            updates.append(tf.compat.v1.scatter_add(part, part_ids, part_deltas))
    return updates


def _assign_add(parts: list, deltas: tf.Tensor) -> list:
    """Adds `deltas` (for the whole variable) to each slice's rows."""
    pieces = tf.split(deltas, [int(p.shape[0]) for p in parts]) if len(parts) > 1 else [deltas]
    return [tf.compat.v1.assign_add(part, piece) for part, piece in zip(parts, pieces)]


# -- the examples' state --------------------------------------------------------------------------------------------


class _ShardedTable:
    """Dense hash tables from an example's fingerprint (int64 `[2]`) to its state (float32 `[4]`), sharded by the
    fingerprint's first half; each table is saved with the checkpoint under TF 2.15's name."""

    def __init__(self, num_shards: int):
        with tf.name_scope(_SHARD_NAME):
            self._shards = [
                tf.lookup.experimental.DenseHashTable(
                    key_dtype=tf.int64,
                    value_dtype=tf.float32,
                    default_value=_TABLE_DEFAULT,
                    empty_key=_EMPTY_KEY,
                    deleted_key=_DELETED_KEY,
                    name=f"{_SHARD_NAME}-{index + 1}-of-{num_shards}",
                )
                for index in range(num_shards)
            ]

    def _shard_of(self, keys: tf.Tensor) -> tf.Tensor:
        return tf.cast(tf.math.floormod(tf.math.abs(keys[:, 0]), len(self._shards)), tf.int32)

    def size(self) -> tf.Tensor:
        return tf.math.add_n([shard.size() for shard in self._shards])

    def lookup(self, keys: tf.Tensor) -> tf.Tensor:
        if len(self._shards) == 1:
            return self._shards[0].lookup(keys)
        shard_of, count = self._shard_of(keys), len(self._shards)
        found = [shard.lookup(part) for shard, part in zip(self._shards, tf.dynamic_partition(keys, shard_of, count))]
        positions = tf.dynamic_partition(tf.range(tf.compat.v1.shape(keys)[0]), shard_of, count)
        return tf.dynamic_stitch(positions, found)

    def insert(self, keys: tf.Tensor, values: tf.Tensor) -> list:
        if len(self._shards) == 1:
            return [self._shards[0].insert(keys, values)]
        shard_of, count = self._shard_of(keys), len(self._shards)
        return [
            shard.insert(k, v)
            for shard, k, v in zip(
                self._shards, tf.dynamic_partition(keys, shard_of, count), tf.dynamic_partition(values, shard_of, count)
            )
        ]

    def value_sums(self) -> tf.Tensor:
        """float64 `[4]`: each state entry summed over every example seen."""
        return tf.math.add_n([tf.reduce_sum(tf.cast(shard.export()[1], tf.float64), axis=0) for shard in self._shards])


# -- the solver -----------------------------------------------------------------------------------------------------


class SdcaModel:
    """One batch's SDCA step over a linear model's weights (see the module docstring): `minimize` runs the kernel
    on the unshrunk copies, `update_weights` copies them into the model's weights and shrinks those."""

    def __init__(
        self,
        examples: _Examples,
        sparse_weights: list,
        dense_weights: list,
        loss_type: str,
        l1: float,
        l2: float,
        num_loss_partitions: int,
        num_table_shards: int,
        adaptive: bool,
    ):
        self._examples = examples
        self._sparse_weights = [tf_internals.variable_partitions(v) for v in sparse_weights]
        self._dense_weights = [tf_internals.variable_partitions(v) for v in dense_weights]
        self._loss_type, self._l1, self._l2 = loss_type, l1, l2
        self._num_loss_partitions, self._adaptive = num_loss_partitions, adaptive
        self._sparse_unshrunk = [self._unshrunk_copies(parts) for parts in self._sparse_weights]
        self._dense_unshrunk = [self._unshrunk_copies(parts) for parts in self._dense_weights]
        self._table = _ShardedTable(num_table_shards)
        tf.compat.v1.summary.scalar("approximate_duality_gap", self.approximate_duality_gap())
        tf.compat.v1.summary.scalar("examples_seen", self._table.size())

    @staticmethod
    def _unshrunk_copies(parts: list) -> list:
        copies = []
        for part in parts:
            with tf.compat.v1.device(part.device):
                copies.append(tf.Variable(tf.zeros(part.shape, tf.float32), name=part.op.name + "_unshrunk"))
        return copies

    def _all_weights(self) -> list:
        return [part for parts in self._sparse_weights + self._dense_weights for part in parts]

    def _regularization_sums(self) -> tuple[tf.Tensor, tf.Tensor]:
        """(l1 * sum |w|, l2 * sum w^2 / 2) over the model's weights, in float64."""
        weights = [tf.cast(tf.convert_to_tensor(part), tf.float64) for part in self._all_weights()]
        l1 = self._l1 * tf.math.add_n([tf.reduce_sum(tf.abs(w)) for w in weights])
        l2 = self._l2 * tf.math.add_n([tf.reduce_sum(tf.square(w)) for w in weights]) / 2.0
        return l1, l2

    def approximate_duality_gap(self) -> tf.Tensor:
        """(primal loss + dual loss + regularization) per unit of example weight, over every example seen."""
        with tf.name_scope("sdca/approximate_duality_gap"):
            sums = self._table.value_sums()
            l1, l2 = self._regularization_sums()
            return (sums[1] + sums[2] + l1 + 2.0 * l2) / sums[3]

    def minimize(self, global_step: tf.Variable | None = None) -> tf.Operation:
        """The train op: the kernel's step on this batch (the examples' states and the unshrunk weights updated),
        then `global_step` advanced by one."""
        examples = self._examples
        with tf.name_scope("sdca/minimize"):
            fingerprints = tf.compat.v1.train.sdca_fprint(tf.convert_to_tensor(examples.ids))
            # each column's distinct ids in the batch, and the unshrunk weights' rows for them
            batch_ids = [
                tf.cast(tf.unique(tf.cast(s.feature_indices, tf.int32))[0], tf.int64) for s in examples.sparse_features
            ]
            states, sparse_deltas, dense_deltas = tf.raw_ops.SdcaOptimizerV2(
                sparse_example_indices=[s.example_indices for s in examples.sparse_features],
                sparse_feature_indices=[s.feature_indices for s in examples.sparse_features],
                sparse_feature_values=[s.feature_values for s in examples.sparse_features],
                dense_features=[tf.convert_to_tensor(f) for f in examples.dense_features],
                example_weights=examples.weights,
                example_labels=examples.labels,
                sparse_indices=batch_ids,
                sparse_weights=[_gather(parts, ids) for parts, ids in zip(self._sparse_unshrunk, batch_ids)],
                dense_weights=[_whole(parts) for parts in self._dense_unshrunk],
                example_state_data=self._table.lookup(fingerprints),
                loss_type=self._loss_type,
                l1=self._l1,
                l2=self._l2,
                num_loss_partitions=self._num_loss_partitions,
                num_inner_iterations=1,
                adaptive=self._adaptive,
            )
            with tf.control_dependencies([states]):
                updates = self._table.insert(fingerprints, states)
                for parts, ids, deltas in zip(self._sparse_unshrunk, batch_ids, sparse_deltas):
                    updates += _scatter_add(parts, ids, deltas)
                for parts, deltas in zip(self._dense_unshrunk, dense_deltas):
                    updates += _assign_add(parts, deltas)
            if global_step is None:
                return tf.group(*updates)
            with tf.control_dependencies(updates):
                return tf.compat.v1.assign_add(global_step, 1).op

    def update_weights(self, train_op: tf.Operation) -> tf.Operation:
        """After `train_op`: the model's weights set from the unshrunk copies, then (with L1) shrunk towards 0 by
        l1 / l2."""
        pairs = [
            (part, copy)
            for weights, copies in (
                (self._sparse_weights, self._sparse_unshrunk),
                (self._dense_weights, self._dense_unshrunk),
            )
            for parts, part_copies in zip(weights, copies)
            for part, copy in zip(parts, part_copies)
        ]
        with tf.control_dependencies([train_op]):
            updates = [part.assign(copy) for part, copy in pairs]
        if self._l1 <= 0:
            return tf.group(*updates)
        shrinkage = self._l1 / self._l2
        with tf.control_dependencies(updates):
            shrunk = []
            for part, _ in pairs:
                with tf.compat.v1.device(part.device):
                    shrunk.append(part.assign(tf.sign(part) * tf.maximum(0.0, tf.abs(part) - shrinkage)))
        return tf.group(*shrunk)


class UpdateWeightsHook(tf.compat.v1.train.SessionRunHook):
    """Runs the SDCA model's weight update with every training step (its op waits for the train op)."""

    def __init__(self, model: SdcaModel, train_op: tf.Operation):
        self._model, self._train_op = model, train_op
        self._update_op = None

    def begin(self) -> None:
        self._update_op = self._model.update_weights(self._train_op)

    def before_run(self, run_context: Any) -> tf.compat.v1.train.SessionRunArgs:
        return tf.compat.v1.train.SessionRunArgs(self._update_op)


__all__ = ["LinearSDCA", "SdcaModel", "SparseIds", "UpdateWeightsHook", "unique_sparse_ids"]
