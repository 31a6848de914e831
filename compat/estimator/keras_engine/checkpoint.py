"""Checkpoints of the Keras engine, named as TF 2.15's model_to_estimator named them.

TF 2.15's Keras estimators wrote object-based checkpoints whose keys lead to a
layer: `layer_with_weights-<i>/<weight>/.ATTRIBUTES/VARIABLE_VALUE`, counted
over the layers that have weights, in `model.layers` order. This engine writes
the same keys for the model's weights, `optimizer/<variable>/...` for the
optimizer's state and `global_step/...`, so `get_variable_names()` reads like
TF 2.15's and `get_variable_value` finds a layer's kernel by the same name.

It also reads the two other layouts a model folder may hold:
  - a TF 2.15 (Keras 2) folder: the same weight keys, optimizer slots under
    `.OPTIMIZER_SLOT/optimizer/<m|v|...>`, and `estimator_global_step`;
  - this project's first layout (`model/...`, `optimizer/...`, `global_step`).
"""

from __future__ import annotations

import keras
import tensorflow as tf

_KERAS2_GLOBAL_STEP = "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE"
_WEIGHT = "layer_with_weights-{index}/{name}/.ATTRIBUTES/VARIABLE_VALUE"
_KERAS2_SLOT = "layer_with_weights-{index}/{name}/.OPTIMIZER_SLOT/optimizer/{slot}/.ATTRIBUTES/VARIABLE_VALUE"
_FIRST_LAYOUT_GLOBAL_STEP = "global_step/.ATTRIBUTES/VARIABLE_VALUE"
# A Keras 2 optimizer slot and the Keras 3 optimizer variable that holds the same state.
_SLOTS_KERAS2_TO_KERAS3 = {
    "m": "momentum",
    "v": "velocity",
    "momentum": "momentum",
    "rms": "velocity",
    "accumulator": "accumulator",
}


def layers_with_weights(model: keras.Model) -> list:
    return [layer for layer in model.layers if layer.weights]


def _weight_names(layer) -> dict:
    """`{name: weight}` for one layer: the last part of each weight's path, made unique within the layer."""
    names = {}
    for weight in layer.weights:
        name = weight.path.split("/")[-1]
        if name in names:  # a nested model: its inner layers' weights share names
            name = weight.path.replace("/", ".")
        names[name] = weight
    return names


def _node(variables: dict) -> tf.train.Checkpoint:
    node = tf.train.Checkpoint()
    for name, variable in variables.items():
        setattr(
            node,
            name,
            variable.value if hasattr(variable, "value") and not isinstance(variable, tf.Variable) else variable,
        )
    return node


def _slots_by_weight(model: keras.Model) -> tuple[dict, dict]:
    """({weight path: {slot: optimizer variable}}, {name: the optimizer's other variables}).

    Keras 3 names a weight's optimizer state after the weight's path
    (`dense_kernel_momentum`); the layer names in it change from one process to
    the next, so the checkpoint files a slot under its weight instead.
    """
    prefixes = sorted(
        ((weight.path.replace("/", "_") + "_", weight.path) for weight in model.weights), key=lambda pair: -len(pair[0])
    )
    slots: dict[str, dict] = {}
    others = {}
    for variable in model.optimizer.variables:
        name = variable.path.split("/")[-1]
        owner = next(((prefix, path) for prefix, path in prefixes if name.startswith(prefix)), None)
        if owner is None:
            others[name] = variable
        else:
            slots.setdefault(owner[1], {})[name[len(owner[0]) :]] = variable
    return slots, others


