"""tf.estimator.experimental.RNNClassifier and RNNEstimator: recurrent networks over sequence feature columns, as
TF 2.15's.

The network is a Keras 2 (tf_keras) model named `rnn_model`, as TF 2.15 built
it: the sequence columns through `SequenceFeatures` (their padded values and
each example's length, summarised as the histogram `sequence_length`), the
context columns (if any) through a v1 `DenseFeatures` and repeated at every
step, a Keras RNN layer masked by the lengths, and a `Dense` layer `logits`
over its last output (or, with `return_sequences`, over every step's).

The RNN is `units` and `cell_type` ('simple_rnn', 'lstm' or 'gru'; an int
`units` with a named type gives Keras' fused layer, a list of units stacked
cells), or the cell (or list of cells) `rnn_cell_fn()` returns. It trains as
the TF2 canned estimators do (optimizers.py: a name, a Keras optimizer or a
callable), a name at 0.05 with gradients clipped to a norm of 5, counting
with the global step. With `return_sequences` the head must be a sequential
head: RNNClassifier wraps its own in `SequentialHeadWrapper`, which flattens
the steps the mask keeps before the loss and metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import tensorflow as tf
import tf_keras

from compat.core import tf_internals
from compat.estimator.canned import common, optimizers
from compat.estimator.estimator import Estimator
from compat.estimator.head import MultiHead, base_head
from compat.estimator.model_fn import EstimatorSpec, ModeKeys

_DEFAULT_LEARNING_RATE = 0.05
_DEFAULT_CLIP_NORM = 5.0
_SIMPLE_RNN, _LSTM, _GRU = "simple_rnn", "lstm", "gru"
_LAYERS = {_LSTM: tf_keras.layers.LSTM, _GRU: tf_keras.layers.GRU, _SIMPLE_RNN: tf_keras.layers.SimpleRNN}
_CELLS = {_LSTM: tf_keras.layers.LSTMCell, _GRU: tf_keras.layers.GRUCell, _SIMPLE_RNN: tf_keras.layers.SimpleRNNCell}
# TF 1.x's contrib RNN estimators called the simple cell 'basic_rnn'; TF 2.15 knew only 'simple_rnn'
_CELL_ALIASES = {"basic_rnn": _SIMPLE_RNN}
USE_DEFAULT = object()  # `cell_type` not given


# -- the sequential head ------------------------------------------------------------------------------------------


def _flatten_steps(tensor: Any, sequence_mask: tf.Tensor, expected_length: tf.Tensor) -> tf.Tensor:
    """`[kept steps, D0, ... DN]` (`[kept steps, 1]` for a `[batch_size, time]` input): the steps the mask keeps
    of a dense `[batch_size, time, D0, ... DN]` tensor, or every value of a sparse one (in index order)."""
    shape = tensor.get_shape()
    if shape.ndims is None or shape.ndims < 2:
        raise ValueError(f"Input tensor expected to have at least 2 dimensions, got {shape.ndims} instead.")
    if isinstance(tensor, tf.sparse.SparseTensor):
        flat = tf.sparse.reorder(tensor).values
        if shape.ndims > 2:
            flat = tf.reshape(flat, tf.concat([[-1], shape[2:]], axis=0))
    elif tf.is_tensor(tensor):
        flat = tf.boolean_mask(tensor, sequence_mask)
    else:
        raise ValueError(f"`tensor` expected to be a `Tensor` or  `SparseTensor` got `{tensor}` instead.")
    if shape.ndims == 2:
        flat = tf.expand_dims(flat, -1)
        expected_shape = tf.concat([[expected_length], [1]], axis=0)
    else:
        expected_shape = tf.concat([[expected_length], shape[2:]], axis=0)
    check = tf.compat.v1.debugging.assert_equal(
        tf.shape(flat), expected_shape, message="Tensor shape is incompatible with provided mask."
    )
    with tf.control_dependencies([check]):
        return tf.identity(flat)


class SequentialHeadWrapper(base_head.Head):
    """A head over every step of a sequence: wraps a head of one step (BinaryClassHead, ...) and flattens the steps
    the sequence mask keeps (`features[sequence_length_mask]`, a `[batch_size, time]` boolean) out of the logits,
    the labels and the `feature_columns` features (e.g. the weights) before its loss and metrics. Predictions are
    per step, the mask added under its key."""

    def __init__(
        self, static_head: Any, sequence_length_mask: str = "sequence_length_mask", feature_columns: Any = None
    ):
        if not isinstance(sequence_length_mask, str):
            raise TypeError(f"`sequence_mask` column must be a string. Given type: {type(sequence_length_mask)}.")
        feature_columns = feature_columns or []
        if isinstance(feature_columns, str):
            feature_columns = [feature_columns]
        if not isinstance(feature_columns, Iterable):
            raise TypeError(
                "`feature_columns` must be either a string or an iterable of strings got "
                f"{type(feature_columns)} instead."
            )
        for column in feature_columns:
            if not isinstance(column, str):
                raise TypeError(f"Column must a string. Given type: {type(column)}.")
        if isinstance(static_head, MultiHead):
            raise ValueError("`MultiHead` is not supported with `SequentialHeadWrapper`.")
        self._static_head = static_head
        self._sequence_length_mask = sequence_length_mask
        self._feature_columns = list(feature_columns)

    @property
    def input_sequence_mask_key(self) -> str:
        """The feature holding the sequence mask."""
        return self._sequence_length_mask

    @property
    def name(self) -> str | None:
        return self._static_head.name

    @property
    def logits_dimension(self) -> Any:
        return self._static_head.logits_dimension

    @property
    def loss_reduction(self) -> str:
        return self._static_head.loss_reduction

    def _flatten(self, labels: Any, logits: tf.Tensor, features: dict) -> tuple[tf.Tensor, tf.Tensor, dict]:
        if self.input_sequence_mask_key not in features:
            raise ValueError(
                f"The provided sequence_length_mask key `{self.input_sequence_mask_key}` should be "
                f"included in the features dictionary, but was not found. Found keys: "
                f"{list(features.keys())}."
            )
        mask = features[self.input_sequence_mask_key]
        if mask.get_shape().ndims != 2:
            raise ValueError(f"Mask is expected to have two dimensions, got {mask.get_shape().ndims} instead.")
        with tf.name_scope("flatten"):
            kept = tf.reduce_sum(tf.cast(mask, tf.int32))
            flat_features = {}
            for column in self._feature_columns:
                if column not in features:
                    raise ValueError(f"`{column}` column expected in features dictionary.")
                flat_features[column] = _flatten_steps(features[column], mask, kept)
            return _flatten_steps(labels, mask, kept), _flatten_steps(logits, mask, kept), flat_features

    def loss(
        self,
        labels: Any,
        logits: Any,
        features: Any = None,
        mode: str | None = None,
        regularization_losses: Sequence[Any] | None = None,
    ) -> tf.Tensor:
        flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
        return self._static_head.loss(
            labels=flat_labels,
            logits=flat_logits,
            features=flat_features,
            mode=mode,
            regularization_losses=regularization_losses,
        )

    def predictions(self, logits: Any, keys: Sequence[str] | None = None) -> dict:
        return self._static_head.predictions(logits, keys=keys)

    def metrics(self, regularization_losses: Sequence[Any] | None = None) -> dict:
        return self._static_head.metrics(regularization_losses)

    def update_metrics(
        self,
        eval_metrics: dict,
        features: Any,
        logits: Any,
        labels: Any,
        regularization_losses: Sequence[Any] | None = None,
    ) -> dict:
        flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
        return self._static_head.update_metrics(
            eval_metrics, flat_features, flat_logits, flat_labels, regularization_losses=regularization_losses
        )

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
        """PREDICT: the static head's spec per step, the mask added to the predictions; TRAIN and EVAL: the static
        head's spec over the flattened kept steps."""
        if mode == ModeKeys.PREDICT:
            spec = self._static_head.create_estimator_spec(features=features, mode=mode, logits=logits)
            mask = features[self.input_sequence_mask_key]
            return spec._replace(predictions={**spec.predictions, self.input_sequence_mask_key: mask})
        flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
        return self._static_head.create_estimator_spec(
            features=flat_features,
            mode=mode,
            logits=flat_logits,
            labels=flat_labels,
            optimizer=optimizer,
            trainable_variables=trainable_variables,
            train_op_fn=train_op_fn,
            update_ops=update_ops,
            regularization_losses=regularization_losses,
        )


