"""A canned Estimator's native Keras 3 twin: its network as Keras layers, its checkpoint's weights mapped in.

Each canned class keeps a `CannedRecipe` of what it was built from (`Estimator.keras_recipe`,
canned/recipe.py); `to_keras` builds the model from a checkpoint with its `NativeTwin` (`twin_of`).
The twin computes what the Estimator's PREDICT mode did:

    logits = dnn(dnn_columns) + linear(linear_columns) + baseline bias     (whichever the class has)

with the checkpoint's names as TF 2.15 and this package write them, TF2 and tf.compat.v1 classes alike:
`dnn/hiddenlayer_<i>/{kernel,bias}`, `dnn/hiddenlayer_<i>/batchnorm_<i>/*`, `dnn/logits/*`,
`dnn/input_from_feature_columns/input_layer/<column>_embedding/embedding_weights`,
`linear/linear_model/<column>/weights`, `linear/linear_model/bias_weights`, `baseline/bias`.
The head's outputs come out as a dict: `logits`, `probabilities`, `class_ids` (plus `logistic` for two
classes), or `predictions` for a regressor. Dropout is kept (inactive at inference) so `fit` trains the
network as the Estimator did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from compat.core import tf_internals
from compat.core.errors import UserError
from compat.estimator import keras_columns
from compat.estimator.canned.recipe import CannedRecipe
from compat.estimator.keras_twin import EstimatorModel

# The activations a native DNN can name in Keras: TensorFlow's functions, by identity (a function that only
# shares a name with one of these is not one of them).
_ACTIVATIONS = {
    tf.nn.relu: "relu",
    tf.nn.relu6: "relu6",
    tf.nn.elu: "elu",
    tf.nn.selu: "selu",
    tf.nn.tanh: "tanh",
    tf.nn.sigmoid: "sigmoid",
    tf.nn.softplus: "softplus",
    tf.nn.swish: "silu",
}
# Names of the converted model's own layers and outputs, which a feature key must not take.
_OUTPUT_NAMES = {"logits", "logistic", "probabilities", "class_ids", "predictions", "weighted_sum", "batch"}
_BATCH_NORM = {"momentum": 0.999, "epsilon": 0.001}  # the canned DNN's batch normalization (tf_keras' epsilon)
_EMBEDDINGS = "dnn/input_from_feature_columns/input_layer/{scope}/embedding_weights"


class Portable(NamedTuple):
    """A converted model in two (`to_keras(..., portable=True)`): `preprocess` maps the features to the
    numbers `core` reads (TensorFlow); `core` is Keras layers only, for any backend."""

    preprocess: keras.Model
    core: keras.Model


class ConversionError(UserError, ValueError):
    """A trained Estimator, folder or export that `to_keras` (or its export) cannot convert, and why."""


class NativeTwin(CannedRecipe):
    """A `CannedRecipe` that builds its model: what `to_keras` converts a canned Estimator with (`twin_of`)."""

    def why_not_native(self, feature_dtypes: Mapping[str, str] | None = None) -> str | None:
        """Why this Estimator converts through its export only; None when it becomes native Keras layers.
        `feature_dtypes`: the dtypes of raw features only crossed columns read (see `build`)."""
        for columns, linear in ((self.linear_columns, True), (self.dnn_columns, False)):
            others = [column.name for column in columns if not keras_columns.converts(column, linear)]
            if others:
                return f"these feature columns have no native Keras form here: {', '.join(others)}"
        if self.dnn_columns and self.activation_fn not in _ACTIVATIONS:
            return f"the DNN's activation_fn {self.activation_fn!r} has no Keras activation of its own"
        specs = keras_columns.input_specs(self.dnn_columns + self.linear_columns, feature_dtypes)
        clashing = sorted(key for key, seen in specs.items() if "/" in key or key in _OUTPUT_NAMES or len(seen) > 1)
        if clashing:
            return f"feature keys {clashing} cannot name one Keras input each (a '/', an output's name, two kinds)"
        wide = [
            column.name
            for column in self.linear_columns
            if keras_columns.kind(column) == "BucketizedColumn" and int(np.prod(column.source_column.shape)) > 1
        ]
        if self.sparse_combiner != "sum" and wide:
            return f"sparse_combiner='{self.sparse_combiner}' over the multi-valued bucketized columns {wide}"
        return None

    def build(self, reader: tf.train.CheckpointReader, feature_dtypes: Mapping[str, str] | None = None) -> keras.Model:
        """The model as Keras 3 layers with the checkpoint's weights: one Input per feature key (a Baseline's
        one Input, `batch`, only counts the examples). `feature_dtypes`: the dtype of each raw feature that
        only crossed columns read (default a string; TF crossed integers by value)."""
        return self._build(reader, feature_dtypes, {})

    def build_portable(
        self, reader: tf.train.CheckpointReader, feature_dtypes: Mapping[str, str] | None = None
    ) -> Portable:
        """The model of `build` cut in two where its inputs become numbers: `preprocess` (lookups, hashing,
        crosses, buckets: TensorFlow's string ops, run in tf.data or with the TensorFlow backend) and `core`
        (Keras layers only: it saves, loads and predicts under Keras' JAX, PyTorch or TensorFlow backend)."""
        cut: dict[str, Any] = {}
        model = self._build(reader, feature_dtypes, cut)
        preprocess = EstimatorModel(model.input, cut, name=f"{model.name}_preprocess")
        return Portable(preprocess, keras.Model(cut, model.output, name=f"{model.name}_core"))

    def _build(self, reader: tf.train.CheckpointReader, feature_dtypes: Mapping[str, str] | None, cut: dict) -> Any:
        columns = self.dnn_columns + self.linear_columns
        specs = {key: next(iter(seen)) for key, seen in keras_columns.input_specs(columns, feature_dtypes).items()}
        if self.baseline:
            specs = {"batch": ((None,), "float32")}
        inputs = {key: keras.Input(shape=shape, dtype=dtype, name=key) for key, (shape, dtype) in sorted(specs.items())}
        terms = []
        if self.dnn_columns:
            terms.append(self._dnn_logits(inputs, reader, cut))
        if self.linear_columns:
            terms.append(self._linear_logits(inputs, reader, cut))
        if self.baseline:
            cut["batch"] = inputs["batch"]
            zeros = keras.ops.zeros_like(keras.ops.sum(inputs["batch"], axis=-1, keepdims=True))
            terms.append(_dense(zeros, self.units, None, reader, "baseline", "baseline", kernel=False))
        logits = terms[0] if len(terms) == 1 else keras.layers.Add(name="logits")(terms)
        return EstimatorModel(inputs, self._head_outputs(logits), name=self.kind.lower())

    def _dnn_logits(self, inputs: dict, reader: tf.train.CheckpointReader, cut: dict) -> Any:
        """DenseFeatures' concatenation (the columns sorted by name, each its block of the first kernel's rows)
        through the hidden layers (dropout, batch norm) and the logits."""
        parts, rows, offset = [], [], 0
        for column in sorted(self.dnn_columns, key=lambda column: column.name):
            table = None
            if keras_columns.kind(column) == "EmbeddingColumn":
                table = reader.get_tensor(_EMBEDDINGS.format(scope=tf_internals.column_scope_name(column.name)))
            piece = keras_columns.part(column, inputs, table, cut=cut)
            parts.append(piece.tensor)
            rows += [None if row is None else offset + row for row in piece.rows]
            offset += keras_columns.tf_width(column)
        net = parts[0] if len(parts) == 1 else keras.layers.Concatenate()(parts)
        for index, units in enumerate(self.hidden_units):
            scope = f"dnn/hiddenlayer_{index}"
            first = (lambda kernel: keras_columns.weights_for(rows, kernel)) if index == 0 else None
            net = _dense(net, units, _ACTIVATIONS[self.activation_fn], reader, scope, f"hiddenlayer_{index}", first)
            if self.dropout:
                net = keras.layers.Dropout(self.dropout, name=f"dropout_{index}")(net)
            if self.batch_norm:
                layer = keras.layers.BatchNormalization(**_BATCH_NORM, name=f"batchnorm_{index}")
                net = layer(net)
                names = ("gamma", "beta", "moving_mean", "moving_variance")
                layer.set_weights([reader.get_tensor(f"{scope}/batchnorm_{index}/{name}") for name in names])
        return _dense(net, self.units, None, reader, "dnn/logits", "dnn_logits" if self.linear_columns else "logits")

    def _linear_logits(self, inputs: dict, reader: tf.train.CheckpointReader, cut: dict) -> Any:
        """Every column's weighted sum (its values, buckets or categories times its weights), plus the bias,
        which the first column's layer holds."""
        terms, prefix = [], "linear_" if self.dnn_columns else ""
        for index, column in enumerate(sorted(self.linear_columns, key=lambda column: column.name)):
            piece = keras_columns.part(column, inputs, prefix=prefix, cut=cut)
            weights = reader.get_tensor(f"linear/linear_model/{tf_internals.column_scope_name(column.name)}/weights")
            layer = keras.layers.Dense(self.units, use_bias=index == 0, name=f"{prefix}{column.name}_weights")
            terms.append(layer(piece.tensor))
            bias = [reader.get_tensor("linear/linear_model/bias_weights")] if index == 0 else []
            layer.set_weights([keras_columns.weights_for(piece.rows, weights)] + bias)
        return terms[0] if len(terms) == 1 else keras.layers.Add(name="weighted_sum")(terms)

    def _head_outputs(self, logits: Any) -> dict:
        if self.n_classes is None:
            return {"predictions": keras.layers.Identity(name="predictions")(logits)}
        if self.n_classes == 2:
            logistic = keras.layers.Activation("sigmoid", name="logistic")(logits)
            probabilities = keras.layers.Concatenate(name="probabilities")([1 - logistic, logistic])
            class_ids = keras.ops.cast(keras.ops.greater(logits, 0.0), "int64")
            return {"logits": logits, "logistic": logistic, "probabilities": probabilities, "class_ids": class_ids}
        probabilities = keras.layers.Softmax(name="probabilities")(logits)
        class_ids = keras.ops.expand_dims(keras.ops.argmax(logits, axis=-1), -1)
        return {"logits": logits, "probabilities": probabilities, "class_ids": class_ids}


def twin_of(recipe: CannedRecipe) -> NativeTwin:
    """The conversion of the canned Estimator `recipe` describes."""
    return NativeTwin(**{field.name: getattr(recipe, field.name) for field in dataclasses.fields(recipe)})


def _dense(
    net: Any,
    units: int,
    activation: Any,
    reader: tf.train.CheckpointReader,
    scope: str,
    name: str,
    first: Callable | None = None,
    kernel: bool = True,
) -> Any:
    """`net` through a Dense layer holding the checkpoint's `<scope>/kernel` (reordered by `first`, for the
    first layer over the columns) and `<scope>/bias`. `kernel=False`: only a bias is in the checkpoint (the
    Baseline), the kernel stays zero over an all-zero input."""
    layer = keras.layers.Dense(units, activation=activation, name=name)
    output = layer(net)
    if kernel:
        weights = reader.get_tensor(f"{scope}/kernel")
        weights = first(weights) if first else weights
    else:
        weights = np.zeros((int(net.shape[-1]), units), "float32")
    layer.set_weights([weights, reader.get_tensor(f"{scope}/bias")])
    return output