def checkpoint_root(model: keras.Model, global_step: tf.Variable, with_optimizer: bool = True) -> tf.train.Checkpoint:
    """The object graph this engine saves: TF 2.15's names for the weights, their optimizer slots beside
    them (`layer_with_weights-<i>/<weight>.<slot>`), the optimizer's own variables and the step."""
    root = tf.train.Checkpoint(global_step=global_step)
    slots, others = _slots_by_weight(model) if with_optimizer else ({}, {})
    for index, layer in enumerate(layers_with_weights(model)):
        variables = {}
        for name, weight in _weight_names(layer).items():
            variables[name] = weight
            variables.update({f"{name}.{slot}": state for slot, state in slots.get(weight.path, {}).items()})
        setattr(root, f"layer_with_weights-{index}", _node(variables))
    if with_optimizer:
        root.optimizer = _node(others)
    return root


def _restore_keras2(model: keras.Model, global_step: tf.Variable, path: str, stored: dict) -> None:
    """A TF 2.15 model_to_estimator checkpoint into a Keras 3 model: weights by layer order and name,
    each optimizer slot (Adam's m and v, ...) into Keras 3's variable for it; the global step carries on."""
    layers = layers_with_weights(model)
    optimizer_variables = {variable.path.split("/")[-1]: variable for variable in model.optimizer.variables}
    slots = 0
    for index, layer in enumerate(layers):
        for name, weight in _weight_names(layer).items():
            key = _WEIGHT.format(index=index, name=name)
            if key not in stored:
                raise ValueError(
                    f"{path} was written for another model: it has no '{key}' for the weight "
                    f"'{weight.path}' of layer {index} ('{layer.name}'); build the same architecture "
                    "as the program that wrote it"
                )
            if tuple(stored[key]) != tuple(weight.shape):
                raise ValueError(
                    f"{path}: '{key}' has shape {tuple(stored[key])} but the model's '{weight.path}' has "
                    f"{tuple(weight.shape)}; build the same architecture as the program that wrote it"
                )
            weight.assign(tf.train.load_variable(path, key))
            for slot, suffix in _SLOTS_KERAS2_TO_KERAS3.items():
                slot_key = _KERAS2_SLOT.format(index=index, name=name, slot=slot)
                target = optimizer_variables.get(f"{weight.path.replace('/', '_')}_{suffix}")
                if slot_key in stored and target is not None:
                    target.assign(tf.train.load_variable(path, slot_key))
                    slots += 1
    step = tf.train.load_variable(path, _KERAS2_GLOBAL_STEP)
    global_step.assign(step)
    model.optimizer.iterations.assign(step)
    tf.compat.v1.logging.info(
        "Restored %s, written by TensorFlow 2.15's model_to_estimator: %d layers' weights by layer order, "
        "%d optimizer slots, global step %d",
        path,
        len(layers),
        slots,
        step,
    )


def restore(model: keras.Model, global_step: tf.Variable, path: str) -> None:
    """Loads `path` into the model, its optimizer and the global step, whichever layout wrote it."""
    # The reader of this exact prefix: list_variables first asks whether the path is a folder, which on
    # ram:// is true of any prefix of a file's name (model.ckpt-3 of model.ckpt-3.index).
    stored = tf.compat.v1.train.NewCheckpointReader(path).get_variable_to_shape_map()
    if _KERAS2_GLOBAL_STEP in stored:
        _restore_keras2(model, global_step, path, stored)
    elif any(name.startswith("model/") for name in stored) and _FIRST_LAYOUT_GLOBAL_STEP in stored:
        tf.train.Checkpoint(model=model, optimizer=model.optimizer, global_step=global_step).restore(
            path
        ).assert_existing_objects_matched()
    else:
        status = checkpoint_root(model, global_step).restore(path)
        try:
            status.assert_existing_objects_matched()
        except AssertionError as error:
            raise ValueError(
                f"{path} was written for another model: {error}. Build the same architecture as the "
                "program that wrote it, or use a new model_dir"
            ) from error


def write_weights(model: keras.Model, global_step: tf.Variable, prefix: str) -> str:
    """The model's weights alone (the warm-start copy, `keras/keras_model.ckpt`)."""
    return checkpoint_root(model, global_step, with_optimizer=False).write(prefix)