# -- the network ----------------------------------------------------------------------------------------------------


def _single_rnn_cell(units: int, cell_type: Any) -> Any:
    """A cell of `units` units: `cell_type` a name ('simple_rnn', 'lstm', 'gru') or a class making cells."""
    cell_class = _CELLS.get(_CELL_ALIASES.get(cell_type, cell_type), cell_type)
    if not callable(cell_class):
        raise ValueError(
            "`cell_type` should be a class producing a RNN cell, or a string specifying the cell type. "
            f"Supported strings are: {[_SIMPLE_RNN, _LSTM, _GRU]}."
        )
    cell = cell_class(units=units)
    tf_internals.enable_rnn_caching_device(cell)
    if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
        raise ValueError("RNN cell should have a `call` and `state_size` method.")
    return cell


def _make_rnn_cell_fn(units: Sequence[int], cell_type: Any = _SIMPLE_RNN) -> Callable[[], Any]:
    """A function making one cell per entry of `units` (the cell itself for one entry, else the list, stacked)."""

    def rnn_cell_fn() -> Any:
        cells = [_single_rnn_cell(size, cell_type) for size in units]
        return cells[0] if len(cells) == 1 else cells

    return rnn_cell_fn


def _verify_rnn_cell_input(rnn_cell_fn: Callable | None, units: Any, cell_type: Any) -> None:
    if rnn_cell_fn and (units or cell_type is not USE_DEFAULT):
        raise ValueError("units and cell_type must not be specified when using rnn_cell_fn")


