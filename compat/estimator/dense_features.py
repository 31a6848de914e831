"""tf.keras.layers.DenseFeatures for Keras 3: feature columns as the first layer of a Keras model.

TensorFlow's tutorials fed `tf.feature_column`s to Keras with
`tf.keras.layers.DenseFeatures(columns)`, a Keras 2 layer that Keras 3 does
not have. This one is a Keras 3 layer over TensorFlow's own feature columns
(which TF 2.21 still ships): it takes the dict of raw features, transforms
each column as TensorFlow does, and concatenates the columns' dense tensors,
sorted by column name, into `[batch, sum of the columns' sizes]`. Columns with
state (embedding tables, vocabulary lookups) get it from this layer: Keras 3
weights (trained and saved with the model) and lookup resources.
`compat.estimator.install()` makes it `tf.keras.layers.DenseFeatures`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import keras
import tensorflow as tf

fc = tf.__internal__.feature_column  # TensorFlow's exported interface for Keras' feature-column layers


def _dense_columns(feature_columns: Any) -> list:
    """The columns, checked to be dense ones with distinct names, sorted by name (the output's order)."""
    if isinstance(feature_columns, (fc.FeatureColumn, dict)) or not isinstance(feature_columns, Iterable):
        feature_columns = [feature_columns]
    columns = list(feature_columns)
    if not columns:
        raise (
            ValueError("Expected feature_columns to be iterable, found dict.")
            if isinstance(feature_columns, dict)
            else ValueError("feature_columns must not be empty.")
        )
    for column in columns:
        if not isinstance(column, fc.DenseColumn):
            raise ValueError(
                f"Items of feature_columns must be a DenseColumn. You can wrap a categorical column with "
                f"an embedding_column or indicator_column. Given: {column}"
            )
    names = [column.name for column in columns]
    if len(set(names)) != len(names):
        raise ValueError(f"Duplicate feature column name found for columns: {sorted(names)}")
    return sorted(columns, key=lambda column: column.name)


class _LayerStateManager(tf.__internal__.feature_column.StateManager):
    """Where feature columns keep their state: weights of the layer, and lookup tables."""

    def __init__(self, layer: keras.layers.Layer) -> None:
        self._layer = layer
        self._variables: dict[tuple[str, str], Any] = {}
        self._resources: dict[tuple[str, str], Any] = {}

    def create_variable(
        self, feature_column, name, shape, dtype=None, trainable=True, use_resource=True, initializer=None
    ):
        key = (feature_column.name, name)
        if key in self._variables:
            raise ValueError(f"Variable already exists: {feature_column.name}/{name}")
        weight = self._layer.add_weight(
            name=f"{feature_column.name}_{name}".replace("/", "_"),
            shape=tuple(shape),
            dtype=tf.as_dtype(dtype or tf.float32).name,
            initializer=initializer or "zeros",
            trainable=self._layer.trainable and trainable,
        )
        self._variables[key] = weight
        return weight

    def get_variable(self, feature_column, name):
        weight = self._variables[(feature_column.name, name)]
        return weight.value  # TensorFlow's ops take the variable itself; reads of it reach the weight's gradient

    def add_resource(self, feature_column, resource_name, resource):
        self._resources[(feature_column.name, resource_name)] = resource
        return resource

    def has_resource(self, feature_column, resource_name):
        return (feature_column.name, resource_name) in self._resources

    def get_resource(self, feature_column, resource_name):
        return self._resources[(feature_column.name, resource_name)]


@keras.saving.register_keras_serializable(package="compat")
class DenseFeatures(keras.layers.Layer):
    """A dense `[batch, n]` tensor from a dict of raw features, by feature columns (tf.keras.layers.DenseFeatures)."""

    def __init__(self, feature_columns: Any, trainable: bool = True, name: str | None = None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._feature_columns = _dense_columns(feature_columns)
        self._state_manager = _LayerStateManager(self)

    def __call__(self, features: Any, *args: Any, cols_to_output_tensors: dict | None = None, **kwargs: Any):
        """As Keras 2's layer: `cols_to_output_tensors`, a dict of the caller's, gets each column's dense tensor.

        Keras 3's `Layer.__call__` hands `call` copies of its arguments, so the caller's dict reaches `call`
        beside them, for this call only (set past Keras' attribute tracking, which would wrap it).
        """
        object.__setattr__(self, "_outputs_sink", cols_to_output_tensors)
        try:
            return super().__call__(features, *args, **kwargs)
        finally:
            object.__setattr__(self, "_outputs_sink", None)

    def build(self, input_shape=None):
        for column in self._feature_columns:
            column.create_state(self._state_manager)
        self.built = True

    def call(self, features: dict, cols_to_output_tensors: dict | None = None, training: bool | None = None):
        if not isinstance(features, dict):
            raise ValueError(f"We expected a dictionary here. Instead we got: {features}")
        if cols_to_output_tensors is None:
            cols_to_output_tensors = getattr(self, "_outputs_sink", None)
        cache = fc.FeatureTransformationCache(features)
        outputs = []
        for column in self._feature_columns:
            dense = column.get_dense_tensor(cache, self._state_manager)
            dense = tf.reshape(tf.cast(dense, self.compute_dtype), [-1, column.variable_shape.num_elements()])
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[column] = dense
            outputs.append(dense)
        return tf.concat(outputs, axis=1)

    @property
    def lookup_resources(self) -> list:
        """The lookup tables the columns made (vocabulary, hashing): a SavedModel of a function that calls
        this layer must track them, as Keras 2's layer did, or saving it fails on an untracked resource."""
        return list(self._state_manager._resources.values())

    def compute_output_shape(self, input_shape):
        batch = next(iter(input_shape.values()))[0] if isinstance(input_shape, dict) and input_shape else None
        return (batch, sum(column.variable_shape.num_elements() for column in self._feature_columns))

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "feature_columns": [fc.serialize_feature_column(column) for column in self._feature_columns],
        }

    @classmethod
    def from_config(cls, config: dict) -> DenseFeatures:
        config = dict(config)
        config["feature_columns"] = [fc.deserialize_feature_column(column) for column in config["feature_columns"]]
        return cls(**config)
