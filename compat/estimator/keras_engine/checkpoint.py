"""Checkpoints of the Keras engine, in the layout TF 2.15's model_to_estimator wrote.

TF 2.15 ran a Keras 2 model in graph mode and saved an object-based
checkpoint of it. Its keys, which this engine writes too:
  - `layer_with_weights-<i>/<weight>/.ATTRIBUTES/VARIABLE_VALUE`, counted over
    the layers that have weights, in `model.layers` order;
  - each weight's optimizer state beside it,
    `layer_with_weights-<i>/<weight>/.OPTIMIZER_SLOT/optimizer/<slot>/...`,
    under Keras 2's slot names (Adam's `m` and `v`, RMSprop's `rms`, ...);
  - the optimizer's hyperparameters, `optimizer/<name>/...` (`learning_rate`,
    `decay`, `beta_1`, ...), and `estimator_global_step/...`, which was the
    optimizer's iteration count too.
So `get_variable_names()` and `get_variable_value(...)` read as on TF 2.15, and
a model folder moves between the two either way. The Keras 3 optimizer's own
variables are mapped onto those names (keras2_optimizers.py).

It also reads the two layouts earlier releases of this project wrote: `model/...`
with `global_step`, and the weights' keys above with the Keras 3 optimizer's
variables beside them (`<weight>..momentum`) and `global_step`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import keras
import tensorflow as tf

from compat.core import tf_internals
from compat.estimator.keras_engine.keras2_optimizers import keras2_optimizer, optimizer_state

_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_GLOBAL_STEP = "estimator_global_step" + _SUFFIX
_FIRST_LAYOUT_GLOBAL_STEP = "global_step" + _SUFFIX  # the second layout's too


def layers_with_weights(model: keras.Model) -> list:
    return [layer for layer in model.layers if layer.weights]


def _is_graph_network(layer) -> bool:
    """A Functional or Sequential model: Keras 2 keyed its layers by position (`layer_with_weights-<i>`)."""
    return any(cls.__name__ in ("Functional", "Sequential") for cls in type(layer).__mro__)


def weight_tree(layer) -> dict:
    """`{name: weight or subtree}`: where TF 2.15 (Keras 2) put each of `layer`'s weights in a checkpoint.

    A Functional or Sequential model's layers by position (`layer_with_weights-<i>`); any other layer's
    sub-layers by the attribute that holds them (an LSTM's `cell`, a Bidirectional's `forward_layer`, a
    MultiHeadAttention's `_query_dense`: Keras 3 keeps Keras 2's attribute names), then its own weights
    by name (`kernel`, `moving_mean`).
    """
    if _is_graph_network(layer):
        inner_layers = enumerate(layers_with_weights(layer))
        return {f"layer_with_weights-{index}": weight_tree(inner) for index, inner in inner_layers}
    tree: dict = {}
    placed: set[int] = set()
    for attribute, value in vars(layer).items():
        if isinstance(value, keras.layers.Layer) and value is not layer and value.weights:
            if not {id(weight) for weight in value.weights} <= placed:
                tree[attribute] = weight_tree(value)
                placed.update(id(weight) for weight in value.weights)
    for weight in layer.weights:
        if id(weight) not in placed:
            name = weight.path.split("/")[-1]
            tree[name if name not in tree else weight.path.replace("/", ".")] = weight
    return tree


def _weight_keys(tree: dict, prefix: str = "") -> dict:
    """`{checkpoint key: weight}` of a `weight_tree` (the object graph escapes `.` as `..`, `/` as `.S`)."""
    keys = {}
    for name, value in tree.items():
        path = prefix + name.replace(".", "..").replace("/", ".S")
        keys.update(_weight_keys(value, path + "/") if isinstance(value, dict) else {path + _SUFFIX: value})
    return keys


def _release_0_2_names(layer) -> dict:
    """`{name: weight}` for one layer as releases 0.1 and 0.2 keyed it: the last part of each weight's path,
    made unique within the layer."""
    names = {}
    for weight in layer.weights:
        name = weight.path.split("/")[-1]
        if name in names:  # a nested model: its inner layers' weights share names
            name = weight.path.replace("/", ".")
        names[name] = weight
    return names


def _saved(variable):
    """The tf.Variable behind a Keras 3 variable (what a checkpoint holds), or the variable itself."""
    return variable.value if hasattr(variable, "value") and not isinstance(variable, tf.Variable) else variable


def _node(tree: dict, node: tf.train.Checkpoint | None = None) -> tf.train.Checkpoint:
    node = node if node is not None else tf.train.Checkpoint()
    for name, value in tree.items():
        setattr(node, name, _node(value) if isinstance(value, dict) else _saved(value))
    return node


def _optimizer_node(model: keras.Model) -> tf_internals.SlotsSavedByName:
    """The `optimizer` node: Keras 2's hyperparameters as variables (the learning rate is the Keras 3
    optimizer's own, so restoring sets it, as on TF 2.15) and every weight's slots by Keras 2's names."""
    optimizer = model.optimizer
    naming = keras2_optimizer(optimizer)
    table: dict[tuple[int, str], tf.Variable] = {}  # (id of the weight's saved variable, slot name) -> slot
    built_from = [-1]  # how many variables the optimizer had when `table` was made (it builds them lazily)

    def slots() -> dict:
        if built_from[0] != len(optimizer.variables):
            built_from[0] = len(optimizer.variables)
            table.clear()
            by_weight, _ = optimizer_state(model.weights, model.optimizer)
            for weight in model.weights:
                for suffix, state in by_weight.get(weight.path, {}).items():
                    table[(id(_saved(weight)), naming.slots.get(suffix, suffix))] = _saved(state)
        return table

    node = tf_internals.SlotsSavedByName(
        lambda variable, slot_name: slots().get((id(variable), slot_name)),
        lambda: sorted({slot_name for _, slot_name in slots()}),
    )
    _, others = optimizer_state(model.weights, model.optimizer)
    others.pop("iteration", None)  # the global step, as TF 2.15's optimizer counted by it
    learning_rate = others.pop("learning_rate", None)  # None: a schedule, which Keras 2 did not save either
    for name in naming.hypers:
        if name == "learning_rate":
            if learning_rate is not None:
                setattr(node, name, _saved(learning_rate))
        else:
            setattr(node, name, tf.Variable(float(getattr(optimizer, name, 0.0) or 0.0), trainable=False, name=name))
    for index, (name, variable) in enumerate(others.items()):
        setattr(node, naming.others[index] if index < len(naming.others) else name, _saved(variable))
    return node


