"""From Estimator to Keras 3: a trained Estimator as a Keras model that predicts what it predicted.

    model = compat.estimator.to_keras(estimator)                     # model_to_estimator, DNN, Linear
    model = compat.estimator.to_keras(estimator, serving_input_receiver_fn=receiver)   # any Estimator
    python -m compat.estimator.to_keras EXPORT_DIR OUT.keras         # an export, as a Keras model

What each kind of Estimator becomes, with the weights of its newest checkpoint (or `checkpoint_path`):

- `model_to_estimator`'s: the original Keras model (a new copy, compiled as it was) with the trained
  weights. A model folder alone does not record the architecture: pass `keras_model=` (the
  architecture, e.g. the function that built it) with the folder, TF 2.15's folders included.
- `DNNClassifier`, `DNNRegressor` (without batch norm), `LinearClassifier` and `LinearRegressor` over the
  feature columns `keras_columns` converts (numeric, bucketized, and single-valued vocabulary-list,
  identity and hash-bucket columns, as indicator or embedding columns in a DNN): a native Keras 3 model
  (one `Input` per feature key, Keras preprocessing layers (StringLookup, IntegerLookup, Hashing,
  Discretization, CategoryEncoding, Embedding) and Dense layers holding the checkpoint's weights, and the
  head's outputs as a dict: `logits`, `probabilities`, `class_ids`, plus `logistic` for two classes;
  `predictions` for a regressor). No TensorFlow graph code is inside: it saves as `.keras`, loads with
  `keras.saving.load_model`, and trains on with `fit` (compile it first). The string `classes` outputs are
  left out (Keras models compute numbers); `class_ids` index the label vocabulary.
- Any other Estimator (a custom model_fn, other canned Estimators, other feature columns): its
  SavedModel export, written with `serving_input_receiver_fn`, wrapped in `keras.layers.TFSMLayer`:
  inference with the export's serving signature (the same input and output keys, so serving clients
  see no change); it cannot be trained on. A receiver is needed because the Estimator's export is.
  Saved as `.keras`, it still reads the export folder, and loads after `import compat.estimator`
  with `keras.saving.load_model(path, safe_mode=False)` (Keras asks for that for SavedModel layers).

Raises ValueError naming what is missing when a conversion cannot be made.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from compat.core import tf_internals
from compat.estimator import keras_columns


def to_keras(
    estimator: Any,
    *,
    keras_model: keras.Model | None = None,
    serving_input_receiver_fn: Callable | None = None,
    checkpoint_path: str | None = None,
    export_dir_base: str | None = None,
) -> keras.Model:
    """A Keras 3 model that predicts what `estimator` predicts, with its trained weights.

    Args:
      estimator: an Estimator of compat.estimator, or the model folder of a `model_to_estimator`
        Estimator (with `keras_model`).
      keras_model: the architecture of a model_to_estimator folder given by path (its weights are
        replaced by the folder's).
      serving_input_receiver_fn: for Estimators converted through their export (see the module).
      checkpoint_path: a checkpoint other than the newest.
      export_dir_base: where an export-based conversion writes the export it reads (default: a new
        temporary folder, logged); the model reads it as long as it is used, so keep it.

    Raises:
      ValueError: a folder without `keras_model`, or an Estimator that needs a receiver and got none.
    """
    from compat.estimator.keras_engine import KerasEstimator, model_to_estimator

    if isinstance(estimator, str | os.PathLike):
        if tf.train.latest_checkpoint(os.fspath(estimator)) is None:
            raise ValueError(
                f"{os.fspath(estimator)} holds no checkpoint: give the model folder of a trained Estimator"
            )
        if keras_model is None:
            raise ValueError(
                f"{os.fspath(estimator)}: a model folder does not record its model's architecture: pass "
                "keras_model= (the compiled Keras model the folder was trained from), or the Estimator itself"
            )
        estimator = model_to_estimator(keras_model=keras_model, model_dir=os.fspath(estimator))
    if isinstance(estimator, KerasEstimator):
        return estimator.trained_keras_model(checkpoint_path)
    recipe = getattr(estimator, "_keras_recipe", None)
    if recipe is not None and recipe.native():
        return recipe.build(_reader(estimator, checkpoint_path))
    if serving_input_receiver_fn is None:
        kind = type(estimator).__name__
        reason = recipe.why_not_native() if recipe is not None else f"a {kind} has no native Keras counterpart"
        raise ValueError(
            f"{reason}: pass serving_input_receiver_fn= (as for export_saved_model) to convert its export, "
            "which keeps the serving signature"
        )
    base = export_dir_base or tempfile.mkdtemp(prefix="to_keras-")
    export_dir = os.fsdecode(
        estimator.export_saved_model(base, serving_input_receiver_fn, checkpoint_path=checkpoint_path)
    )
    tf.compat.v1.logging.info("to_keras: the Keras model reads the export %s; keep that folder", export_dir)
    return from_export(export_dir)


def from_export(export_dir: str, signature: str = "serving_default") -> keras.Model:
    """A Keras model over a SavedModel export's `signature`: the same input keys (one `Input` each, named
    as the signature names them) and output keys. Inference only (TFSMLayer), the export itself must stay."""
    loaded = tf.saved_model.load(export_dir)
    if signature not in loaded.signatures:
        raise ValueError(f"{export_dir} has no signature '{signature}'; it has {sorted(loaded.signatures)}")
    specs = loaded.signatures[signature].structured_input_signature[1]
    inputs = {name: keras.Input(shape=spec.shape[1:], dtype=spec.dtype.name, name=name) for name, spec in specs.items()}
    layer = ExportSignature(export_dir, call_endpoint=signature)
    return keras.Model(inputs, layer(inputs), name="estimator_export")


@keras.saving.register_keras_serializable(package="compat.estimator")
class ExportSignature(keras.layers.TFSMLayer):
    """Keras' TFSMLayer, called as an Estimator export's signature is: with its inputs by name (the
    signature's arguments are keywords; TFSMLayer passes one positional argument)."""

    def call(self, inputs: dict, training: bool = False) -> Any:
        del training  # an export serves one mode
        return self.call_endpoint_fn(**inputs)


def _reader(estimator: Any, checkpoint_path: str | None) -> tf.train.CheckpointReader:
    path = checkpoint_path or estimator.latest_checkpoint()
    if path is None:
        raise ValueError(f"{estimator.model_dir} holds no checkpoint: train the Estimator first")
    return tf.train.load_checkpoint(path)


_DNN_KINDS = ("DNNClassifier", "DNNRegressor")
_LINEAR_KINDS = ("LinearClassifier", "LinearRegressor")
_NATIVE_KINDS = _DNN_KINDS + _LINEAR_KINDS
_REGRESSORS = ("DNNRegressor", "LinearRegressor")


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
# Names of the converted model's own layers, which a feature key must not take.
_OUTPUT_NAMES = {"logits", "logistic", "probabilities", "class_ids", "predictions", "weighted_sum"}


def _dense_on(net: Any, units: int, activation: Any, reader: Any, scope: str, name: str, bias: bool = True) -> Any:
    """`net` through a Dense layer holding the checkpoint's `<scope>/kernel` (and `<scope>/bias`)."""
    layer = keras.layers.Dense(units, activation=activation, use_bias=bias, name=name)
    output = layer(net)
    layer.set_weights([reader.get_tensor(f"{scope}/kernel")] + ([reader.get_tensor(f"{scope}/bias")] if bias else []))
    return output


class CannedRecipe:
    """What a canned Estimator was built from, for its native Keras twin (kept by the Estimator)."""

    def __init__(
        self,
        kind: str,
        feature_columns: Sequence,
        n_classes: int | None = None,
        label_dimension: int | None = None,
        hidden_units: Sequence[int] = (),
        activation_fn: Callable | None = None,
        batch_norm: bool = False,
        sparse_combiner: str = "sum",
    ) -> None:
        self.kind, self.feature_columns, self.hidden_units = kind, list(feature_columns), list(hidden_units)
        self.activation_fn, self.batch_norm, self.sparse_combiner = activation_fn, batch_norm, sparse_combiner
        self.n_classes, self.label_dimension = n_classes, label_dimension

    def why_not_native(self) -> str | None:
        """Why this Estimator converts through its export only; None when it becomes native Keras layers."""
        if self.kind not in _NATIVE_KINDS:
            return f"a {self.kind} has no native Keras counterpart yet"
        linear = self.kind in _LINEAR_KINDS
        others = [column.name for column in self.feature_columns if not keras_columns.converts(column, linear)]
        if others:
            return f"these feature columns have no native Keras form here: {', '.join(others)}"
        if self.batch_norm:
            return "a DNN with batch_norm has no native Keras twin yet"
        if not linear and self.activation_fn not in _ACTIVATIONS:
            return f"the DNN's activation_fn {self.activation_fn!r} has no Keras activation of its own"
        specs: dict[str, set] = {}
        for column in self.feature_columns:
            specs.setdefault(keras_columns.source(column).key, set()).add(keras_columns.input_spec(column))
        clashing = sorted(key for key, seen in specs.items() if "/" in key or key in _OUTPUT_NAMES or len(seen) > 1)
        if clashing:
            return f"feature keys {clashing} cannot name one Keras input each (a '/', an output's name, two kinds)"
        wide = [
            column.name
            for column in self.feature_columns
            if keras_columns.kind(column) == "BucketizedColumn" and int(np.prod(column.source_column.shape)) > 1
        ]
        if linear and self.sparse_combiner != "sum" and wide:
            return f"sparse_combiner='{self.sparse_combiner}' over the multi-valued bucketized columns {wide}"
        return None

    def native(self) -> bool:
        return self.why_not_native() is None

    @property
    def _units(self) -> int:
        if self.kind in _REGRESSORS:
            return self.label_dimension or 1
        return 1 if self.n_classes == 2 else int(self.n_classes or 2)

    def build(self, reader: tf.train.CheckpointReader) -> keras.Model:
        """The model as Keras 3 layers, with the checkpoint's weights: one Input per feature key."""
        specs = {keras_columns.source(column).key: keras_columns.input_spec(column) for column in self.feature_columns}
        inputs = {key: keras.Input(shape=shape, dtype=dtype, name=key) for key, (shape, dtype) in sorted(specs.items())}
        logits = self._linear_logits(inputs, reader) if self.kind in _LINEAR_KINDS else self._dnn_logits(inputs, reader)
        return keras.Model(inputs, self._head_outputs(logits), name=self.kind.lower())

    def _dnn_logits(self, inputs: dict, reader: tf.train.CheckpointReader) -> Any:
        """DenseFeatures' concatenation (the columns sorted by name, each its block of the first kernel's rows)
        through the hidden layers and the logits."""
        parts, rows, offset = [], [], 0
        for column in sorted(self.feature_columns, key=lambda column: column.name):
            table = None
            if keras_columns.kind(column) == "EmbeddingColumn":
                scope = tf_internals.column_scope_name(column.name)
                table = reader.get_tensor(f"dnn/input_from_feature_columns/input_layer/{scope}/embedding_weights")
            piece = keras_columns.part(column, inputs, table)
            parts.append(piece.tensor)
            rows += [None if row is None else offset + row for row in piece.rows]
            offset += keras_columns.tf_width(column)
        net = parts[0] if len(parts) == 1 else keras.layers.Concatenate()(parts)
        activation = _ACTIVATIONS[self.activation_fn]
        for index, units in enumerate(self.hidden_units):
            scope = f"dnn/hiddenlayer_{index}"
            kernel = reader.get_tensor(f"{scope}/kernel")
            if index == 0:
                kernel = keras_columns.weights_for(rows, kernel)
            layer = keras.layers.Dense(units, activation=activation, name=f"hiddenlayer_{index}")
            net = layer(net)
            layer.set_weights([kernel, reader.get_tensor(f"{scope}/bias")])
        return _dense_on(net, self._units, None, reader, "dnn/logits", "logits")

    def _linear_logits(self, inputs: dict, reader: tf.train.CheckpointReader) -> Any:
        """Every column's weighted sum (its values, buckets or categories times its weights), plus the bias,
        which the first column's layer holds."""
        terms = []
        for index, column in enumerate(sorted(self.feature_columns, key=lambda column: column.name)):
            piece = keras_columns.part(column, inputs)
            weights = reader.get_tensor(f"linear/linear_model/{tf_internals.column_scope_name(column.name)}/weights")
            layer = keras.layers.Dense(self._units, use_bias=index == 0, name=f"{column.name}_weights")
            terms.append(layer(piece.tensor))
            bias = [reader.get_tensor("linear/linear_model/bias_weights")] if index == 0 else []
            layer.set_weights([keras_columns.weights_for(piece.rows, weights)] + bias)
        return terms[0] if len(terms) == 1 else keras.layers.Add(name="weighted_sum")(terms)

    def _head_outputs(self, logits: Any) -> dict:
        if self.kind in _REGRESSORS:
            return {"predictions": keras.layers.Identity(name="predictions")(logits)}
        if self.n_classes == 2:
            logistic = keras.layers.Activation("sigmoid", name="logistic")(logits)
            probabilities = keras.layers.Concatenate(name="probabilities")([1 - logistic, logistic])
            class_ids = keras.ops.cast(keras.ops.greater(logits, 0.0), "int64")
            return {"logits": logits, "logistic": logistic, "probabilities": probabilities, "class_ids": class_ids}
        probabilities = keras.layers.Softmax(name="probabilities")(logits)
        class_ids = keras.ops.expand_dims(keras.ops.argmax(logits, axis=-1), -1)
        return {"logits": logits, "probabilities": probabilities, "class_ids": class_ids}


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m compat.estimator.to_keras EXPORT_DIR OUT.keras`: an export as a saved Keras model."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or not args[1].endswith(".keras"):
        print(
            "usage: python -m compat.estimator.to_keras EXPORT_DIR OUT.keras  (an Estimator's SavedModel "
            "export; in Python, compat.estimator.to_keras(estimator) converts the Estimator itself)",
            file=sys.stderr,
        )
        return 2
    export_dir, out = args
    if not tf.saved_model.contains_saved_model(export_dir):
        print(
            f"to_keras: {export_dir} holds no SavedModel: give an export folder (export/<name>/<timestamp>)",
            file=sys.stderr,
        )
        return 2
    model = from_export(export_dir)
    model.save(out)
    print(
        f"{out}: the export's serving signature as a Keras model (inputs {sorted(model.input)}); it reads "
        f"{export_dir}, so keep that folder. Load it after `import compat.estimator` with "
        "keras.saving.load_model(path, safe_mode=False), as Keras asks for a layer over a SavedModel"
    )
    return 0


__all__ = ["from_export", "to_keras"]

if __name__ == "__main__":
    sys.exit(main())
