"""The serving export of a converted Keras model, with the Estimator export's signatures.

Serving clients of an Estimator call its SavedModel by signature name (`serving_default`,
`classification`, `regression`, `predict`), method (TF Serving's Classify, Regress, Predict APIs), input
keys (`inputs`/`examples` for serialized tf.Examples, or the raw feature keys) and output keys. After
`to_keras`, a team exports the Keras model with `export_keras_saved_model(model, base, like=estimator_export,
estimator=estimator)`, and the new export answers the same calls: each signature of the Estimator's
export is rebuilt over the Keras model, taking the same inputs (parsing tf.Examples with the
Estimator's feature columns' parse spec where the export did) and giving the same outputs, with the same
method names. The Keras model stays pure Keras; the parsing and the string `classes` live in the
export's serving functions only.
"""

from __future__ import annotations

import os
import time
from typing import Any

import keras
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from compat.core import atomic
from compat.estimator.keras_canned import ConversionError
from compat.estimator.keras_twin import parameter_names, rename_inputs

_CLASSIFY = "tensorflow/serving/classify"
_REGRESS = "tensorflow/serving/regress"


def signatures_of(export_dir: str) -> dict[str, tuple[str, dict[str, tf.TensorSpec], list[str]]]:
    """{signature name: (method name, {input key: spec}, sorted output keys)} of a SavedModel's serving graph."""
    saved = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(export_dir, "saved_model.pb"), "rb") as file:
        saved.ParseFromString(file.read())
    graph = next(meta for meta in saved.meta_graphs if "serve" in meta.meta_info_def.tags)
    found = {}
    for name, signature in graph.signature_def.items():
        inputs = {
            key: tf.TensorSpec(
                [None if dim.size < 0 else dim.size for dim in info.tensor_shape.dim],
                tf.dtypes.as_dtype(info.dtype),
                name=key,
            )
            for key, info in signature.inputs.items()
        }
        found[name] = (signature.method_name, inputs, sorted(signature.outputs))
    return found


def _parsed(serialized: tf.Tensor, parse_spec: dict, model: keras.Model) -> dict:
    """The Keras model's inputs from serialized tf.Examples: one value per example for a variable-length
    feature (a missing one reads as empty, which every lookup takes as unknown)."""
    parsed = tf.io.parse_example(serialized, parse_spec)
    one_each = tf.stack([tf.cast(tf.shape(serialized)[0], tf.int64), 1])  # [examples, 1]
    features = {}
    for key, tensor in model.input.items():
        value = parsed[key]
        if isinstance(value, tf.SparseTensor):
            first = tf.sparse.slice(value, [0, 0], one_each)
            first = tf.SparseTensor(first.indices, first.values, one_each)
            value = tf.sparse.to_dense(first, default_value="" if value.dtype == tf.string else 0)
        if value.dtype == tf.string and tensor.dtype != tf.string:  # a raw feature a cross reads (as bytes)
            value = tf.strings.to_number(value, out_type=tensor.dtype)
        features[key] = tf.reshape(tf.cast(value, tensor.dtype), [-1, *tensor.shape[1:]])
    return features


def _outputs(predicted: dict, method: str, label_vocabulary: Any) -> dict:
    """Every output a canned head's export gave, by the method's keys (`classes` is all classes in Classify)."""
    if method == _REGRESS:
        return {"outputs": predicted["logistic"] if "logistic" in predicted else predicted["predictions"]}
    if "probabilities" not in predicted:  # a regressor's Predict
        return dict(predicted)
    probabilities = predicted["probabilities"]
    classes = int(probabilities.shape[-1])
    vocabulary = tf.constant(list(label_vocabulary) if label_vocabulary else [str(i) for i in range(classes)])
    rows = tf.shape(probabilities)[0]
    all_classes = tf.tile(vocabulary[None], [rows, 1])
    if method == _CLASSIFY:
        return {"classes": all_classes, "scores": probabilities}
    class_ids = tf.cast(predicted["class_ids"], tf.int64)
    return {
        **predicted,
        "class_ids": class_ids,
        "classes": tf.gather(vocabulary, class_ids),
        "all_class_ids": tf.tile(tf.range(classes)[None], [rows, 1]),
        "all_classes": all_classes,
    }