class _Root(tf.train.Checkpoint):
    """The checkpoint's root: no `save_counter` (tf.train.CheckpointManager adds one at its first save;
    the files are numbered by the global step here and TF 2.15 wrote no counter)."""

    @property
    def save_counter(self) -> tf.Variable:
        return tf.Variable(0, dtype=tf.int64, trainable=False)  # the manager adds 1 to it; nothing keeps it


def checkpoint_root(model: keras.Model, global_step: tf.Variable, with_optimizer: bool = True) -> tf.train.Checkpoint:
    """The object graph this engine saves: the weights by layer, their optimizer slots and the optimizer's
    hyperparameters by Keras 2's names, and the step, with TF 2.15's keys."""
    root = _node(weight_tree(model), _Root(estimator_global_step=global_step))
    if with_optimizer:
        root.optimizer = _optimizer_node(model)
    return root


def _check_weights(path: str, stored: Mapping, keys: Mapping) -> None:
    """Refuses, naming the key, a checkpoint that lacks one of the model's weights or has another shape."""
    for key, weight in keys.items():
        if key not in stored:
            raise ValueError(
                f"{path} was written for another model: it has no '{key}' for the weight '{weight.path}'; "
                "build the same architecture as the program that wrote it"
            )
        if tuple(stored[key]) != tuple(weight.shape):
            raise ValueError(
                f"{path}: '{key}' has shape {tuple(stored[key])} but the model's '{weight.path}' has "
                f"{tuple(weight.shape)}; build the same architecture as the program that wrote it"
            )


