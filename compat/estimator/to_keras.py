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
  `keras_canned.CannedRecipe` (one `Input` per feature key, Keras preprocessing and Dense layers holding
  the checkpoint's weights, the head's outputs as a dict). No TensorFlow graph code is inside: it saves
  as `.keras`, loads with `keras.saving.load_model`, and trains on with `fit` (compile it first). The
  string `classes` outputs are left out (Keras models compute numbers); `class_ids` index the label
  vocabulary, and `export_keras_saved_model` (keras_serving.py) puts the strings back in an export.
- Any other Estimator (a custom model_fn, other canned Estimators, other feature columns): its
  SavedModel export, written with `serving_input_receiver_fn`, wrapped in `keras.layers.TFSMLayer`:
  inference with the export's serving signature (the same input and output keys, so serving clients
  see no change); it cannot be trained on. A receiver is needed because the Estimator's export is.
  Saved as `.keras`, it still reads the export folder, and loads after `import compat.estimator.to_keras`
  with `keras.saving.load_model(path, safe_mode=False)` (Keras asks for that for SavedModel layers).

Raises ConversionError (a ValueError) naming what is missing when a conversion cannot be made.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from compat.core import atomic
from compat.estimator.keras_canned import ConversionError


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
      ConversionError (a ValueError): a folder without `keras_model`, or an Estimator that needs a
        receiver and got none.
    """
    from compat.estimator.keras_engine import KerasEstimator, model_to_estimator

    if isinstance(estimator, str | os.PathLike):
        if tf.train.latest_checkpoint(os.fspath(estimator)) is None:
            raise ConversionError(
                f"{os.fspath(estimator)} holds no checkpoint: give the model folder of a trained Estimator"
            )
        if keras_model is None:
            raise ConversionError(
                f"{os.fspath(estimator)}: a model folder does not record its model's architecture: pass "
                "keras_model= (the compiled Keras model the folder was trained from), or the Estimator itself"
            )
        estimator = model_to_estimator(keras_model=keras_model, model_dir=os.fspath(estimator))
    if isinstance(estimator, KerasEstimator):
        return estimator.trained_keras_model(checkpoint_path)
    recipe = getattr(estimator, "_keras_recipe", None)
    if recipe is not None and recipe.why_not_native() is None:
        return recipe.build(_reader(estimator, checkpoint_path))
    if serving_input_receiver_fn is None:
        kind = type(estimator).__name__
        article = "an" if kind[:1] in "AEIOU" else "a"
        reason = recipe.why_not_native() if recipe is not None else f"{article} {kind} has no native Keras counterpart"
        raise ConversionError(
            f"{reason}: pass serving_input_receiver_fn= (as for export_saved_model) to convert its export, "
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
    loaded = tf.saved_model.load(export_dir)
    names = sorted(loaded.signatures)
    if signature is None:
        signature = "serving_default" if "serving_default" in names or len(names) != 1 else names[0]
    if signature not in loaded.signatures:
        raise ConversionError(f"{export_dir} has no signature '{signature}'; it has {names}: name one (signature=NAME)")
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
    print(
        f"{out}: the export {export_dir}'s serving signature as a Keras model (inputs {sorted(model.input)}); "
        "it reads that export, so keep the folder. Load it after `import compat.estimator.to_keras` with "
        "keras.saving.load_model(path, safe_mode=False), as Keras asks for a layer over a SavedModel"
    )
    return 0


__all__ = ["from_export", "to_keras"]

if __name__ == "__main__":
    sys.exit(main())
