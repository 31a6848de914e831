"""KerasEstimator (the Keras engine's training, evaluation, prediction and export, as one Estimator) and
model_to_estimator, which makes one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from compat.core import atomic, strategies
from compat.estimator.base import (
    check_checkpoint_exists,
    extract_keys,
    per_example,
    seeded_python_random,
    timestamped_dir,
)
from compat.estimator.estimator import Estimator
from compat.estimator.export import export as export_lib
from compat.estimator.input_fns import (
    call_input_fn,
    split_features_labels,
)
from compat.estimator.keras_engine import keras2_artefacts as keras_legacy
from compat.estimator.keras_engine import saved_model_export as keras_export
from compat.estimator.keras_engine.evaluation import Evaluation
from compat.estimator.keras_engine.input_reading import split_hooks
from compat.estimator.keras_engine.loop import Training
from compat.estimator.keras_engine.model_recipe import (
    ModelRecipe,
    compiled_model,
    coordinating_strategy,
)
from compat.estimator.model_fn import ModeKeys
from compat.estimator.run_config import RunConfig


class KerasEstimator(Training, Evaluation):
    """A tf.estimator.Estimator backed by a compiled Keras model; made by `model_to_estimator`.

    The graph engine's sibling (base.py), registered as an `Estimator` below.
    """

    engine = "keras"

    # -- predict, export ----------------------------------------------------
    def trained_keras_model(self, checkpoint_path: str | None = None, keras_2: bool | None = None) -> Any:
        """A new copy of the Keras model, compiled as it was, with the weights of `checkpoint_path` (default:
        the newest checkpoint): the model this Estimator trained, for Keras from here on (`to_keras`). A Keras 2
        model where the Estimator was made from one (or `keras_2=True`), else a Keras 3 one."""
        self._restore(checkpoint_path)
        architecture = self._state.keras2_architecture
        if keras_2 and architecture is None:
            raise ValueError("keras_2=True: this Estimator was made from a Keras 3 model, which has no Keras 2 twin")
        if architecture is not None and keras_2 is not False:
            return architecture.build(self._state.model.get_weights(), self._state.custom_objects)
        with keras.saving.custom_object_scope(self._state.custom_objects):
            return ModelRecipe.of(self._state.model).build(contextlib.nullcontext())

    def predict(
        self,
        input_fn: Callable,
        predict_keys: Sequence[str] | None = None,
        hooks=None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ):
        """Yields `{output_name: value}` per example (or per batch).

        `predict_keys` keeps the outputs it names that exist, as TF 2.15 (an
        error when none does). Keras callbacks get their predict calls.
        """
        callbacks, session_hooks = split_hooks(hooks)
        if session_hooks:
            raise TypeError(
                "SessionRunHooks are not run by a model_to_estimator Estimator's predict(); use a Keras "
                "callback (on_predict_batch_end) instead"
            )
        if checkpoint_path:
            check_checkpoint_exists(checkpoint_path)
        self._restore(checkpoint_path)
        names = self.output_names
        kept = list(extract_keys(dict.fromkeys(names), predict_keys))  # refuses keys that name no output
        dataset = call_input_fn(input_fn, ModeKeys.PREDICT, self._config, self._params)
        for callback in callbacks:
            callback.set_model(self._state.model)
            callback.on_predict_begin()
        for batch, element in enumerate(dataset):
            for callback in callbacks:
                callback.on_predict_batch_begin(batch)
            features, _ = split_features_labels(element)
            inputs, _ = self._inputs_and_weights(features)
            outputs = dict(zip(names, tf.nest.flatten(self._state.model(inputs, training=False))))
            outputs = {key: np.asarray(outputs[key]) for key in kept}
            for callback in callbacks:
                callback.on_predict_batch_end(batch, {"outputs": outputs})
            if not yield_single_examples:
                yield outputs
                continue
            yield from per_example(outputs)
        for callback in callbacks:
            callback.on_predict_end()

    def export_saved_model(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable | None = None,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
    ) -> bytes:
        """Writes `<export_dir_base>/<timestamp>` (built under a temporary name); returns that path.

        The SavedModel takes what the receiver describes (see saved_model_export.py);
        with no receiver, the model's own inputs.
        """
        self._restore(checkpoint_path)
        final = timestamped_dir(export_dir_base)

        def build(folder: str) -> None:
            keras_export.save_with_receiver(
                self._state.model,
                folder,
                serving_input_receiver_fn,
                self.model_inputs,
                self.output_names,
                self._state.export_outputs,
            )
            export_lib.write_assets_extra(folder, assets_extra)
            if as_text:
                export_lib.rewrite_as_text(folder)

        atomic.publish_folder(final, build)
        tf.compat.v1.logging.info("SavedModel written to: %s", final)
        return final.encode()

    export_savedmodel = export_saved_model

    def experimental_export_all_saved_models(self, export_dir_base: str, input_receiver_fn_map: dict, **_) -> bytes:
        """Refused: the Keras engine has no training or evaluation graph to export."""
        raise ValueError(
            "model_to_estimator's Estimator exports its Keras model for serving only: use "
            "export_saved_model(export_dir_base, serving_input_receiver_fn); the train and eval graphs of "
            "experimental_export_all_saved_models need a model_fn Estimator"
        )


def model_to_estimator(
    keras_model: keras.Model | None = None,
    keras_model_path: str | None = None,
    custom_objects: dict | None = None,
    model_dir: str | None = None,
    config: RunConfig | None = None,
    checkpoint_format: str = "checkpoint",
    metric_names_map: dict | None = None,
    export_outputs: dict | None = None,
    training_summaries: str = "tf215",
) -> KerasEstimator:
    """An Estimator that trains a copy of a compiled Keras model, as tf.keras.estimator did.

    With no checkpoint in `model_dir`, training starts from the Keras model's
    current weights (all of them); otherwise from the latest checkpoint. A
    `.h5` file from TF 2.15's Keras loads through `keras_model_path`.

    Args:
      training_summaries: this project's addition: "tf215" (TF 2.15's `loss_1` and `global_step/sec`, from
        each train() call's first step) or "keras" (a Keras `fit`'s tags, at multiples of the settings).

    Raises:
      ValueError: `training_summaries` is neither.
    """
    if training_summaries not in ("tf215", "keras"):
        raise ValueError(f"training_summaries must be 'tf215' or 'keras', given {training_summaries!r}")
    keras2_architecture = (
        keras_legacy.Keras2Architecture.of(keras_model) if keras_legacy.is_keras2_model(keras_model) else None
    )
    keras_model = compiled_model(keras_model, keras_model_path, custom_objects, checkpoint_format)
    seed = config.tf_random_seed if config is not None else None
    strategy = strategies.checked_strategy(config.train_distribute if config is not None else None)
    # Read before a parameter-server strategy connects this process to its cluster (which ends the model's
    # variables); clone_model would also rebuild the compile config, which fails for a lambda loss.
    with keras.saving.custom_object_scope(custom_objects or {}):
        recipe = ModelRecipe.of(keras_model)
    strategy = strategy or coordinating_strategy(config)

    # Its layers' random seeds follow tf_random_seed; under a strategy its variables are the strategy's.
    def clone(scope) -> keras.Model:
        with keras.saving.custom_object_scope(custom_objects or {}), seeded_python_random(seed):
            return recipe.build(scope)

    copy = clone(strategy.scope() if strategy is not None else contextlib.nullcontext())
    # Evaluation, prediction and export of a multi-worker or parameter-server Estimator read a copy of no
    # strategy (see KerasEstimator).
    evaluation_model = clone(contextlib.nullcontext()) if strategies.plan_of(strategy).spans_tasks else None
    return KerasEstimator(
        copy,
        model_dir=model_dir,
        config=config,
        metric_names_map=metric_names_map,
        export_outputs=export_outputs,
        evaluation_model=evaluation_model,
        strategy=strategy,
        custom_objects=custom_objects,
        keras2_architecture=keras2_architecture,
        training_summaries=training_summaries,
    )


def keras_lib_model_to_estimator(
    keras_model: keras.Model | None = None,
    keras_model_path: str | None = None,
    custom_objects: dict | None = None,
    model_dir: str | None = None,
    config: RunConfig | None = None,
    checkpoint_format: str = "saver",
    use_v2_estimator: bool = False,
    metric_names_map: dict | None = None,
    export_outputs: dict | None = None,
) -> KerasEstimator:
    """`model_to_estimator` in the signature of TF 2.15's `tensorflow_estimator...keras_lib.model_to_estimator`,
    which Keras 2's own `model_to_estimator` (keras 2.x, tf_keras) called. `use_v2_estimator` chose between
    TF 2.15's two Estimator classes; here one class serves both."""
    del use_v2_estimator
    return model_to_estimator(
        keras_model,
        keras_model_path,
        custom_objects,
        model_dir,
        config,
        checkpoint_format,
        metric_names_map,
        export_outputs,
    )


Estimator.register(KerasEstimator)  # isinstance(model_to_estimator(...), tf.estimator.Estimator), as in TF 2.15