def export_keras_saved_model(model: keras.Model, export_dir_base: str, *, like: str, estimator: Any = None) -> str:
    """Exports `model` (from `to_keras`) with the signatures of the Estimator export `like`.

    Args:
      model: a native Keras model from `to_keras` (dict outputs named as the Estimator's predictions).
      export_dir_base: the folder the export goes into, as a `<timestamp>` folder (as Estimator exports).
      like: the Estimator's SavedModel export whose signatures clients call.
      estimator: the Estimator, for its feature columns' parse spec (an export that parses tf.Examples) and
        its label vocabulary (the `classes` outputs).

    Returns:
      The new export's folder, written whole or not at all.

    Raises:
      ConversionError (a ValueError): the model is not a native conversion, `like` holds no SavedModel,
        or the export parses tf.Examples and no Estimator with feature columns was given.
    """
    if not tf.saved_model.contains_saved_model(like):
        raise ConversionError(f"{like} holds no SavedModel: give the Estimator's export (export/<name>/<timestamp>)")
    if not isinstance(model.output, dict):
        raise ConversionError("export_keras_saved_model takes a model to_keras built natively (outputs by name)")
    recipe = estimator.keras_recipe if estimator is not None else None
    columns = (recipe.dnn_columns + recipe.linear_columns) if recipe is not None else ()
    parse_spec, why_not = _parse_spec(columns)
    functions, methods, keys = {}, {}, {}
    for name, (method, inputs, outputs) in signatures_of(like).items():
        functions[name] = _serving_function(model, method, inputs, outputs, (parse_spec, why_not), recipe, name)
        methods[name], keys[name] = method, sorted(inputs)
    final = os.path.join(export_dir_base, str(int(time.time())))
    while os.path.exists(final):
        final = os.path.join(export_dir_base, str(int(os.path.basename(final)) + 1))

    def build(folder: str) -> None:
        holder = tf.Module()
        holder.model = model  # the weights and lookup tables the functions read are saved with them
        tf.saved_model.save(holder, folder, signatures=functions)
        _set_signature_details(folder, methods, keys)

    os.makedirs(export_dir_base, exist_ok=True)
    return atomic.publish_folder(final, build)


def _parse_spec(columns: tuple) -> tuple[dict | None, str]:
    """How the columns parse tf.Examples, and else why not: no columns given, or no one way (a numeric
    feature that a cross also reads raw: TF 2.15 could not export it parsing tf.Examples either)."""
    if not columns:
        return None, "pass estimator= (its feature columns)"
    try:
        return tf.feature_column.make_parse_example_spec(columns), ""
    except ValueError as error:
        return None, f"its feature columns do not parse tf.Examples ({error})"


def _serving_function(
    model: keras.Model, method: str, inputs: dict, outputs: list, parsing: tuple, recipe: Any, name: str
) -> Any:
    """One signature's concrete function over the Keras model (`parsing`: `_parse_spec`'s answer)."""
    parse_spec, why_not = parsing
    keys = sorted(inputs)
    baseline = list(model.input) == ["batch"]  # a Baseline's model reads only how many examples come
    examples = len(keys) == 1 and inputs[keys[0]].dtype == tf.string and keys[0] not in model.input
    if examples and parse_spec is None and not baseline:
        raise ConversionError(f"signature '{name}' parses tf.Examples: {why_not}")
    missing = [key for key in model.input if not (examples or baseline) and key not in inputs]
    if missing:
        raise ConversionError(f"signature '{name}' gives no {missing}, which the Keras model reads")
    vocabulary = recipe.label_vocabulary if recipe is not None else None

    # named as Python parameters (`class` -> `class_`); `_set_signature_details` gives back the keys
    names = parameter_names(keys)

    @tf.function(input_signature=[tf.TensorSpec(inputs[key].shape, inputs[key].dtype, names[key]) for key in keys])
    def serve(*tensors: tf.Tensor) -> dict:
        given = dict(zip(keys, tensors))
        if baseline:
            features = {"batch": tf.zeros(tf.stack([tf.shape(tensors[0])[0], 1]))}
        elif examples:
            features = _parsed(given[keys[0]], parse_spec, model)
        else:
            features = {key: tf.cast(given[key], tensor.dtype) for key, tensor in model.input.items()}
        everything = _outputs(model(features, training=False), method, vocabulary)
        unknown = sorted(set(outputs) - set(everything))
        if unknown:
            raise ConversionError(f"signature '{name}' gives {unknown}, which the Keras model does not compute")
        return {key: everything[key] for key in outputs}

    return serve.get_concrete_function()


def _set_signature_details(folder: str, methods: dict[str, str], keys: dict[str, list[str]]) -> None:
    """TF Serving's method names (tf.saved_model.save writes Predict's for every signature), and each
    signature's input keys as the Estimator's export named them (saved under Python parameter names)."""
    path = os.path.join(folder, "saved_model.pb")
    saved = saved_model_pb2.SavedModel()
    with open(path, "rb") as file:
        saved.ParseFromString(file.read())
    for meta in saved.meta_graphs:
        for name, method in methods.items():
            if name not in meta.signature_def:
                continue
            signature = meta.signature_def[name]
            signature.method_name = method
            rename_inputs(signature, {parameter: key for key, parameter in parameter_names(keys[name]).items()})
    with open(path, "wb") as file:
        file.write(saved.SerializeToString())
