"""The Keras classes a converted Estimator is made of, registered so its `.keras` file loads again.

A model from `to_keras` saves with Keras' own format; loading it needs these classes known to Keras, which
`import compat.estimator.to_keras` does (or `custom_objects=compat.estimator.keras_twin.CUSTOM_OBJECTS`).
`to_keras(..., portable=True)`'s core holds none of them: it loads with Keras alone, on any backend.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from compat.core.errors import UserError

_PACKAGE = "compat.estimator"


def parameter_name(key: str) -> str:
    """`key` as a Python parameter name (`class` -> `class_`, `a/b` -> `a_b`): TensorFlow makes a SavedModel
    signature's input keys its function's parameters, and refuses any other."""
    name = re.sub(r"\W", "_", key)
    name = f"_{name}" if name[:1].isdigit() else name
    return f"{name}_" if keyword.iskeyword(name) or not name else name


def parameter_names(keys: Iterable[str]) -> dict[str, str]:
    """{key: a distinct parameter name}: a key that is one keeps it, the others get `parameter_name`'s,
    with `_` added while another key has it (`a/b` and `a_b`, `class` and `class_`)."""
    keys = list(keys)
    taken = {key for key in keys if parameter_name(key) == key}
    names = {}
    for key in keys:
        name = parameter_name(key)
        if name != key:
            while name in taken:
                name += "_"
            taken.add(name)
        names[key] = name
    return names


def rename_inputs(signature: Any, names: dict[str, str]) -> None:
    """Renames a SavedModel SignatureDef's input keys in place: {current key: new key}."""
    for key in [key for key in signature.inputs if names.get(key, key) != key]:
        signature.inputs[names[key]].CopyFrom(signature.inputs.pop(key))


def as_keras_data(data: Any) -> Any:
    """What Estimator users fed an input_fn, as Keras' data adapters take it: NumPy arrays of strings and
    bytes (Keras knows no such dtype) and pandas columns of them as string tensors, lists as arrays, a
    DataFrame as its columns; other values (arrays of numbers, tensors, datasets) unchanged. Only on the
    TensorFlow backend, the one that has string tensors."""
    if hasattr(data, "columns") and hasattr(data, "items"):  # a pandas DataFrame: its columns by name
        data = dict(data.items())
    if isinstance(data, dict):
        return {key: as_keras_data(value) for key, value in data.items()}
    if isinstance(data, list | tuple) or hasattr(data, "to_numpy"):
        data = np.asarray(data)
    if isinstance(data, np.ndarray) and data.dtype.kind in "USO" and keras.backend.backend() == "tensorflow":
        return tf.constant(data.astype(object) if data.dtype.kind == "O" else data)
    return data


class FrozenModelError(UserError, ValueError):
    """`fit` on a converted model with nothing to train (an export's)."""


@keras.saving.register_keras_serializable(package=_PACKAGE)
class EstimatorModel(keras.Model):
    """A converted Estimator: a functional Keras model whose `fit`, `evaluate` and `predict` also take what
    its users passed the Estimator (see `as_keras_data`): {"colour": np.array(["red", ...])} included."""

    def _data(self, x: Any) -> Any:
        """`x` as Keras takes it, without the features this model does not read (an Estimator's input_fn
        gave them all; Keras warns of every extra key)."""
        if isinstance(x, dict) and isinstance(self.input, dict):
            x = {key: value for key, value in x.items() if key in self.input}
        return as_keras_data(x)

    def fit(self, x: Any = None, y: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not self.trainable_weights:
            raise FrozenModelError(
                f"{self.name} has no weights to train: a model converted through its export is frozen (an "
                "export's graph gives no gradients); train layers of your own on its outputs, or convert the "
                "Estimator natively"
            )
        validation = kwargs.get("validation_data")
        if isinstance(validation, tuple | list) and validation:
            kwargs["validation_data"] = (self._data(validation[0]), *validation[1:])
        return super().fit(self._data(x), y, *args, **kwargs)

    def evaluate(self, x: Any = None, y: Any = None, *args: Any, **kwargs: Any) -> Any:
        return super().evaluate(self._data(x), y, *args, **kwargs)

    def predict(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        return super().predict(self._data(x), *args, **kwargs)

    def predict_on_batch(self, x: Any) -> Any:
        return super().predict_on_batch(self._data(x))


@keras.saving.register_keras_serializable(package=_PACKAGE)
class CrossedHashing(keras.layers.HashedCrossing):
    """Keras' HashedCrossing over any number of features (TF's cross takes any; Keras' layer checks for two
    in its output shape only): a crossed column of three keys or more."""

    def compute_output_shape(self, input_shape: Any) -> Any:
        return super().compute_output_shape(list(input_shape[:2]))


@keras.saving.register_keras_serializable(package=_PACKAGE)
class ExportSignature(keras.layers.TFSMLayer):
    """Keras' TFSMLayer, called as an Estimator export's signature is: with its inputs by name (the
    signature's arguments are keywords; TFSMLayer passes one positional argument), in the export's own
    dtypes (a float64 placeholder gets float64, not Keras' float32). Inference only (frozen)."""

    def __init__(self, *args: Any, renamed: dict[str, str] | None = None, **kwargs: Any) -> None:
        """`renamed`: {input key: the signature's name for it}, for a copy of an export whose input keys
        were renamed so Python takes them as keywords (`class` -> `class_`). Frozen: gradients do not reach
        an export's variables through its graph (Keras would train copies that the graph never reads)."""
        kwargs["trainable"] = False
        super().__init__(*args, **kwargs)
        self.autocast = False  # Keras would cast every float input to float32 before `call`
        self.renamed = dict(renamed or {})

    def get_config(self) -> dict:
        return {**super().get_config(), "renamed": self.renamed}

    def call(self, inputs: dict, training: bool = False) -> Any:
        del training  # an export serves one mode
        return self.call_endpoint_fn(**{self.renamed.get(key, key): value for key, value in inputs.items()})


CUSTOM_OBJECTS = {f"{_PACKAGE}>{cls.__name__}": cls for cls in (EstimatorModel, CrossedHashing, ExportSignature)}
