"""Keras 2's optimizers as TF 2.15's model_to_estimator ran them, for the Keras 3 optimizers that stand in.

TF 2.15 converted a model's optimizer to Keras 2's (`tf.keras.optimizers.legacy`)
and ran it in graph mode. The Keras engine trains a Keras 3 optimizer of the same
family, which computes the same dense update (SGD, Adam, Adamax, RMSprop, Adagrad,
Adadelta, Ftrl; not Nadam; RMSprop without momentum put its epsilon outside the
square root, which `update_as_keras2` puts back). Two things differ, and are put back here:
  - names: Keras 2 called Adam's state `m` and `v` (Keras 3: `momentum`,
    `velocity`) and kept hyperparameters as variables (checkpoint.py writes them);
  - sparse gradients (an Embedding's): Keras 2 summed a row that appears twice in
    a batch before its update, where Keras 3 squares each repeat on its own in
    Adam's `v`, RMSprop's and Adagrad's accumulators; and SGD and RMSprop with
    momentum, Adamax and Ftrl updated only the rows the gradient names (their slots
    too), where Keras 3 moves every row (Ftrl sets an untouched row to zero).
    `update_as_keras2` makes a Keras 3 optimizer do both as Keras 2 did, measured
    against TF 2.15 in tests/test_keras_estimator.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf

from compat.core import tf_internals


@dataclasses.dataclass(frozen=True)
class Keras2Optimizer:
    """Keras 2's optimizer of one family as TF 2.15's model_to_estimator ran it (graph mode): how it named its
    state, and how it updated a variable whose gradient is sparse (an Embedding's)."""

    hypers: tuple[str, ...]  # its hyperparameter variables; Keras 3 keeps each as an attribute of that name
    slots: Mapping[str, str]  # a Keras 3 slot's suffix (`kernel_momentum`) -> Keras 2's slot name
    others: tuple[str, ...] = ()  # Keras 2's names of its other state, in the order of Keras 3's
    # Where Keras 3's optimizer of the family computes another update than Keras 2's did (None: the same
    # update, checked against TF 2.15 in tests/test_keras_estimator.py)
    differs: str | None = None
    # When Keras 2 updated only the rows a sparse gradient names (its slots too): "always", the name of the
    # Keras 3 attribute that must be non-zero (SGD's and RMSprop's `momentum`), or None (every row, as Keras 3)
    lazy_when: str | None = None


_BETAS = ("beta_1", "beta_2", "decay", "learning_rate")
_KERAS2_OPTIMIZERS = {
    "SGD": Keras2Optimizer(("decay", "learning_rate", "momentum"), {"momentum": "momentum"}, lazy_when="momentum"),
    "Adam": Keras2Optimizer(_BETAS, {"momentum": "m", "velocity": "v", "velocity_hat": "vhat"}),
    "RMSprop": Keras2Optimizer(
        ("decay", "learning_rate", "momentum", "rho"),
        {"velocity": "rms", "momentum": "momentum", "average_gradient": "mg"},
        lazy_when="momentum",
    ),
    "Adagrad": Keras2Optimizer(("decay", "learning_rate"), {"accumulator": "accumulator"}),
    "Adadelta": Keras2Optimizer(
        ("decay", "learning_rate", "rho"), {"accumulated_grad": "accum_grad", "accumulated_delta_var": "accum_var"}
    ),
    "Adamax": Keras2Optimizer(_BETAS, {"momentum": "m", "norm": "v"}, lazy_when="always"),
    "Nadam": Keras2Optimizer(
        _BETAS,
        {"momentum": "m", "velocity": "v"},
        others=("momentum_cache",),
        differs="Keras 2's Nadam divided its learning rate by (1 + 0.004 * step) and decayed its momentum "
        "schedule by 0.96 every 250 steps; Keras 3's keeps the rate and decays the schedule by 0.96 every step",
    ),
    "Ftrl": Keras2Optimizer(
        ("beta", "decay", "l1_regularization_strength", "l2_regularization_strength", "learning_rate")
        + ("learning_rate_power",),
        {"accumulator": "accumulator", "linear": "linear"},
        lazy_when="always",
    ),
}
# An optimizer Keras 2 did not have in graph mode (AdamW, Lion, ...): its slots keep Keras 3's names.
_KERAS3_ONLY = Keras2Optimizer(("decay", "learning_rate"), {})


def keras2_optimizer(optimizer: keras.optimizers.Optimizer) -> Keras2Optimizer:
    """The Keras 2 family of `optimizer` (a subclass of Adam is an Adam)."""
    return next(
        (_KERAS2_OPTIMIZERS[cls.__name__] for cls in type(optimizer).__mro__ if cls.__name__ in _KERAS2_OPTIMIZERS),
        _KERAS3_ONLY,
    )


def optimizer_state(weights: Sequence, optimizer: keras.optimizers.Optimizer) -> tuple[dict, dict]:
    """({weight path: {Keras 3 slot suffix: variable}}, {name: the optimizer's other variables}).

    Keras 3 names a weight's optimizer state after the weight's path
    (`dense_kernel_momentum`); the layer names in it change from one process to
    the next, so the state is filed under its weight instead.
    """
    prefixes = sorted(
        ((weight.path.replace("/", "_") + "_", weight.path) for weight in weights), key=lambda pair: -len(pair[0])
    )
    slots: dict[str, dict] = {}
    others = {}
    for variable in optimizer.variables:
        name = variable.path.split("/")[-1]
        owner = next(((prefix, path) for prefix, path in prefixes if name.startswith(prefix)), None)
        if owner is None:
            others[name] = variable
        else:
            slots.setdefault(owner[1], {})[name[len(owner[0]) :]] = variable
    return slots, others


def _summed(gradient: Any) -> Any:
    """A sparse gradient with each row once, its repeats summed (a dense one as it is)."""
    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    rows, position = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, position, tf.shape(rows)[0])
    return tf.IndexedSlices(values, rows, gradient.dense_shape)


