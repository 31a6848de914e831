"""Calling an `input_fn` as tf.estimator did, and reading what it returns.

An `input_fn` gets `params`, `mode`, `config` and `input_context` when its
signature asks for them. It may return a Dataset of `(features, labels)` or of
features, a `(features, labels)` tuple, or features alone (labels None).

Legacy input_fns return `tf.compat.v1.data.make_one_shot_iterator(ds).get_next()`.
Run eagerly (the Keras engine), that yields one batch of values, not the dataset;
`call_input_fn` calls them inside `tf_internals.v1_iterators_give_their_dataset()`,
where the iterator factories (wrapped when compat.estimator is imported) lead
back to the dataset.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from compat.core import tf_internals

# One warning per input_fn (by module and qualified name), not one per process: a
# second legacy input_fn in the same program deserves its own line in the log.
_warned_input_fns: set[str] = set()


def _call_capturing_iterators(input_fn: Callable, kwargs: dict) -> Any:
    """Calls `input_fn`; iterator tensors it returns are replaced by their dataset."""
    with tf_internals.v1_iterators_give_their_dataset():
        result = input_fn(**kwargs)
    datasets = [tf_internals.dataset_behind(x) for x in tf.nest.flatten(result)]
    datasets = [dataset for dataset in datasets if dataset is not None]
    if not datasets:
        return result
    name = input_fn_name(input_fn)
    if name not in _warned_input_fns:
        tf.compat.v1.logging.warning(
            "input_fn %s returned iterator tensors (make_one_shot_iterator(...).get_next()); "
            "return the tf.data.Dataset itself instead",
            name,
        )
        _warned_input_fns.add(name)
    return datasets[0]


def input_fn_name(input_fn: Callable) -> str:
    """`module.qualified_name` of an input_fn, for log lines."""
    return f"{getattr(input_fn, '__module__', '')}.{getattr(input_fn, '__qualname__', repr(input_fn))}"


def input_fn_kwargs(input_fn: Callable, **candidates: Any) -> dict:
    """The candidates that `input_fn`'s signature names; as tf.estimator, `**kwargs` names none."""
    parameters = inspect.signature(input_fn).parameters
    return {
        name: value
        for name, value in candidates.items()
        if name in parameters and parameters[name].kind is not inspect.Parameter.VAR_KEYWORD
    }


def call_input_fn(
    input_fn: Callable, mode: str, config: Any, params: dict, input_context: tf.distribute.InputContext | None = None
) -> tf.data.Dataset:
    """Calls `input_fn` eagerly with the arguments its signature asks for; returns a Dataset.

    Tensors (not a Dataset) are one batch: training repeats it, as a graph-mode
    input_fn's tensors did at every step; evaluation and prediction read it once,
    where TF 2.15 would have looped on it forever.
    """
    kwargs = input_fn_kwargs(input_fn, params=params, mode=mode, config=config, input_context=input_context)
    result = _call_capturing_iterators(input_fn, kwargs)
    if isinstance(result, tf.data.Dataset):
        return result
    batch = tf.data.Dataset.from_tensors(result)
    return batch.repeat() if mode == "train" else batch


def split_features_labels(element: Any) -> tuple[Any, Any]:
    """`(features, labels)` of one element, as TF 2.15 read it: a tuple or list must have two items; anything
    else is features, with labels None."""
    if isinstance(element, (tuple, list)):
        if len(element) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return element[0], element[1]
    return element, None


class DatasetInitializerHook(tf.compat.v1.train.SessionRunHook):
    """Initialises an input_fn's dataset iterator once the session exists.

    `replacement`, when given, is called once the whole graph is built and may
    return a dataset of the same structure to read instead (the input cache's
    rewrite): made then, its ops come after the model's, so the op-level seeds
    TF 2.15 gave the model's initialisers stay the same.
    """

    def __init__(self, iterator, replacement: Callable[[], tf.data.Dataset | None] | None = None) -> None:
        self._iterator = iterator
        self._replacement = replacement

    def begin(self):
        dataset = self._replacement() if self._replacement is not None else None
        self._initializer = self._iterator.initializer if dataset is None else self._iterator.make_initializer(dataset)

    def after_create_session(self, session, coord):
        session.run(self._initializer)


def parse_input_fn_result(
    result: Any, replacement: Callable[[], tf.data.Dataset | None] | None = None
) -> tuple[Any, Any, list]:
    """`(features, labels, hooks)` in the current graph from what a graph-mode input_fn returned: a Dataset
    is read through an initializable iterator that a hook initialises (from `replacement()`'s dataset when
    that gives one)."""
    hooks = []
    if isinstance(result, tf.data.Dataset):
        iterator = tf.compat.v1.data.make_initializable_iterator(result)
        hooks.append(DatasetInitializerHook(iterator, replacement))
        result = iterator.get_next()
    return (*split_features_labels(result), hooks)


def with_input_options(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """The user's dataset with autotuning and a final prefetch, so the step never waits on input.

    A prefetch after one that is already there costs nothing measurable, so it
    is added unconditionally rather than by inspecting the pipeline.
    """
    options = tf.data.Options()
    options.autotune.enabled = True
    options.experimental_optimization.map_parallelization = True
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)
