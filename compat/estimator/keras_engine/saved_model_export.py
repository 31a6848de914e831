"""SavedModel exports of the Keras engine: what the serving receiver describes, with TF 2.15's names.

A `serving_input_receiver_fn` is graph-mode code (placeholders, `parse_example`,
preprocessing). It is run once inside `tf.compat.v1.wrap_function` and pruned
to a function from its receiver tensors to its features (TensorFlow's own
migration path for graph code); the export's signature takes the receiver
tensors (a parsing receiver: serialized tf.Examples under `examples`), feeds
the receiver's features to the Keras model, and returns the model's outputs
keyed by their output layers' names. As TF 2.15, the SavedModel has
`serving_default`, plus one signature per `export_outputs` entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import keras
import tensorflow as tf

from compat.estimator import export as export_lib


def _model_input_receiver(model: keras.Model) -> Callable:
    """A raw receiver of the model's own inputs: the export when no receiver function is given."""
    specs = {tensor.name: tf.TensorSpec(tensor.shape, tensor.dtype) for tensor in model.inputs}
    return export_lib.build_raw_serving_input_receiver_fn(specs)


def _receiver_as_function(serving_input_receiver_fn: Callable) -> tuple[Any, list[str], list[tf.TensorSpec]]:
    """(a function receiver tensors -> features, the receiver tensors' names, their specs)."""
    made = {}

    def build() -> None:
        made["receiver"] = serving_input_receiver_fn()

    wrapped = tf.compat.v1.wrap_function(build, signature=[])
    receiver = made["receiver"]
    names = sorted(receiver.receiver_tensors)
    feeds = [wrapped.graph.get_tensor_by_name(receiver.receiver_tensors[name].name) for name in names]
    features = receiver.features
    if isinstance(receiver, export_lib.TensorServingInputReceiver):
        features = {"feature": features}
    # The features were made in the wrapped graph: tensors, or SparseTensors from a parsing receiver's
    # VarLenFeatures (every categorical column's), which `prune` takes as they are.
    pruned = wrapped.prune(feeds=feeds, fetches=dict(features))
    specs = [
        tf.TensorSpec(receiver.receiver_tensors[name].shape, receiver.receiver_tensors[name].dtype, name=name)
        for name in names
    ]
    return pruned, names, specs


def save_with_receiver(
    model: keras.Model,
    folder: str,
    serving_input_receiver_fn: Callable | None,
    model_inputs: Callable[[Any], Any],
    output_names: list[str],
    export_outputs: Mapping[str, type] | None = None,
) -> None:
    """Writes the SavedModel into `folder` (which may exist and be empty)."""
    receiver_fn = serving_input_receiver_fn or _model_input_receiver(model)
    to_features, names, specs = _receiver_as_function(receiver_fn)

    def serve(*tensors):
        features = to_features(*tensors)
        if set(features) == {"feature"} and len(model.inputs) == 1:
            inputs = features["feature"]
        else:
            inputs = model_inputs(features)
        outputs = tf.nest.flatten(model(inputs, training=False))
        return dict(zip(output_names, outputs))

    function = tf.function(serve, input_signature=specs).get_concrete_function()
    signatures = {tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: function}
    for name, output in dict(export_outputs or {}).items():
        if output is not export_lib.PredictOutput and not isinstance(output, export_lib.PredictOutput):
            raise NotImplementedError(
                f"export_outputs['{name}']: only PredictOutput signatures are exported for a "
                f"Keras model by compat.estimator, given {output!r}"
            )
        signatures[name] = function
    module = tf.Module()
    # Every variable the function reads goes with it (weights, and states such as random seeds).
    module.variables_of_model = [
        variable.value if hasattr(variable, "value") else variable for variable in model.variables
    ]
    module.resources_of_model = [resource for layer in _layers(model) for resource in _lookup_resources(layer)]
    tf.saved_model.save(module, folder, signatures=signatures)


def _layers(layer: keras.layers.Layer) -> list[keras.layers.Layer]:
    """`layer` and every layer inside it."""
    inner = getattr(layer, "layers", None) or []
    return [layer, *(nested for child in inner for nested in _layers(child))]


def _lookup_resources(layer: keras.layers.Layer) -> list:
    return list(getattr(layer, "lookup_resources", None) or [])