def _release_0_2_layout(model: keras.Model, global_step: tf.Variable) -> tuple[dict, dict]:
    """({key: weight}, {key: the rest of the state}) of the layout releases 0.1 and 0.2 wrote: each
    layer's weights by name, the Keras 3 optimizer's variables beside them (`kernel.momentum`)."""
    slots, others = optimizer_state(model.weights, model.optimizer)
    weights: dict = {}
    state: dict = {_FIRST_LAYOUT_GLOBAL_STEP: global_step}
    state.update({f"optimizer/{name}" + _SUFFIX: variable for name, variable in others.items()})
    for index, layer in enumerate(layers_with_weights(model)):
        for name, weight in _release_0_2_names(layer).items():
            weights.update(_weight_keys({f"layer_with_weights-{index}": {name: weight}}))
            for suffix, variable in slots.get(weight.path, {}).items():
                state.update(_weight_keys({f"layer_with_weights-{index}": {f"{name}.{suffix}": variable}}))
    return weights, state


def restore(model: keras.Model, global_step: tf.Variable, path: str) -> None:
    """Loads `path` into the model, its optimizer and the global step, whichever layout wrote it.

    Raises:
      ValueError: the checkpoint was written for another architecture (the message names the key).
    """
    # The reader of this exact prefix: list_variables first asks whether the path is a folder, which on
    # ram:// is true of any prefix of a file's name (model.ckpt-3 of model.ckpt-3.index).
    reader = tf.compat.v1.train.NewCheckpointReader(path)
    stored = reader.get_variable_to_shape_map()
    if _GLOBAL_STEP in stored:  # TF 2.15's layout, which this engine writes
        _check_weights(path, stored, _weight_keys(weight_tree(model)))
        checkpoint_root(model, global_step).restore(path).expect_partial()
    elif any(name.startswith("model/") for name in stored) and _FIRST_LAYOUT_GLOBAL_STEP in stored:
        tf.train.Checkpoint(model=model, optimizer=model.optimizer, global_step=global_step).restore(
            path
        ).assert_existing_objects_matched()
    else:
        weights, state = _release_0_2_layout(model, global_step)
        _check_weights(path, stored, weights)
        for key, variable in {**weights, **state}.items():
            if key in stored:
                variable.assign(reader.get_tensor(key))
    model.optimizer.iterations.assign(global_step)


def write_weights(model: keras.Model, global_step: tf.Variable, prefix: str) -> str:
    """The warm-start copy (`keras/keras_model.ckpt`): the whole state, as TF 2.15 wrote it there, and the
    `checkpoint` file naming it, as TF 2.15's Saver wrote beside it."""
    written = checkpoint_root(model, global_step).write(prefix)
    tf.compat.v1.train.update_checkpoint_state(os.path.dirname(prefix), written)
    return written


def adopt_saved_checkpoints(directory: str) -> None:
    """Lets a CheckpointManager over `directory` retire the checkpoints a TF 2.15 `Saver` listed there.

    TF 2.15's model_to_estimator saved with a `Saver`, whose `checkpoint` file lists its checkpoints
    without their times; a CheckpointManager takes such a list as checkpoints to keep forever, so training
    on from TF 2.15's folder left them all behind as it saved new ones. They are given their files' times
    (the manager retires the oldest first, down to `keep_checkpoint_max`).
    """
    state = tf.train.get_checkpoint_state(directory)
    if state is None or state.all_model_checkpoint_timestamps or not state.all_model_checkpoint_paths:
        return
    paths = list(state.all_model_checkpoint_paths)
    here = os.path.realpath(directory)
    if any(os.path.realpath(os.path.dirname(os.path.join(directory, path))) != here for path in paths):
        return  # a folder copied with its absolute paths: never retire files of the folder it was copied from

    def written(path: str) -> float:
        index = os.path.join(directory, path) + ".index"  # an absolute path stays as it is
        return tf.io.gfile.stat(index).mtime_nsec / 1e9 if tf.io.gfile.exists(index) else 0.0

    times = [written(path) for path in paths]
    tf.compat.v1.train.update_checkpoint_state(
        directory,
        state.model_checkpoint_path,
        all_model_checkpoint_paths=paths,
        all_model_checkpoint_timestamps=times,
        last_preserved_timestamp=min(times) - 1.0,
    )
