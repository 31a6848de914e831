"""tf.estimator.export: serving input receivers and export outputs, with TF 2.15's names.

A receiver function, called while an export graph is built, returns a
`ServingInputReceiver`: the tensors a serving request feeds (`receiver_tensors`)
and the features the model_fn gets from them. Export outputs say which
signatures the SavedModel has:

  ClassificationOutput  tensorflow/serving/classify: input `inputs` (serialized tf.Examples)
  RegressionOutput      tensorflow/serving/regress:  input `inputs` (serialized tf.Examples)
  PredictOutput         tensorflow/serving/predict:  the receiver tensors by name

A classification or regression signature needs one string input (serialized
tf.Examples); with other receivers it is left out, as TF 2.15 left it out.
"""

from __future__ import annotations

import abc
import collections
from typing import Any, Callable, Mapping

import numpy as np
import tensorflow as tf

SERVING_DEFAULT = "serving_default"
_SINGLE_FEATURE_KEY = "feature"
_SINGLE_RECEIVER_KEY = "input"
_SINGLE_OUTPUT_KEY = "output"


def _as_dict(tensors: Any, single_key: str) -> dict:
    if tensors is None:
        return {}
    return dict(tensors) if isinstance(tensors, Mapping) else {single_key: tensors}


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """Features for the model_fn and the tensors a serving request feeds (tf.estimator.export)."""

    def __new__(cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None):
        if features is None:
            raise ValueError("ServingInputReceiver: features must be given")
        features = features if isinstance(features, Mapping) else {_SINGLE_FEATURE_KEY: features}
        receiver_tensors = _as_dict(receiver_tensors, _SINGLE_RECEIVER_KEY)
        if not receiver_tensors:
            raise ValueError("ServingInputReceiver: receiver_tensors must be given")
        alternatives = {name: _as_dict(tensors, _SINGLE_RECEIVER_KEY)
                        for name, tensors in dict(receiver_tensors_alternatives or {}).items()}
        return super().__new__(cls, dict(features), receiver_tensors, alternatives)


