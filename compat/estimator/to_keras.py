"""From Estimator to Keras 3: a trained Estimator as a Keras model that predicts what it predicted.

    model = compat.estimator.to_keras(estimator)                     # model_to_estimator, canned
    model = compat.estimator.to_keras(estimator, serving_input_receiver_fn=receiver)   # any Estimator
    python -m compat.estimator.to_keras FOLDER OUT.keras             # an export, as a Keras model

What each kind of Estimator becomes, with the weights of its newest checkpoint (or `checkpoint_path`):

- `model_to_estimator`'s: the original Keras model (a new copy, compiled as it was) with the trained
  weights. A model folder alone does not record the architecture: pass `keras_model=` (the
  architecture, e.g. the function that built it) with the folder, TF 2.15's folders included.
- The canned DNN, Linear, DNNLinearCombined and Baseline classifiers and regressors (TF2's and
  tf.compat.v1's) over the feature columns `keras_columns` converts: a native Keras 3 model built by
  `keras_canned.NativeTwin` from the class's `CannedRecipe` (one `Input` per feature key, Keras
  preprocessing and Dense layers holding the checkpoint's weights, the head's outputs as a dict). No
  TensorFlow graph code is inside: it saves as `.keras`, loads with `keras.saving.load_model` (after
  importing this module, which registers its classes: keras_twin), and trains on with `fit` (compile it
  first); `portable=True` cuts it in two, the core for any Keras backend. The string `classes` outputs
  are left out (Keras models compute numbers); `class_ids` index the label vocabulary, and
  `export_keras_saved_model` (keras_serving.py) puts the strings back in an export.
- Any other Estimator (a custom model_fn, other canned Estimators, other feature columns): its
  SavedModel export, written with `serving_input_receiver_fn`, wrapped in `keras.layers.TFSMLayer`:
  inference with the export's serving signature (the same input and output keys and dtypes, so serving
  clients see no change); frozen (an export's graph gives its variables no gradients). A receiver is
  needed because the Estimator's export is.
  Saved as `.keras`, it still reads the export folder, and loads after `import compat.estimator.to_keras`
  with `keras.saving.load_model(path, safe_mode=False)` (Keras asks for that for SavedModel layers).

Raises ConversionError (a ValueError) naming what is missing when a conversion cannot be made.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from compat.core import atomic
from compat.estimator import keras_canned
from compat.estimator.base import EstimatorBase
from compat.estimator.keras_canned import ConversionError
from compat.estimator.keras_serving import signatures_of
from compat.estimator.keras_twin import EstimatorModel, ExportSignature, parameter_names, rename_inputs


def to_keras(
    estimator: EstimatorBase | str | os.PathLike,
    *,
    keras_model: keras.Model | None = None,
    serving_input_receiver_fn: Callable | None = None,
    checkpoint_path: str | None = None,
    export_dir_base: str | None = None,
    feature_dtypes: Mapping[str, str] | None = None,
    portable: bool = False,
    keras_2: bool | None = None,
) -> Any:
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
      feature_dtypes: the dtypes of raw features that only crossed columns read, e.g. {"hour": "int64"}
        (no column records them; default a string).
      portable: return a canned Estimator's model in two, `(preprocess, core)` (keras_canned.Portable):
        the string lookups, hashing and crosses (TensorFlow; run them in tf.data) and a core of Keras
        layers only, which loads and predicts under any Keras backend (JAX, PyTorch, TensorFlow).
      keras_2: for a model_to_estimator Estimator, a Keras 2 (tf_keras) model or (False) a Keras 3 one;
        default: the Keras the Estimator's model was made with.

    Returns:
      A Keras model (keras_twin.EstimatorModel), or with `portable` a `Portable(preprocess, core)`.

    Raises:
      ConversionError (a ValueError): a folder without `keras_model`, an Estimator that needs a
        receiver and got none, or `portable` for an Estimator that has no native conversion.
    """
    estimator = _estimator_of(estimator, keras_model)
    recipe = estimator.keras_recipe
    why_not = _why_not_native(estimator, recipe, feature_dtypes)
    if portable and why_not is not None:
        raise ConversionError(f"portable=True splits a canned Estimator's native model; {why_not}")
    if estimator.engine == "keras":
        return estimator.trained_keras_model(checkpoint_path, keras_2)
    if why_not is None and recipe is not None:
        twin = keras_canned.twin_of(recipe)
        build = twin.build_portable if portable else twin.build
        return build(_reader(estimator, checkpoint_path), feature_dtypes)
    if serving_input_receiver_fn is None:
        raise ConversionError(
            f"{why_not}: pass serving_input_receiver_fn= (as for export_saved_model) to convert its export, "
            "which keeps the serving signature"
        )
    base = export_dir_base or tempfile.mkdtemp(prefix="to_keras-")
    export_dir = os.fsdecode(
        estimator.export_saved_model(base, serving_input_receiver_fn, checkpoint_path=checkpoint_path)
    )
    tf.compat.v1.logging.info("to_keras: the Keras model reads the export %s; keep that folder", export_dir)
    return from_export(export_dir)


