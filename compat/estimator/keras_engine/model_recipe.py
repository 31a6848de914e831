"""What model_to_estimator builds its copies from: the compiled Keras model as plain values, loaded or given
and checked as TF 2.15 checked it, and the strategy a cluster's chief coordinates with.
"""

from __future__ import annotations

import contextlib
import copy as copy_lib
import dataclasses
import os
import tempfile
from typing import Any

import keras
import tensorflow as tf

from compat.core import strategies, tf_internals
from compat.estimator.keras_engine import keras2_artefacts as keras_legacy
from compat.estimator.keras_engine import keras2_optimizers
from compat.estimator.keras_engine.compile_arguments import CompileArguments
from compat.estimator.keras_engine.input_reading import output_names
from compat.estimator.run_config import RunConfig, TaskType


@dataclasses.dataclass(frozen=True)
class ModelRecipe:
    """A compiled Keras model as plain Python and NumPy, from which model_to_estimator builds its copies.

    Nothing in it is a TensorFlow object, so it outlives this process's connection to a
    parameter-server cluster, after which the given model's own variables cannot be read.
    """

    model_class: type[keras.Model]
    config: dict
    weights: list  # all of them: batch-norm statistics included
    compile_arguments: CompileArguments  # the compile() arguments themselves: a config loses settings
    optimizer_class: type[keras.optimizers.Optimizer]
    optimizer_config: dict

    @classmethod
    def of(cls, model: keras.Model) -> ModelRecipe:
        optimizer = model.optimizer
        return cls(
            type(model),
            model.get_config(),
            model.get_weights(),
            CompileArguments.of(model, output_names(model)),
            type(optimizer),
            optimizer.get_config(),
        )

    def build(self, scope: contextlib.AbstractContextManager) -> keras.Model:
        """A copy made in `scope` (a strategy's, where its variables go), compiled as the model was, with an
        optimizer of its own."""
        with scope:
            # Deserializing empties or changes the configs given: each copy gets its own.
            copy = self.model_class.from_config(copy_lib.deepcopy(self.config))
            copy.set_weights(self.weights)
            optimizer = self.optimizer_class.from_config(copy_lib.deepcopy(self.optimizer_config))
            self.compile_arguments.compile(copy, optimizer)
            copy.optimizer.build(copy.trainable_variables)
        keras2_optimizers.update_as_keras2(copy.optimizer)  # sparse gradients as TF 2.15 applied them
        return copy


def coordinating_strategy(config: RunConfig | None) -> tf.distribute.Strategy | None:
    """On the chief of a TF_CONFIG cluster with ps tasks, the ParameterServerStrategy to train under: the
    one whose scope model_to_estimator is called in, else the one this process connected with, else a new
    one (TF 2.15 replicated between graphs there, which Keras 3 cannot: see training.py). None on every
    other task and without ps tasks."""
    config = config if config is not None else RunConfig()
    if TaskType.PS not in config.cluster_spec.as_dict() or not config.is_chief:
        return None
    current = tf.distribute.get_strategy()
    if strategies.plan_of(current).coordinated:
        return current
    if strategies.is_connected(config):
        return strategies.parameter_server_strategy(config)
    tf.compat.v1.logging.warning(
        "model_to_estimator connects this process to the parameter-server cluster of TF_CONFIG. TensorFlow "
        "objects made before (the Keras model given among them) cannot be used after it: the Estimator trains a "
        "copy of its own. To keep using them, create tf.distribute.experimental.ParameterServerStrategy first "
        "and build the model and call model_to_estimator in its scope"
    )
    return strategies.parameter_server_strategy(config)


def load_model(path: str, custom_objects: dict | None) -> keras.Model:
    if os.path.isdir(path):
        raise ValueError(
            f"keras_model_path '{path}' is a folder: a TensorFlow SavedModel (Keras 2's default format), which "
            "Keras 3 cannot load as a trainable model. Save the model as .h5 or .keras with the TensorFlow that made "
            "it (model.save('model.h5')), or rebuild it in code and load its weights"
        )
    if not os.path.exists(path):
        raise ValueError(f"keras_model_path '{path}' does not exist")
    if path.endswith((".h5", ".hdf5")):
        with keras_legacy.keras3_readable_h5(path) as readable:
            return _load(readable, custom_objects, named=path)
    return _load(path, custom_objects, named=path)