def _is_lazy(optimizer: keras.optimizers.Optimizer) -> bool:
    when = keras2_optimizer(optimizer).lazy_when
    return when == "always" or (when is not None and bool(getattr(optimizer, when, 0)))


def _untouched_rows_kept(optimizer, grads: list, variables: Sequence, apply: Callable) -> Any:
    """`apply(grads, variables)`, then every row no sparse gradient names, of its variable and of that
    variable's slots, back to its value before."""
    slots, _ = optimizer_state(variables, optimizer)
    kept = []
    for gradient, variable in zip(grads, variables):
        if isinstance(gradient, tf.IndexedSlices):
            rows = variable.shape[0]
            touched = tf.tensor_scatter_nd_update(
                tf.zeros([rows], tf.bool), tf.expand_dims(gradient.indices, 1), tf.ones_like(gradient.indices, tf.bool)
            )
            for state in (variable, *slots.get(variable.path, {}).values()):
                mask = tf.reshape(touched, [rows] + [1] * (len(state.shape) - 1))
                kept.append((state, mask, tf.identity(state.value)))
    result = apply(grads, variables)
    for state, mask, before in kept:
        state.assign(tf.where(mask, state.value, before))
    return result


def update_as_keras2(optimizer: keras.optimizers.Optimizer) -> None:
    """Makes `optimizer` (a Keras 3 one that model_to_estimator trains) treat sparse gradients as Keras 2's
    optimizer of its family did: repeated rows summed first, and where Keras 2 was lazy, only the rows named
    updated. Under a distribution strategy only the first holds (the rows are kept only without one)."""
    apply = optimizer.apply
    lazy = _is_lazy(optimizer)

    def apply_as_keras2(grads, trainable_variables=None):
        grads = [_summed(gradient) for gradient in grads]
        sparse = any(isinstance(gradient, tf.IndexedSlices) for gradient in grads)
        if lazy and sparse and trainable_variables is not None and not tf.distribute.has_strategy():
            return _untouched_rows_kept(optimizer, grads, trainable_variables, apply)
        return apply(grads, trainable_variables)

    optimizer.apply = apply_as_keras2
    if keras2_optimizer(optimizer) is _KERAS2_OPTIMIZERS["RMSprop"] and not optimizer.momentum:
        optimizer.update_step = _rmsprop_step_as_keras2(optimizer)


def _rmsprop_step_as_keras2(optimizer: keras.optimizers.Optimizer) -> Callable:
    """Keras 2's RMSprop without momentum divided the step by sqrt(rms) + epsilon, where Keras 3's divides by
    sqrt(rms + epsilon) (with momentum, both by the latter): near a zero gradient the two differ by orders of
    magnitude. The update step of Keras 2's, for a Keras 3 RMSprop."""

    def update_step(gradient: Any, variable: Any, learning_rate: Any) -> None:
        velocity, average = tf_internals.keras_rmsprop_slots(optimizer, variable)
        gradient = tf.cast(tf.convert_to_tensor(gradient), variable.dtype)
        rho = tf.cast(optimizer.rho, variable.dtype)
        optimizer.assign(velocity, rho * velocity + (1 - rho) * tf.square(gradient))
        denominator = tf.convert_to_tensor(velocity)
        if average is not None:
            optimizer.assign(average, rho * average + (1 - rho) * gradient)
            denominator = denominator - tf.square(tf.convert_to_tensor(average))
        step = tf.cast(learning_rate, variable.dtype) * gradient / (tf.sqrt(denominator) + optimizer.epsilon)
        optimizer.assign_sub(variable, step)

    return update_step