def from_export(export_dir: str, signature: str | None = None) -> keras.Model:
    """A Keras model over a SavedModel export's `signature`: the same input keys (one `Input` each, named
    as the signature names them) and output keys. Inference only (TFSMLayer), the export itself must stay.

    Args:
        export_dir: the SavedModel.
        signature: its name; by default `serving_default`, else the export's only signature (a canned
            Estimator exported with raw placeholders has only `predict`).

    Raises:
        ConversionError: no such signature, or several and none named.
    """
    export_dir, renamed = _keyword_safe(export_dir)
    # the names from the SavedModel's proto (the layer below loads the export itself, once)
    names = sorted(name for name in signatures_of(export_dir) if not name.startswith("__"))
    if signature is None:
        signature = "serving_default" if "serving_default" in names or len(names) != 1 else names[0]
    if signature not in names:
        raise ConversionError(f"{export_dir} has no signature '{signature}'; it has {names}: name one (signature=NAME)")
    layer = ExportSignature(export_dir, call_endpoint=signature, renamed=renamed)
    specs = layer.call_endpoint_fn.structured_input_signature[1]
    original = {new: key for key, new in renamed.items()}
    inputs = {
        original.get(name, name): keras.Input(
            shape=spec.shape[1:], dtype=spec.dtype.name, name=original.get(name, name).replace("/", "_")
        )
        for name, spec in specs.items()
    }
    return EstimatorModel(inputs, layer(inputs), name="estimator_export")


def _estimator_of(given: Any, keras_model: keras.Model | None) -> EstimatorBase:
    """The Estimator `to_keras` was given, or the model_to_estimator Estimator of a folder given by path."""
    if isinstance(given, str | os.PathLike):
        return _folder_estimator(os.fspath(given), keras_model)
    if not isinstance(given, EstimatorBase):
        raise ConversionError(
            f"to_keras converts an Estimator of compat.estimator (or a model_to_estimator folder with "
            f"keras_model=), given {type(given).__name__}"
        )
    return given


def _folder_estimator(folder: str, keras_model: keras.Model | None) -> EstimatorBase:
    """The model_to_estimator Estimator of a model folder given by path, with its architecture."""
    from compat.estimator.keras_engine import model_to_estimator

    if tf.train.latest_checkpoint(folder) is None:
        raise ConversionError(f"{folder} holds no checkpoint: give the model folder of a trained Estimator")
    if keras_model is None:
        raise ConversionError(
            f"{folder}: a model folder does not record its model's architecture: pass "
            "keras_model= (the compiled Keras model the folder was trained from), or the Estimator itself"
        )
    return model_to_estimator(keras_model=keras_model, model_dir=folder)


def _why_not_native(estimator: EstimatorBase, recipe: Any, feature_dtypes: Mapping[str, str] | None) -> str | None:
    """Why `estimator` has no native Keras twin (None: it has one)."""
    if recipe is not None:
        return keras_canned.twin_of(recipe).why_not_native(feature_dtypes)
    if estimator.engine == "keras":
        return "a model_to_estimator Estimator gives back the Keras model it was made from"
    kind = type(estimator).__name__
    article = "an" if kind[:1] in "AEIOU" else "a"
    return f"{article} {kind} has no native Keras counterpart"