def _load(path: str, custom_objects: dict | None, named: str) -> keras.Model:
    """Loads `path`; messages name the file the user gave, `named` (`path` may be a readable copy of it)."""
    h5 = path.endswith((".h5", ".hdf5"))
    try:
        # safe_mode: Keras' default, True. A Keras 2 H5 is compiled from its training config below: Keras 3
        # reads not all of it, and its metrics given by name are saved as functions Keras 2 guessed before it
        # saw the labels.
        model = keras.models.load_model(path, custom_objects=custom_objects, compile=not h5)
    except (TypeError, ValueError) as error:
        if "safe_mode" in str(error):
            raise ValueError(
                f"keras_model_path '{named}' holds Python code (a Lambda layer) that Keras runs only when told the "
                "file is trusted. If it is, load it yourself and pass the model: model_to_estimator(keras_model="
                f"keras.models.load_model({named!r}, safe_mode=False), ...)"
            ) from error
        raise
    if h5:
        keras_legacy.compile_from_keras2_h5(model, path, named=named)
    return model


def _keras3_copy(model: Any, custom_objects: dict | None) -> keras.Model:
    """A Keras 3 copy of a Keras 2 model (tf_keras, or tf.keras under TF_USE_LEGACY_KERAS=1): its layers, weights
    and compile config, through the H5 file Keras 2 writes, as a `.h5` of TF 2.15's loads. The engine trains
    the copy; the checkpoints it writes are TF 2.15's model_to_estimator's (checkpoint.py)."""
    if not tf_internals.is_compiled(model) or getattr(model, "optimizer", None) is None:
        raise ValueError(
            "The given keras model has not been compiled yet. Please compile the model with "
            "`model.compile()` before calling `model_to_estimator()`."
        )
    with tempfile.TemporaryDirectory(prefix="keras2-model-") as folder:
        path = os.path.join(folder, "model.h5")
        model.save(path, save_format="h5")
        try:
            with keras_legacy.keras3_readable_h5(path) as readable:
                copy = keras.models.load_model(readable, custom_objects=custom_objects, compile=False)
            optimizer = keras_legacy.keras2_h5_optimizer(path)
        except (TypeError, ValueError, KeyError) as error:
            raise ValueError(
                f"model_to_estimator: this Keras 2 (tf_keras) model does not convert to Keras 3 ({error}); pass "
                "its custom layers in custom_obj= as Keras 3 classes, or rebuild the model with keras (Keras 3)"
            ) from error
    # Compiled from the arguments the model was compiled with (the H5's compile config is lossy)
    with keras.saving.custom_object_scope(custom_objects or {}):
        CompileArguments.of(model, output_names(model)).compile(copy, optimizer)
    return copy


def compiled_model(
    keras_model: keras.Model | None, keras_model_path: str | None, custom_objects: dict | None, checkpoint_format: str
) -> keras.Model:
    """model_to_estimator's model, given or loaded, checked as TF 2.15 checked it (its messages)."""
    if keras_model is None and keras_model_path is None:
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model is not None and keras_model_path is not None:
        raise ValueError("Please specify either `keras_model` or `keras_model_path`, but not both.")
    if keras_model_path is not None:
        keras_model = load_model(keras_model_path, custom_objects)
    assert keras_model is not None  # one of the two was given
    if keras_legacy.is_keras2_model(keras_model):
        keras_model = _keras3_copy(keras_model, custom_objects)
    if getattr(keras_model, "optimizer", None) is None or not keras_model.compiled:
        raise ValueError(
            "The given keras model has not been compiled yet. Please compile the model with "
            "`model.compile()` before calling `model_to_estimator()`."
        )
    differs = keras2_optimizers.keras2_optimizer(keras_model.optimizer).differs
    if differs:
        tf.compat.v1.logging.warning(
            "model_to_estimator trains with Keras 3's %s, which does not update as the Keras 2 optimizer TF 2.15 "
            "ran did: %s. Training moves differently from TF 2.15's run of the same program",
            type(keras_model.optimizer).__name__,
            differs,
        )
    if checkpoint_format == "saver":
        raise NotImplementedError(
            "checkpoint_format='saver' (name-based, graph-mode checkpoints) is not "
            "supported: use the default 'checkpoint' (object-based) format"
        )
    if checkpoint_format != "checkpoint":
        raise ValueError(f"checkpoint_format must be 'checkpoint' or 'saver', got {checkpoint_format!r}")
    return keras_model
