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

import contextlib
import dataclasses
import inspect
import json
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Iterator
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


def _training_config(path: str, named: str) -> dict:
    import h5py

    with h5py.File(path, "r") as stream:
        if "training_config" not in stream.attrs:
            raise ValueError(
                f"{named} holds no training configuration (it was saved uncompiled): compile the model "
                "and pass keras_model= instead of keras_model_path="
            )
        return json.loads(stream.attrs["training_config"])


def keras2_h5_optimizer(path: str, named: str | None = None) -> keras.optimizers.Optimizer:
    """Keras 3's optimizer for the one a Keras 2 `.h5`'s training config names (messages name `named`).

    Raises:
      ValueError: the file holds no training config, or its optimizer has a `decay` Keras 3 lacks.
    """
    named = named or path
    optimizer_spec = _training_config(path, named)["optimizer_config"]
    decay = optimizer_spec.get("config", {}).get("decay", 0.0)
    if decay:
        raise ValueError(
            f"{named}: the optimizer has decay={decay}, which Keras 3 does not have; compile the model "
            "with a learning-rate schedule and pass keras_model="
        )
    return _object(keras.optimizers, optimizer_spec)


def compile_from_keras2_h5(model: keras.Model, path: str, named: str | None = None) -> None:
    """Compiles a model loaded with `compile=False` from a Keras 2 `.h5`, as its training config says
    (messages name `named`, the file the user gave, where `path` is a copy of it).

    Keras 3 reads the architecture and weights of a Keras 2 H5 file, but not
    every Keras 2 compile config (a loss's `fn`, an optimizer's `decay`), and a metric
    given by name (`"accuracy"`) is saved as the function Keras 2 guessed before it saw
    the labels: metrics are compiled by their names, which Keras 3 resolves as Keras 2 did.
    """
    named = named or path
    training = _training_config(path, named)
    metrics = training.get("metrics") or []
    if len(model.outputs) == 1 and metrics and isinstance(metrics[0], list):
        metrics = metrics[0]
    metrics = [[_metric(m) for m in group] if isinstance(group, list) else _metric(group) for group in metrics]
    loss = training["loss"]
    model.compile(
        optimizer=keras2_h5_optimizer(path, named),
        loss=(
            {name: _object(keras.losses, spec) for name, spec in loss.items()}
            if isinstance(loss, dict) and "class_name" not in loss
            else [_object(keras.losses, spec) for spec in loss]
            if isinstance(loss, list)
            else _object(keras.losses, loss)
        ),
        metrics=metrics or None,
        loss_weights=training.get("loss_weights"),
    )


_ANY = object()
# Layer arguments Keras 2 wrote into configs and Keras 3 refuses, with the one value Keras 3 behaves as.
_KERAS2_ONLY_ARGUMENTS = {
    "time_major": False,  # LSTM, GRU, SimpleRNN: Keras 3 reads (batch, time, ...)
    "softmax_robust_masking": False,  # MultiHeadAttention (tf_keras 2.16+)
    # MultiHeadAttention's build shapes: Keras 3 builds it from the inputs it is called on
    "query_shape": _ANY,
    "key_shape": _ANY,
    "value_shape": _ANY,
}


def _drop_keras2_only_arguments(config: dict, path: str) -> bool:
    """Removes `_KERAS2_ONLY_ARGUMENTS` from one layer's config; True if one was there.

    Raises:
      ValueError: the layer sets one to a value Keras 3 cannot behave as (`time_major=True`).
    """
    found = False
    for argument, keras3_value in _KERAS2_ONLY_ARGUMENTS.items():
        if argument in config:
            if keras3_value is not _ANY and config[argument] != keras3_value:
                raise ValueError(
                    f"{path}: layer '{config.get('name')}' has {argument}={config[argument]}, which Keras 3 does not "
                    f"have; build it with {argument}={keras3_value} (transpose its input) first"
                )
            del config[argument]
            found = True
    return found


def _keras3_tensor(reference: list) -> dict:
    """Keras 3's serialized form of the tensor a `[layer, node, tensor]` reference names (the loader
    swaps it for that layer's output; shape and dtype are placeholders it does not read)."""
    return {"class_name": "__keras_tensor__", "config": {"shape": [], "dtype": "float32", "keras_history": reference}}