class TensorServingInputReceiver(collections.namedtuple(
        "TensorServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])):
    """As ServingInputReceiver, but `features` is one Tensor handed to the model_fn as it is."""

    def __new__(cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None):
        if features is None or isinstance(features, Mapping):
            raise ValueError("TensorServingInputReceiver: features must be a single Tensor")
        receiver = ServingInputReceiver({_SINGLE_FEATURE_KEY: features}, receiver_tensors,
                                        receiver_tensors_alternatives)
        return super().__new__(cls, features, receiver.receiver_tensors, receiver.receiver_tensors_alternatives)


def build_parsing_serving_input_receiver_fn(feature_spec: Mapping[str, Any],
                                            default_batch_size: int | None = None) -> Callable:
    """A receiver of serialized tf.Examples under `examples`, parsed with `feature_spec`."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        serialized = tf.compat.v1.placeholder(tf.string, [default_batch_size], name="input_example_tensor")
        features = tf.compat.v1.io.parse_example(serialized, dict(feature_spec))
        return ServingInputReceiver(features, {"examples": serialized})

    serving_input_receiver_fn.feature_spec = dict(feature_spec)  # what the Keras engine's export reads
    return serving_input_receiver_fn


def _placeholder_like(value: Any, batch_size: int | None, name: str | None = None) -> tf.Tensor:
    """A placeholder of `value`'s dtype and shape, the batch dimension open (or `batch_size`).

    `value` may be an eager tensor made outside the export graph, a TensorSpec or
    an array: only its dtype and shape are read.
    """
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        value = np.asarray(value)
    shape = tf.TensorShape(value.shape)
    dims = [batch_size, *shape.as_list()[1:]] if shape.rank else (None if shape.rank is None else [])
    return tf.compat.v1.placeholder(tf.as_dtype(value.dtype), dims, name=name)


def build_raw_serving_input_receiver_fn(features: Any, default_batch_size: int | None = None) -> Callable:
    """A receiver that feeds placeholders shaped as `features` (batch dimension open) to the model."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        if isinstance(features, Mapping):
            receivers = {name: _placeholder_like(value, default_batch_size, name) for name, value in features.items()}
            return ServingInputReceiver(receivers, receivers)
        receiver = _placeholder_like(features, default_batch_size)
        return TensorServingInputReceiver(receiver, receiver)

    serving_input_receiver_fn.raw_features = features  # what the Keras engine's export reads
    return serving_input_receiver_fn


# -- export outputs ---------------------------------------------------------


class ExportOutput(abc.ABC):
    """One signature of an export (tf.estimator.export.ExportOutput)."""

    @abc.abstractmethod
    def as_signature_def(self, receiver_tensors: dict) -> Any:
        """The SignatureDef over `receiver_tensors`; ValueError when it cannot be made from them."""


def _single_string_input(receiver_tensors: dict, kind: str) -> tf.Tensor:
    if len(receiver_tensors) != 1:
        raise ValueError(f"{kind} signatures need exactly one receiver tensor, given {sorted(receiver_tensors)}")
    (tensor,) = receiver_tensors.values()
    if tensor.dtype != tf.string:
        raise ValueError(f"{kind} signatures need serialized tf.Examples (a string tensor), given {tensor.dtype.name}")
    return tensor


class ClassificationOutput(ExportOutput):
    """Scores and/or classes for serialized tf.Examples (tensorflow/serving/classify)."""

    def __init__(self, scores: tf.Tensor | None = None, classes: tf.Tensor | None = None):
        if scores is None and classes is None:
            raise ValueError("ClassificationOutput: at least one of scores and classes must be given")
        if scores is not None and not (tf.is_tensor(scores) and scores.dtype.is_floating):
            raise ValueError(f"ClassificationOutput: scores must be a float32 Tensor, given {scores!r}")
        if classes is not None and not (tf.is_tensor(classes) and classes.dtype == tf.string):
            raise ValueError(f"ClassificationOutput: classes must be a string Tensor, given {classes!r}")
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors: dict):
        examples = _single_string_input(receiver_tensors, "Classification")
        return tf.compat.v1.saved_model.classification_signature_def(examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
    """One regressed value per serialized tf.Example (tensorflow/serving/regress)."""

    def __init__(self, value: tf.Tensor):
        if not (tf.is_tensor(value) and value.dtype.is_floating):
            raise ValueError(f"RegressionOutput: value must be a float32 Tensor, given {value!r}")
        self.value = value

    def as_signature_def(self, receiver_tensors: dict):
        examples = _single_string_input(receiver_tensors, "Regression")
        return tf.compat.v1.saved_model.regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
    """Any named outputs for the receiver tensors as they are (tensorflow/serving/predict)."""

    def __init__(self, outputs: Any):
        outputs = dict(outputs) if isinstance(outputs, Mapping) else {_SINGLE_OUTPUT_KEY: outputs}
        for key, value in outputs.items():
            if not tf.is_tensor(value):
                raise ValueError(f"PredictOutput: output '{key}' must be a Tensor, given {value!r}")
        self.outputs = outputs

    def as_signature_def(self, receiver_tensors: dict):
        return tf.compat.v1.saved_model.predict_signature_def(receiver_tensors, self.outputs)


def build_all_signature_defs(receiver_tensors: dict, export_outputs: Mapping[str, ExportOutput],
                             receiver_tensors_alternatives: Mapping[str, dict] | None = None) -> dict:
    """Every signature the outputs can make from the receivers; those that cannot are left out.

    Alternative receivers add `<output>:<receiver>` signatures, as TF 2.15 did.
    """
    signatures = {}
    for output_key, output in export_outputs.items():
        try:
            signatures[output_key] = output.as_signature_def(receiver_tensors)
        except ValueError as error:
            tf.compat.v1.logging.info("Signature '%s' left out of the export: %s", output_key, error)
    for receiver_name, tensors in dict(receiver_tensors_alternatives or {}).items():
        for output_key, output in export_outputs.items():
            try:
                signatures[f"{output_key}:{receiver_name}"] = output.as_signature_def(tensors)
            except ValueError:
                pass
    if not signatures:
        raise ValueError("The export would have no signature: the export outputs "
                         f"{sorted(export_outputs)} cannot be served from receiver tensors {sorted(receiver_tensors)}")
    return signatures
