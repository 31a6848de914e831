"""TF 1.x's `tf.contrib.layers` functions that estimator-era models built on and TensorFlow 2 lacks, with TF 1.x's
variable names, so that checkpoints TF 1.x programs wrote (the released BERT checkpoints among them) restore.

`check --fix` rewrites `from tensorflow.contrib import layers as contrib_layers` to import this module when every
name the file takes from it is here (`__all__`), and `tf.contrib.layers.<name>` to `compat.estimator.contrib_layers
.<name>`. The other tf.contrib.layers names live on in tf-slim (`pip install tf-slim`), where the check sends them.
Importing this module loads nothing; TensorFlow loads with the first call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["layer_norm"]


def layer_norm(
    inputs: Any,
    center: bool = True,
    scale: bool = True,
    activation_fn: Callable | None = None,
    reuse: bool | None = None,
    variables_collections: Sequence[str] | dict[str, Sequence[str]] | None = None,
    outputs_collections: Sequence[str] | None = None,
    trainable: bool = True,
    begin_norm_axis: int = 1,
    begin_params_axis: int = -1,
    scope: str | None = None,
) -> Any:
    """TF 1.x's `tf.contrib.layers.layer_norm`: normalizes `inputs` over axes `begin_norm_axis` to the last, then
    scales by `gamma` and shifts by `beta`, variables of shape `inputs.shape[begin_params_axis:]` named
    `<scope>/beta` and `<scope>/gamma` (scope "LayerNorm" by default) as TF 1.x named them, in the graph's
    global, model and (when `trainable`) trainable variables.

    Args:
        inputs: a tensor of known rank.
        center, scale: whether to add `beta`, and to multiply by `gamma`.
        activation_fn: applied to the result, if given.
        reuse: reuse the variables of `scope`.
        variables_collections: collections for the variables, or {"beta": [...], "gamma": [...]}.
        outputs_collections: collections to add the result to.
        trainable: whether the variables train.
        begin_norm_axis, begin_params_axis: the first axis normalized over (negative counts from the end), and
            the first axis of `beta` and `gamma`.
        scope: the variable scope.

    Returns:
        A tensor of `inputs`' shape and dtype.

    Raises:
        ValueError: `inputs`' rank is unknown, an axis is not below it, or `inputs.shape[begin_params_axis:]`
            is not fully known.
    """
    import tensorflow as tf

    v1 = tf.compat.v1
    with v1.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse):
        inputs = tf.convert_to_tensor(inputs)
        norm_axes, params_shape = _axes(inputs, begin_norm_axis, begin_params_axis)
        dtype = inputs.dtype.base_dtype
        beta, gamma = _parameters(params_shape, dtype, center, scale, variables_collections, trainable)
        mean, variance = tf.nn.moments(inputs, norm_axes, keepdims=True)
        # TF 1.x's epsilon, larger for float16, whose range is smaller
        epsilon = 1e-3 if dtype == tf.float16 else 1e-12
        outputs = tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, epsilon)
        outputs.set_shape(inputs.shape)
        if activation_fn is not None:
            outputs = activation_fn(outputs)
        if outputs_collections:
            v1.add_to_collections(outputs_collections, outputs)
        return outputs


def _axes(inputs: Any, begin_norm_axis: int, begin_params_axis: int) -> tuple[list[int], Any]:
    """The axes normalized over and the parameters' shape, checked as TF 1.x checked them."""
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError(f"layer_norm: {inputs.name} has an unknown rank; give it a static shape")
    norm_from = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
    if begin_params_axis >= rank or norm_from >= rank:
        raise ValueError(
            f"layer_norm: begin_params_axis ({begin_params_axis}) and begin_norm_axis ({begin_norm_axis}) "
            f"must be below the rank of {inputs.name} ({rank})"
        )
    params_shape = inputs.shape[begin_params_axis:]
    if not params_shape.is_fully_defined():
        raise ValueError(
            f"layer_norm: {inputs.name}'s shape from axis {begin_params_axis} on must be known: {inputs.shape}"
        )
    return list(range(norm_from, rank)), params_shape


def _parameters(shape: Any, dtype: Any, center: bool, scale: bool, collections: Any, trainable: bool) -> list:
    """[beta, gamma], None for each not wanted; `collections` for both, or per name ({"beta": [...]})."""
    import tensorflow as tf

    made = []
    for name, initializer, wanted in (
        ("beta", tf.compat.v1.zeros_initializer, center),
        ("gamma", tf.compat.v1.ones_initializer, scale),
    ):
        given = collections.get(name) if isinstance(collections, dict) else collections
        made.append(_model_variable(name, shape, dtype, initializer(), given, trainable) if wanted else None)
    return made


def _model_variable(name: str, shape: Any, dtype: Any, initializer: Any, collections: Any, trainable: bool) -> Any:
    """A TF 1.x model variable: in the global and model collections besides any given (and trainable ones)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    every = {*(collections or ()), v1.GraphKeys.GLOBAL_VARIABLES, v1.GraphKeys.MODEL_VARIABLES}
    return v1.get_variable(name, shape, dtype, initializer, collections=sorted(every), trainable=trainable)