@dataclasses.dataclass(frozen=True)
class _Layers:
    """The layers of one Keras 2 functional config: all names, and those of the models nested in it."""

    names: frozenset
    models: frozenset  # Keras 2 counted a nested model's own first node, which the config leaves out

    @classmethod
    def of(cls, layers: list) -> _Layers:
        def name(layer: dict) -> str:
            return layer.get("name") or layer.get("config", {}).get("name")

        models = {name(layer) for layer in layers if layer.get("class_name") in ("Sequential", "Functional", "Model")}
        return cls(frozenset(name(layer) for layer in layers), frozenset(models))

    def reference(self, value: Any) -> list | None:
        """A `[layer, node, tensor]` reference to one of these layers, numbered as Keras 3 numbers nodes."""
        if not (isinstance(value, list) and len(value) >= 3 and value[0] in self.names and isinstance(value[1], int)):
            return None
        skipped = 1 if value[0] in self.models and value[1] >= 1 else 0
        return [value[0], value[1] - skipped, value[2]]


def _keras3_node(node: list, layers: _Layers) -> list | dict:
    """A Keras 2 inbound node (`[[layer, node, tensor, kwargs], ...]`) as Keras 3 reads it: a nested model's
    outputs by Keras 3's node numbers, and a call's tensor kwargs (MultiHeadAttention's `value=`), which
    Keras 3 reads only in its own node format, in that format."""
    entries = [[*(layers.reference(entry) or entry[:3]), *entry[3:]] for entry in node]
    kwargs = entries[-1][3] if entries and len(entries[-1]) == 4 else {}
    if not any(layers.reference(value) for value in kwargs.values()):
        return entries if entries != node else node
    inputs = [_keras3_tensor(entry[:3]) for entry in entries]
    return {
        "args": [inputs[0] if len(inputs) == 1 else inputs],
        "kwargs": {
            key: _keras3_tensor(reference) if (reference := layers.reference(value)) else value
            for key, value in kwargs.items()
        },
    }


def _keras3_model_config(node: Any, path: str) -> bool:
    """Rewrites a Keras 2 model config, in place, into one Keras 3's H5 loader reads; True if it changed."""
    changed = False
    if isinstance(node, dict):
        config = node.get("config")
        if isinstance(config, dict):
            changed = _drop_keras2_only_arguments(config, path)
            if isinstance(config.get("layers"), list) and node.get("class_name") != "Sequential":
                layers = _Layers.of(config["layers"])
                for layer in config["layers"]:
                    nodes = layer.get("inbound_nodes") or []
                    converted = [_keras3_node(item, layers) if isinstance(item, list) else item for item in nodes]
                    if converted != nodes:
                        layer["inbound_nodes"] = converted
                        changed = True
                for key in ("input_layers", "output_layers"):
                    references = config.get(key)
                    if isinstance(references, list):
                        moved = [layers.reference(item) or item for item in references]
                        changed = changed or moved != references
                        config[key] = moved
        for value in node.values():
            changed = _keras3_model_config(value, path) or changed
    elif isinstance(node, list):
        for value in node:
            changed = _keras3_model_config(value, path) or changed
    return changed


@contextlib.contextmanager
def keras3_readable_h5(path: str) -> Iterator[str]:
    """`path`, a Keras 2 `.h5`, or (while the block runs) a copy of it that Keras 3 loads: without the layer
    arguments Keras 3 refuses (`time_major=False`, in every Keras 2 RNN's config; MultiHeadAttention's build
    shapes), a layer called with a tensor argument (`value=`) in Keras 3's node format. The file given is
    not changed.

    Raises:
      ValueError: a layer's argument has a value Keras 3 cannot behave as.
    """
    import h5py

    with h5py.File(path, "r") as stream:
        raw = stream.attrs.get("model_config")
    config = json.loads(raw) if raw is not None else None
    if config is None or not _keras3_model_config(config, path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="keras2-h5-") as folder:
        copy = shutil.copy(path, os.path.join(folder, os.path.basename(path)))
        with h5py.File(copy, "r+") as stream:
            stream.attrs["model_config"] = json.dumps(config)
        yield copy
