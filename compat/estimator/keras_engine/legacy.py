"""Keras 2 artefacts under Keras 3: `tf.keras.optimizers.legacy` names, and the compile config of a `.h5`.

`tf.keras.optimizers.legacy.<Name>` for TF 2.11-2.15 code, after `install()`: a subclass of tf_keras' legacy
class, which libraries subclass in turn. Made eagerly by its own name (for `model.compile`), it gives Keras 3's
optimizer, warned once; made in a graph (a model_fn) or as a subclass, tf_keras' legacy optimizer, TF 2.15's
own class, which builds the graph's updates.

TF 2.11-2.15 told Estimator users to use the legacy optimizers; Keras 3 keeps
the names only to raise ImportError. These stand-ins build Keras 3's optimizer
of the same name, mapping the arguments Keras 3 renamed (`lr`) or dropped
(`decay`, which is refused unless 0: give a learning-rate schedule instead).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import types
from typing import Any

import keras
import tensorflow as tf

_NAMES = ("Adadelta", "Adagrad", "Adam", "Adamax", "Ftrl", "Nadam", "RMSprop", "SGD")
_warned = False


def _keras3_optimizer(name: str, args: tuple, kwargs: dict) -> keras.optimizers.Optimizer:
    """Keras 3's optimizer of the same name, for a legacy optimizer made eagerly (`model.compile`)."""
    global _warned
    if not _warned:
        tf.compat.v1.logging.warning(
            "tf.keras.optimizers.legacy.%s made eagerly is Keras 3's keras.optimizers.%s under "
            "compat.estimator (Keras 3 has no legacy optimizers); its state is saved in Keras 3's layout",
            name,
            name,
        )
        _warned = True
    kwargs = dict(kwargs)
    if "lr" in kwargs:
        kwargs["learning_rate"] = kwargs.pop("lr")
    decay = kwargs.pop("decay", 0.0)
    if decay:
        raise ValueError(
            f"tf.keras.optimizers.legacy.{name}(decay={decay}): Keras 3 has no `decay`; give "
            "learning_rate=keras.optimizers.schedules.InverseTimeDecay(...) instead"
        )
    return getattr(keras.optimizers, name)(*args, **kwargs)


def _legacy_class(name: str) -> type:
    """`tf.keras.optimizers.legacy.<name>` after install(): tf_keras' legacy class, which a library may subclass.

    Made in a graph (a model_fn), or as a subclass, it is TF 2.15's own class (tf_keras' OptimizerV2, which
    builds graph updates and whose `iterations` a program may set to the global step). Made eagerly by its
    own name, it is Keras 3's optimizer of that name, which `model.compile` of a Keras 3 model needs.
    """
    import tf_keras

    base = getattr(tf_keras.optimizers.legacy, name)

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        if cls is stand_in and tf.executing_eagerly():
            return _keras3_optimizer(name, args, kwargs)  # not an instance of cls: __init__ is not called
        return base.__new__(cls)

    stand_in: type = type(name, (base,), {"__new__": __new__, "__module__": __name__, "__doc__": base.__doc__})
    return stand_in


def legacy_namespace() -> types.SimpleNamespace:
    """What `tf.keras.optimizers.legacy` is after `install()`.

    `Optimizer` is tf_keras' OptimizerV2 base class, as it was in TF 2.11-2.15: a program's own optimizer
    subclassing it builds graph updates (`get_updates`), which the canned estimators train with.
    """
    import tf_keras

    return types.SimpleNamespace(
        **{name: _legacy_class(name) for name in _NAMES}, Optimizer=tf_keras.optimizers.legacy.Optimizer
    )


def _without(config: dict, *names: str) -> dict:
    return {key: value for key, value in config.items() if key not in names}


def _object(kind, spec: Any) -> Any:
    """A Keras 3 loss or optimizer from a Keras 2 `{'class_name', 'config'}` (or a name)."""
    if not isinstance(spec, dict):
        return spec
    cls = getattr(kind, spec["class_name"].split(">")[-1])
    accepted = inspect.signature(cls.__init__).parameters
    config = {key: value for key, value in spec.get("config", {}).items() if key in accepted and key != "reduction"}
    return cls(**config)


def _metric(spec: Any) -> Any:
    return spec.get("config", {}).get("name", spec["class_name"]) if isinstance(spec, dict) else spec


def is_keras2_model(model: Any) -> bool:
    """Whether `model` is a Keras 2 model (tf_keras'; tf.keras's under TF_USE_LEGACY_KERAS=1)."""
    tf_keras = sys.modules.get("tf_keras")
    return tf_keras is not None and isinstance(model, tf_keras.Model)


@dataclasses.dataclass(frozen=True)
class Keras2Architecture:
    """What rebuilds the Keras 2 model a model_to_estimator Estimator was made from: its JSON and compile
    config. The Estimator trains a Keras 3 copy; `to_keras` hands back a Keras 2 model with its weights."""

    json: str
    compile_config: Any

    @classmethod
    def of(cls, model: Any) -> Keras2Architecture:
        return cls(model.to_json(), model.get_compile_config())

    def build(self, weights: list, custom_objects: dict | None = None) -> Any:
        """A compiled Keras 2 model of this architecture with `weights` (a Keras 3 copy's, in the same order)."""
        import tf_keras

        model = tf_keras.models.model_from_json(self.json, custom_objects=custom_objects)
        model.set_weights(weights)
        if self.compile_config:
            model.compile_from_config(self.compile_config)
        return model


def callback_classes() -> tuple[type, ...]:
    """The Keras callback base classes a model_to_estimator Estimator calls as hooks: Keras 3's, and Keras 2's
    (`tf.keras.callbacks.Callback` under TF_USE_LEGACY_KERAS=1) where tf_keras is loaded."""
    tf_keras = sys.modules.get("tf_keras")
    return (keras.callbacks.Callback, *((tf_keras.callbacks.Callback,) if tf_keras is not None else ()))


def compile_from_keras2_h5(model: keras.Model, path: str) -> None:
    """Compiles a model loaded with `compile=False` from a Keras 2 `.h5`, as its training config says.

    Keras 3 reads the architecture and weights of a Keras 2 H5 file, but not
    every Keras 2 compile config (a loss's `fn`, an optimizer's `decay`).
    """
    import h5py

    with h5py.File(path, "r") as stream:
        if "training_config" not in stream.attrs:
            raise ValueError(
                f"{path} holds no training configuration (it was saved uncompiled): compile the model "
                "and pass keras_model= instead of keras_model_path="
            )
        training = json.loads(stream.attrs["training_config"])
    optimizer_spec = training["optimizer_config"]
    decay = optimizer_spec.get("config", {}).get("decay", 0.0)
    if decay:
        raise ValueError(
            f"{path}: the optimizer has decay={decay}, which Keras 3 does not have; compile the model "
            "with a learning-rate schedule and pass keras_model="
        )
    metrics = training.get("metrics") or []
    if len(model.outputs) == 1 and metrics and isinstance(metrics[0], list):
        metrics = metrics[0]
    metrics = [[_metric(m) for m in group] if isinstance(group, list) else _metric(group) for group in metrics]
    model.compile(
        optimizer=_object(keras.optimizers, optimizer_spec),
        loss=_object(keras.losses, training["loss"]),
        metrics=metrics or None,
        loss_weights=training.get("loss_weights"),
    )
