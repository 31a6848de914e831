"""Input receivers: what an export's signatures are fed and what the model_fn gets from it.

A serving input receiver function is called while an export graph is built and
returns a `ServingInputReceiver`: the tensors a request feeds
(`receiver_tensors`, keyed by input name) and the `features` the model_fn is
called with. Features and receiver tensors may be one tensor (keyed
`feature` / `input`) or a dict; each must be a Tensor, SparseTensor or
RaggedTensor, as TF 2.15 checked.

Supervised receivers (`build_raw_supervised_input_receiver_fn`) feed labels
too: `experimental_export_all_saved_models` uses them for its train and eval
graphs.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from compat.core.tf_internals import export_utils

SINGLE_FEATURE_KEY = export_utils.SINGLE_FEATURE_DEFAULT_NAME  # "feature"
SINGLE_RECEIVER_KEY = export_utils.SINGLE_RECEIVER_DEFAULT_NAME  # "input"
SINGLE_LABEL_KEY = export_utils.SINGLE_LABEL_DEFAULT_NAME  # "label"
_SINGLE_KEYS = {
    "feature": SINGLE_FEATURE_KEY,
    "label": SINGLE_LABEL_KEY,
    "receiver_tensor": SINGLE_RECEIVER_KEY,
    "receiver_tensors_alternative": SINGLE_RECEIVER_KEY,
}


def _is_input_tensor(value: Any) -> bool:
    if isinstance(value, (tf.Tensor, tf.sparse.SparseTensor, tf.RaggedTensor)):
        return True
    if not hasattr(value, "tensor"):  # a wrapper of a tensor (a labeled tensor) passes if it converts
        return False
    try:
        tf.convert_to_tensor(value)
    except TypeError:
        return False
    return True


def checked_tensors(tensors: Any, field: str, allow_int_keys: bool = False) -> dict:
    """`tensors` as a dict (one tensor keyed by its field's default name), each a Tensor, SparseTensor or
    RaggedTensor keyed by a string (or an int, where allowed)."""
    if tensors is None:
        raise ValueError(f"{field}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {_SINGLE_KEYS[field]: tensors}
    for name, tensor in tensors.items():
        if not isinstance(name, str) and not (allow_int_keys and isinstance(name, int)):
            raise ValueError(f"{field} keys must be strings{' or ints' if allow_int_keys else ''}: {name}.")
        if not _is_input_tensor(tensor):
            raise ValueError(f"{field} {name} must be a Tensor, SparseTensor, or RaggedTensor.")
    return tensors


class ServingInputReceiver(
    collections.namedtuple("ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"])
):
    """Features for the model_fn and the tensors a serving request feeds (tf.estimator.export)."""

    def __new__(cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None):
        features = checked_tensors(features, "feature", allow_int_keys=True)
        receiver_tensors = checked_tensors(receiver_tensors, "receiver_tensor")
        if receiver_tensors_alternatives is not None:
            if not isinstance(receiver_tensors_alternatives, dict):
                raise ValueError(f"receiver_tensors_alternatives must be a dict: {receiver_tensors_alternatives}.")
            receiver_tensors_alternatives = {
                name: checked_tensors(tensors, "receiver_tensors_alternative")
                for name, tensors in receiver_tensors_alternatives.items()
            }
        return super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)


class TensorServingInputReceiver(
    collections.namedtuple(
        "TensorServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"]
    )
):
    """As ServingInputReceiver, but `features` is one tensor handed to the model_fn as it is, not in a dict."""

    def __new__(cls, features: Any, receiver_tensors: Any, receiver_tensors_alternatives: Any = None):
        if features is None:
            raise ValueError("features must be defined.")
        if not _is_input_tensor(features):
            raise ValueError("feature must be a Tensor, SparseTensor, or RaggedTensor.")
        receiver = ServingInputReceiver(features, receiver_tensors, receiver_tensors_alternatives)
        return super().__new__(
            cls,
            receiver.features[SINGLE_FEATURE_KEY],
            receiver.receiver_tensors,
            receiver.receiver_tensors_alternatives,
        )


class UnsupervisedInputReceiver(ServingInputReceiver):
    """The receiver of a prediction graph in `experimental_export_all_saved_models`: no alternatives."""

    def __new__(cls, features: Any, receiver_tensors: Any):
        return super().__new__(cls, features, receiver_tensors, None)


class SupervisedInputReceiver(
    collections.namedtuple("SupervisedInputReceiver", ["features", "labels", "receiver_tensors"])
):
    """Features, labels and the tensors that feed both: the inputs of exported train and eval graphs."""

    def __new__(cls, features: Any, labels: Any, receiver_tensors: Any):
        checked_tensors(features, "feature", allow_int_keys=True)
        checked_tensors(labels, "label", allow_int_keys=True)
        return super().__new__(cls, features, labels, checked_tensors(receiver_tensors, "receiver_tensor"))


def build_parsing_serving_input_receiver_fn(
    feature_spec: Mapping[str, Any], default_batch_size: int | None = None
) -> Callable:
    """A receiver of serialized tf.Examples under `examples`, parsed with `feature_spec`: checked when the
    receiver is called, as TF 2.15 checked it (an export that never calls it does not fail)."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        serialized = tf.compat.v1.placeholder(tf.string, [default_batch_size], name="input_example_tensor")
        features = tf.compat.v1.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    # what the Keras engine's export reads
    serving_input_receiver_fn.feature_spec = (  # type: ignore[attr-defined]
        dict(feature_spec) if isinstance(feature_spec, Mapping) else feature_spec
    )
    return serving_input_receiver_fn


def placeholder_like(value: Any, batch_size: int | None = None, name: str | None = None) -> tf.Tensor:
    """A placeholder of `value`'s dtype and shape, its first (batch) dimension `batch_size` (None: any).

    `value` may be a graph tensor (the placeholder takes its op's name, as TF
    2.15's did), an eager tensor, a TensorSpec or an array: only its dtype
    and shape are read.
    """
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        value = np.asarray(value)
    if name is None and isinstance(value, tf.Tensor) and not tf.executing_eagerly():
        try:
            name = value.op.name
        except AttributeError:
            name = None
    shape = tf.TensorShape(value.shape)
    dims = tf.TensorShape([batch_size]).concatenate(shape[1:])
    return tf.compat.v1.placeholder(tf.as_dtype(value.dtype), dims, name=name)


def _placeholders(values: Mapping, batch_size: int | None) -> dict:
    return {name: placeholder_like(value, batch_size) for name, value in values.items()}


def build_raw_serving_input_receiver_fn(features: Any, default_batch_size: int | None = None) -> Callable:
    """A receiver that feeds placeholders shaped as `features` (their batch dimension open) to the model_fn.

    `features` is a dict of tensors (TF 2.15), or one tensor (a
    TensorServingInputReceiver); arrays and TensorSpecs work as well.
    """

    def serving_input_receiver_fn():
        if isinstance(features, Mapping):
            receivers = _placeholders(features, default_batch_size)
            return ServingInputReceiver(receivers, receivers)
        receiver = placeholder_like(features, default_batch_size)
        return TensorServingInputReceiver(receiver, receiver)

    serving_input_receiver_fn.raw_features = features  # type: ignore[attr-defined]  # what the Keras engine's export reads
    return serving_input_receiver_fn


def build_raw_supervised_input_receiver_fn(
    features: Any, labels: Any, default_batch_size: int | None = None
) -> Callable:
    """A receiver that feeds placeholders shaped as `features` and `labels`, for train and eval exports.

    Features and labels share one signature's inputs, so their keys must differ.
    """
    feature_keys = list(features) if isinstance(features, Mapping) else [SINGLE_RECEIVER_KEY]
    label_keys = list(labels) if isinstance(labels, Mapping) else [SINGLE_LABEL_KEY]
    overlap = set(feature_keys) & set(label_keys)
    if overlap:
        raise ValueError(f"Features and labels must have distinct keys. Found overlapping keys: {overlap}")

    def supervised_input_receiver_fn() -> SupervisedInputReceiver:
        if isinstance(features, Mapping):
            feature_tensors = receiver_features = _placeholders(features, default_batch_size)
        else:
            feature_tensors = placeholder_like(features, default_batch_size)
            receiver_features = {SINGLE_RECEIVER_KEY: feature_tensors}
        if isinstance(labels, Mapping):
            label_tensors = receiver_labels = _placeholders(labels, default_batch_size)
        else:
            label_tensors = placeholder_like(labels, default_batch_size)
            receiver_labels = {SINGLE_LABEL_KEY: label_tensors}
        return SupervisedInputReceiver(feature_tensors, label_tensors, {**receiver_features, **receiver_labels})

    return supervised_input_receiver_fn


def build_supervised_input_receiver_fn_from_input_fn(input_fn: Callable, **input_fn_args) -> Callable:
    """A supervised receiver shaped as what `input_fn(**input_fn_args)` returns (called in a graph of its own)."""
    from compat.estimator.input_fns import split_features_labels

    with tf.Graph().as_default():
        result = input_fn(**input_fn_args)
        if isinstance(result, tf.data.Dataset):
            result = tf.compat.v1.data.make_one_shot_iterator(result).get_next()
        features, labels = split_features_labels(result)
    return build_raw_supervised_input_receiver_fn(features, labels)


build_all_signature_defs = export_utils.build_all_signature_defs
get_timestamped_export_dir = export_utils.get_timestamped_export_dir
get_temp_export_dir = export_utils.get_temp_export_dir


def write_assets_extra(folder: str, assets_extra: dict | None) -> None:
    """Copies `{relative path: source file}` into `<folder>/assets.extra/`, as TF 2.15's exports did."""
    import os
    import shutil

    for relative, source in dict(assets_extra or {}).items():
        target = os.path.join(folder, "assets.extra", os.fsdecode(relative))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.fsdecode(source), target)


def rewrite_as_text(folder: str) -> None:
    """Turns the SavedModel in `folder` into its text form (saved_model.pbtxt), which loaders read too."""
    import os

    from google.protobuf import text_format
    from tensorflow.core.protobuf import saved_model_pb2

    binary = os.path.join(folder, "saved_model.pb")
    proto = saved_model_pb2.SavedModel()
    with open(binary, "rb") as stream:
        proto.ParseFromString(stream.read())
    with open(os.path.join(folder, "saved_model.pbtxt"), "w") as stream:
        stream.write(text_format.MessageToString(proto))
    os.remove(binary)