def _make_rnn_layer(rnn_cell_fn: Callable | None, units: Any, cell_type: Any, return_sequences: bool) -> Any:
    """The Keras RNN layer: a fused LSTM/GRU/SimpleRNN layer for an int `units` and a named type, else an RNN over
    the cells of `rnn_cell_fn` (or of `units` and `cell_type`, 'simple_rnn' by default)."""
    _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)
    cell_type = _CELL_ALIASES.get(cell_type, cell_type) if isinstance(cell_type, str) else cell_type
    if isinstance(cell_type, str) and cell_type in _LAYERS and isinstance(units, int):
        return _LAYERS[cell_type](units=units, return_sequences=return_sequences)
    if not rnn_cell_fn:
        rnn_cell_fn = _make_rnn_cell_fn(units, _SIMPLE_RNN if cell_type is USE_DEFAULT else cell_type)
    return tf_keras.layers.RNN(cell=_as_keras_2_cells(rnn_cell_fn()), return_sequences=return_sequences)


# Keras 3's own cells, which an `rnn_cell_fn` written for TF 2.15 returns as `tf.keras.layers.<Name>` (tf.keras is
# Keras 3 on TensorFlow >= 2.16), and their Keras 2 twins, which the network is built from.
_KERAS_2_TWINS = ("SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells")


def _as_keras_2_cells(cells: Any) -> Any:
    """`cells` (a cell or a list of them) with each of Keras 3's built-in cells made again as its Keras 2 twin from
    its config (units, activations, initializers, dropouts), since a Keras 3 cell cannot run inside the Keras 2 RNN
    layer. A user's own cell class is kept: the RNN layer only calls it."""
    if isinstance(cells, (list, tuple)):
        return [_as_keras_2_cells(cell) for cell in cells]
    import keras

    name = type(cells).__name__
    if name not in _KERAS_2_TWINS or type(cells) is not getattr(keras.layers, name):  # a user's subclass is kept
        return cells
    twin = getattr(tf_keras.layers, name)
    if name == "StackedRNNCells":
        return twin(_as_keras_2_cells(list(cells.cells)))
    accepted = set(tf_internals.fn_args(twin.__init__))
    config = {
        key: _as_keras_2_setting(key, value)
        for key, value in cells.get_config().items()
        if key in accepted and key != "dtype"
    }
    return twin(**config)


def _as_keras_2_setting(key: str, value: Any) -> Any:
    """One cell setting from a Keras 3 config as Keras 2 takes it: a serialized initializer, regularizer or
    constraint made again as Keras 2's, with only the arguments Keras 2's class has (Keras 3 added some)."""
    if not (isinstance(value, dict) and "class_name" in value):
        return value
    kind = next((kind for kind in ("initializer", "regularizer", "constraint") if key.endswith(kind)), None)
    if kind is None:
        return value
    module = getattr(tf_keras, f"{kind}s")
    cls = getattr(module, value["class_name"], None)
    if cls is None:
        raise ValueError(
            f"The rnn_cell_fn's cell sets {key}={value['class_name']}, which Keras 2 (the RNN estimators' layers) "
            f"does not have: use one of tf_keras.{kind}s"
        )
    arguments = set(tf_internals.fn_args(cls.__init__))
    return cls(**{name: v for name, v in (value.get("config") or {}).items() if name in arguments})


