"""What the Keras engine reads of an input_fn's features and labels, and how hooks are told apart."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import keras
import tensorflow as tf

from compat.estimator.keras_engine.keras2_artefacts import callback_classes

FEATURES_AND_WEIGHTS = {"features", "sample_weights"}


class FormattedKeyError(KeyError):
    """A KeyError whose message keeps its line breaks (Python's KeyError shows its argument's repr)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def check_covers(tensors: dict, names: list[str], what: str, kind: str) -> None:
    """TF 2.15's error, its lines as they were, when the dict `tensors` lacks one of the model's `names`."""
    missing = set(names) - set(tensors)
    if missing:
        raise FormattedKeyError(
            f"The dictionary passed into {what} does not cover requested {kind} keys defined in the keras model."
            f"\n\tExpected keys: {set(names)}\n\t{what} keys: {set(tensors)}\n\tMissed keys: {missing}"
            f"\n\tName the input_fn's {what} keys after the model's {kind} layers."
        )


_KERAS_3_INPUT_NAME = re.compile(r"input_layer(?:_(\d+))?")
_KERAS_2_INPUT_NAME = re.compile(r"input_\d+")


def keras_2_input_names(model: keras.Model, name: str) -> list[str]:
    """The names Keras 2 gave the input Keras 3 named `name`, when Keras named it: a TF 2.15 input_fn keys
    its features by them. A functional model's `Input()` was `input_1`, `input_2`, ... (Keras 3:
    `input_layer`, `input_layer_1`, ...); a Sequential model's input made from its first layer's
    `input_shape` was `<first layer>_input`. Both counted per process, so the number is a guess."""
    match = _KERAS_3_INPUT_NAME.fullmatch(name)
    if match is None:
        return []
    names = [f"input_{int(match.group(1) or 0) + 1}"]
    if isinstance(model, keras.Sequential) and model.layers:
        names.insert(0, f"{model.layers[0].name}_input")
    return names


def feature_key(model: keras.Model, name: str, features: dict) -> str:
    """The key of `features` that feeds the model's input `name`: the name, else its Keras 2 name; for a model
    of one unnamed input, any one key Keras 2 could have named it (its number depended on the process)."""
    if name in features:
        return name
    for old_name in keras_2_input_names(model, name):
        if old_name in features:
            return old_name
    guesses = [key for key in features if _KERAS_2_INPUT_NAME.fullmatch(str(key))]
    if len(model.inputs) == 1 and keras_2_input_names(model, name) and len(guesses) == 1:
        return guesses[0]
    return name


def output_names(model: Any) -> list[str]:
    """A Keras model's outputs are named after their last layers (a Sequential model's, after its last), as
    TF 2.15's model_to_estimator named its predictions; for a Keras 2 model as well."""
    names = getattr(model, "output_names", None)  # Keras 3's Sequential model has none
    return list(names) if names else [model.layers[-1].name]


def input_structure(model: keras.Model) -> Any:
    """What the model is called with: a dict, list or one tensor (a Sequential model's one input)."""
    try:
        return model.input
    except AttributeError:  # Keras 3's Sequential model, built from its Input, has `inputs` but no `input`
        return model.inputs[0]


def split_hooks(hooks: Iterable | None) -> tuple[list[keras.callbacks.Callback], list]:
    """(Keras callbacks, SessionRunHooks); anything else is refused, naming it."""
    callbacks, session_hooks = [], []
    for hook in hooks or ():
        if isinstance(hook, callback_classes()):
            callbacks.append(hook)
        elif isinstance(hook, tf.compat.v1.train.SessionRunHook):
            session_hooks.append(hook)
        else:
            raise TypeError(f"hooks must be Keras callbacks or SessionRunHooks, given: {hook!r}")
    return callbacks, session_hooks