def _keyword_safe(export_dir: str) -> tuple[str, dict[str, str]]:
    """`export_dir`, or a copy of it that TensorFlow's loader takes, with {input key: its name in the copy}.
    The loader refuses a whole export with an input key like `class` (a keyword), renamed in the copy, and one
    of several meta graphs unless told which (a TPUEstimator's export holds `serve` and `serve, tpu`): the copy
    holds the `serve` one alone. The copy is `<export_dir>-renamed-inputs` or `<export_dir>-serving` (its files
    hard links where the file system allows; made once, whole or not at all), else a new temporary folder; the
    model reads it from then on, which a warning says."""
    path = os.path.join(export_dir, "saved_model.pb")
    if not tf.io.gfile.exists(path):
        return export_dir, {}
    proto = saved_model_pb2.SavedModel.FromString(tf.io.gfile.GFile(path, "rb").read())
    serving = [meta_graph for meta_graph in proto.meta_graphs if set(meta_graph.meta_info_def.tags) == {"serve"}]
    serving_only = len(proto.meta_graphs) > 1 and bool(serving)
    if serving_only:
        kept = serving[0]
        del proto.meta_graphs[:]
        proto.meta_graphs.append(kept)
    signatures = [signature for meta_graph in proto.meta_graphs for signature in meta_graph.signature_def.values()]
    names = parameter_names(sorted({key for signature in signatures for key in signature.inputs}))
    renamed = {key: name for key, name in names.items() if name != key}
    if not renamed and not serving_only:
        return export_dir, {}
    for signature in signatures:
        rename_inputs(signature, renamed)

    def build(folder: str) -> None:
        shutil.copytree(export_dir, folder, dirs_exist_ok=True, copy_function=atomic.link_or_copy)
        os.remove(os.path.join(folder, "saved_model.pb"))  # a link to the original: not written through
        with open(os.path.join(folder, "saved_model.pb"), "wb") as file:
            file.write(proto.SerializeToString())

    copy = os.path.normpath(export_dir) + ("-renamed-inputs" if renamed else "-serving")
    if not tf.saved_model.contains_saved_model(copy):
        try:
            atomic.publish_folder(copy, build)
        except OSError:  # the export's folder is read-only: a temporary one
            copy = tempfile.mkdtemp(prefix="to_keras-renamed-")
            build(copy)
    why = (
        f"names inputs {sorted(renamed)} that Python cannot take as parameters"
        if renamed
        else "holds several meta graphs (a TPU one among them)"
    )
    tf.compat.v1.logging.warning(
        "to_keras: %s %s; the Keras model reads %s, a copy with the serving meta graph alone and its inputs "
        "named as Python takes them (the model's inputs keep their names): keep that folder",
        export_dir,
        why,
        copy,
    )
    return copy, renamed


def _reader(estimator: Any, checkpoint_path: str | None) -> tf.train.CheckpointReader:
    path = checkpoint_path or estimator.latest_checkpoint()
    if path is None:
        raise ConversionError(f"{estimator.model_dir} holds no checkpoint: train the Estimator first")
    return tf.train.load_checkpoint(path)


def newest_export(folder: str) -> str | None:
    """`folder` if it is a SavedModel, else the newest export under it (`export/<name>/<timestamp>`, as
    `train_and_evaluate`'s exporters and `export_saved_model(model_dir + '/export', ...)` wrote them)."""
    if tf.saved_model.contains_saved_model(folder):
        return folder
    found = []
    for root, folders, _ in os.walk(folder):
        found += [os.path.join(root, name) for name in folders if name.isdigit()]
    exports = [path for path in found if tf.saved_model.contains_saved_model(path)]
    return max(exports, key=lambda path: (int(os.path.basename(path)), path)) if exports else None


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m compat.estimator.to_keras FOLDER OUT.keras [--signature=NAME]`: an export (or a model folder's
    newest export) as a saved Keras model, over its `serving_default` signature, else its only one, else NAME.
    Exit 2 with one line, and nothing written, when it cannot convert."""
    args = list(sys.argv[1:] if argv is None else argv)
    signature = next((arg.split("=", 1)[1] for arg in args if arg.startswith("--signature=")), None)
    args = [arg for arg in args if not arg.startswith("--signature=")]
    if len(args) != 2 or not args[1].endswith(".keras"):
        print(
            "usage: python -m compat.estimator.to_keras FOLDER OUT.keras [--signature=NAME]  (an Estimator's "
            "SavedModel export, "
            "or a model folder holding exports; in Python, compat.estimator.to_keras(estimator) converts the "
            "Estimator itself, natively where it can)",
            file=sys.stderr,
        )
        return 2
    folder, out = args
    export_dir = newest_export(folder) if os.path.isdir(folder) else None
    if export_dir is None:
        print(
            f"to_keras: {folder} holds no SavedModel export; a model folder does not record its model's "
            "architecture: export it first (estimator.export_saved_model) or convert the Estimator in Python "
            "with compat.estimator.to_keras(estimator)",
            file=sys.stderr,
        )
        return 2
    try:
        model = from_export(export_dir, signature)
    except ValueError as error:
        print(f"to_keras: {error}", file=sys.stderr)
        return 2
    atomic.write_file(out, model.save)
    reads = next(layer.filepath for layer in model.layers if isinstance(layer, ExportSignature))
    print(
        f"{out}: the export {export_dir}'s serving signature as a Keras model (inputs {sorted(model.input)}); "
        f"it reads {reads}, so keep that folder. Load it after `import compat.estimator.to_keras` with "
        "keras.saving.load_model(path, safe_mode=False), as Keras asks for a layer over a SavedModel"
    )
    return 0


__all__ = ["from_export", "to_keras"]

if __name__ == "__main__":
    sys.exit(main())