class RNNModel(tf_keras.Model):
    """Logits of a Keras RNN over sequence (and context) feature columns: `model(features, training)` ->
    `[batch_size, units]`, or `[batch_size, time, units]` with `return_sequences` (masked by the lengths)."""

    def __init__(
        self,
        rnn_layer: Any,
        units: int,
        sequence_feature_columns: Sequence,
        context_feature_columns: Sequence | None = None,
        activation: Callable | None = None,
        return_sequences: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if not isinstance(units, int):
            raise ValueError(f"units must be an int.  Given type: {type(units)}")
        self._return_sequences = return_sequences
        self._sequence_feature_columns = sequence_feature_columns
        self._context_feature_columns = context_feature_columns
        self._sequence_features_layer = tf_keras.experimental.SequenceFeatures(sequence_feature_columns)
        self._dense_features_layer: Any = (
            tf_internals.v1_dense_features(context_feature_columns, name="dense_features")
            if context_feature_columns
            else None
        )
        self._rnn_layer = rnn_layer
        self._logits_layer = tf_keras.layers.Dense(units=units, activation=activation, name="logits")

    def get_config(self) -> dict:
        """TF 2.15's config of the model: its name, RNN layer, units, activation, return_sequences and columns."""
        return {
            "name": self.name,
            "rnn_layer": {"class_name": type(self._rnn_layer).__name__, "config": self._rnn_layer.get_config()},
            "units": self._logits_layer.units,
            "return_sequences": self._return_sequences,
            "activation": tf_keras.activations.serialize(self._logits_layer.activation),
            "sequence_feature_columns": tf_internals.serialize_feature_columns(self._sequence_feature_columns),
            "context_feature_columns": (
                tf_internals.serialize_feature_columns(self._context_feature_columns)
                if self._context_feature_columns
                else None
            ),
        }

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> RNNModel:
        config = dict(config)
        rnn_layer = tf_keras.layers.deserialize(config.pop("rnn_layer"), custom_objects=custom_objects)
        sequence = tf_internals.deserialize_feature_columns(config.pop("sequence_feature_columns"), custom_objects)
        context = config.pop("context_feature_columns", None)
        if context:
            context = tf_internals.deserialize_feature_columns(context, custom_objects)
        activation = tf_keras.activations.deserialize(config.pop("activation", None), custom_objects=custom_objects)
        return cls(
            rnn_layer=rnn_layer,
            sequence_feature_columns=sequence,
            context_feature_columns=context,
            activation=activation,
            **config,
        )

    @property
    def variables_to_train(self) -> list:
        """The model's trainable variables, with those of a user's own Keras 3 cell (`rnn_cell_fn` returning a
        subclass of tf.keras.layers.Layer, which is Keras 3's): the Keras 2 model does not track them."""
        variables = list(self.trainable_variables)
        cell = getattr(self._rnn_layer, "cell", None)
        cells = list(getattr(cell, "cells", [cell])) if cell is not None else []
        for foreign in cells:
            if not isinstance(foreign, tf_keras.layers.Layer):
                variables.extend(getattr(v, "value", v) for v in getattr(foreign, "trainable_variables", []))
        return variables

    def call(self, inputs: dict, training: bool | None = None) -> tf.Tensor:
        if not isinstance(inputs, dict):
            raise ValueError(f"inputs should be a dictionary of `Tensor`s. Given type: {type(inputs)}")
        with tf.name_scope("sequence_input_layer"):
            sequence_input, sequence_length = self._sequence_features_layer(inputs, training=training)
            tf.compat.v1.summary.histogram("sequence_length", sequence_length)
            if self._context_feature_columns:
                context_input = self._dense_features_layer(inputs, training=training)
                sequence_input = tf_internals.concatenate_context_input(context_input, sequence_input=sequence_input)
        mask = tf.sequence_mask(sequence_length)
        logits = self._logits_layer(self._rnn_layer(sequence_input, mask=mask, training=training))
        if self._return_sequences:
            logits._keras_mask = mask  # the steps the sequential head keeps
        return logits


def _rnn_optimizer(optimizer: Any) -> Any:
    """The optimizer of this training graph: a name at 0.05 with gradients clipped to a norm of 5 (TF 2.15's
    default), else as given; it counts with the global step."""
    if isinstance(optimizer, str):
        optimizer = optimizers.optimizer_for_graph(optimizer, _DEFAULT_LEARNING_RATE)
        optimizer.clipnorm = _DEFAULT_CLIP_NORM
    else:
        optimizer = optimizers.optimizer_for_graph(optimizer)
    common.start_counting_with_global_step(optimizer)
    return optimizer


def _rnn_estimator_spec(
    features: dict, labels: Any, mode: str, head: Any, rnn_model: RNNModel, optimizer: Any, return_sequences: bool
) -> EstimatorSpec:
    training = mode == ModeKeys.TRAIN
    optimizer = _rnn_optimizer(optimizer) if training else None
    logits = rnn_model(features, training)
    if return_sequences and head.input_sequence_mask_key not in features:
        features[head.input_sequence_mask_key] = logits._keras_mask
    return head.create_estimator_spec(
        features=features,
        mode=mode,
        labels=labels,
        optimizer=optimizer,
        logits=logits,
        update_ops=rnn_model.updates,
        trainable_variables=rnn_model.variables_to_train,
    )


class RNNEstimator(Estimator):
    """tf.estimator.experimental.RNNEstimator: an RNN over sequence feature columns with any head (a sequential one,
    e.g. SequentialHeadWrapper, with `return_sequences`).

    Args:
      head: the head of the logits.
      sequence_feature_columns: sequence columns (tf.feature_column.sequence_*, or embedding/indicator columns of
        them), fed as SparseTensors.
      context_feature_columns: dense columns repeated at every step.
      units: units per layer (an int with a named `cell_type`: Keras' fused layer).
      cell_type: 'simple_rnn' (default), 'lstm', 'gru' or a cell class.
      rnn_cell_fn: returns the cell (or a list of cells, stacked); excludes `units` and `cell_type`.
      return_sequences: logits at every step (a sequential head), not only the last.
      model_dir, config: as Estimator's.
      optimizer: a name, a Keras optimizer or a callable (default Adagrad at 0.05, clip norm 5).
    """

    def __init__(
        self,
        head: Any,
        sequence_feature_columns: Sequence,
        context_feature_columns: Sequence | None = None,
        units: Any = None,
        cell_type: Any = USE_DEFAULT,
        rnn_cell_fn: Callable | None = None,
        return_sequences: bool = False,
        model_dir: str | None = None,
        optimizer: Any = "Adagrad",
        config: Any = None,
    ):
        if return_sequences and not hasattr(head, "input_sequence_mask_key"):
            raise ValueError(
                "Provided head must be a `_SequentialHead` object when `return_sequences` is set to "
                "True (e.g. compat.estimator.canned.rnn.SequentialHeadWrapper(head))."
            )
        _verify_rnn_cell_input(rnn_cell_fn, units, cell_type)
        optimizer = optimizers.checked_optimizer_argument(optimizer)

        def model_fn(features, labels, mode, config):
            del config
            rnn_layer = _make_rnn_layer(rnn_cell_fn, units, cell_type, return_sequences)
            rnn_model = RNNModel(
                rnn_layer=rnn_layer,
                units=head.logits_dimension,
                sequence_feature_columns=sequence_feature_columns,
                context_feature_columns=context_feature_columns,
                return_sequences=return_sequences,
                name="rnn_model",
            )
            return _rnn_estimator_spec(features, labels, mode, head, rnn_model, optimizer, return_sequences)

        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
    """tf.estimator.experimental.RNNClassifier: an RNN with a sigmoid (2 classes) or softmax head; with
    `return_sequences` a class per step, the head wrapped in SequentialHeadWrapper over the mask
    `features[sequence_mask]` (computed from the lengths when absent) and the weight column."""

    def __init__(
        self,
        sequence_feature_columns: Sequence,
        context_feature_columns: Sequence | None = None,
        units: Any = None,
        cell_type: Any = USE_DEFAULT,
        rnn_cell_fn: Callable | None = None,
        return_sequences: bool = False,
        model_dir: str | None = None,
        n_classes: int = 2,
        weight_column: Any = None,
        label_vocabulary: Sequence[str] | None = None,
        optimizer: Any = "Adagrad",
        loss_reduction: str = common.SUM_OVER_BATCH_SIZE,
        sequence_mask: str = "sequence_mask",
        config: Any = None,
    ):
        head = common.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
        if return_sequences:
            tf.compat.v1.logging.info(
                "Converting head to sequential head with `SequentialHeadWrapper` to allow sequential predictions."
            )
            head = SequentialHeadWrapper(head, sequence_length_mask=sequence_mask, feature_columns=weight_column)
        super().__init__(
            head=head,
            sequence_feature_columns=sequence_feature_columns,
            context_feature_columns=context_feature_columns,
            units=units,
            cell_type=cell_type,
            rnn_cell_fn=rnn_cell_fn,
            return_sequences=return_sequences,
            model_dir=model_dir,
            optimizer=optimizer,
            config=config,
        )


__all__ = ["RNNClassifier", "RNNEstimator", "RNNModel", "SequentialHeadWrapper", "USE_DEFAULT"]
