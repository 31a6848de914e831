"""tf.compat.v1.estimator.inputs: input_fns over NumPy arrays and pandas DataFrames.

As TF 2.15's: `shuffle` must be given explicitly; `num_epochs=None` repeats for
ever; the last batch may be smaller. Built on tf.data rather than queues: the
input_fn returns a Dataset when called eagerly (the Keras engine), and that
dataset's next batch, as tensors, when called while a graph is built (the
graph engine, or a program reading the tensors itself), as TF 2.15's did.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

_DIRECT_KEY = "__direct_np_input_key__"
# TF 2.15's pandas_io.HAS_PANDAS, which programs read before calling pandas_input_fn
HAS_PANDAS = importlib.util.find_spec("pandas") is not None


def _as_dict(data: Any, what: str) -> tuple[dict, bool]:
    if isinstance(data, dict):
        return {key: np.asarray(value) for key, value in data.items()}, True
    if isinstance(data, np.ndarray) or hasattr(data, "__array__"):
        return {_DIRECT_KEY: np.asarray(data)}, False
    raise TypeError(f"{what} must be a dict of arrays or an array, given {type(data).__name__}")


def numpy_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Callable[[], tf.data.Dataset]:
    """An input_fn giving batches of `x` (and `y`): features as `x` is shaped, a dict or one tensor."""
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided explicitly as a bool, not {shuffle}")
    features, features_are_dict = _as_dict(x, "x")
    if y is not None:
        targets, targets_are_dict = _as_dict(y, "y")
        clash = set(features) & set(targets) if targets_are_dict else set()
        if clash:
            raise ValueError(f"{sorted(clash)} duplicate keys are found in both x and y")
    lengths = {key: len(value) for key, value in {**features, **(targets if y is not None else {})}.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"Length of tensors in x and y is mismatched. All elements in x and y must have the same length: {lengths}"
        )
    if batch_size <= 0 or (num_epochs is not None and num_epochs <= 0):
        raise ValueError(f"batch_size and num_epochs must be > 0, given {batch_size} and {num_epochs}")

    def input_fn() -> tf.data.Dataset:
        x_part = features if features_are_dict else features[_DIRECT_KEY]
        if y is None:
            dataset = tf.data.Dataset.from_tensor_slices(x_part)
        else:
            y_part = targets if targets_are_dict else targets[_DIRECT_KEY]
            dataset = tf.data.Dataset.from_tensor_slices((x_part, y_part))
        if shuffle:
            dataset = dataset.shuffle(queue_capacity)
        # Repeated for ever, every batch is whole: dropping the (never met) remainder gives the batch
        # dimension its static size, as TF 2.15's `dequeue_many` did.
        dataset = dataset.repeat(num_epochs).batch(batch_size, drop_remainder=num_epochs is None)
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
        if tf.executing_eagerly():
            return dataset
        # Called while a graph is built, TF 2.15's input_fn gave tensors (dequeued batches): so does this one.
        return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()

    return input_fn


def pandas_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
    target_column: str = "target",
) -> Callable[[], tf.data.Dataset]:
    """An input_fn over a pandas DataFrame `x` (features by column) and a Series or DataFrame `y`."""
    try:
        import pandas
    except ImportError as error:
        raise ImportError("pandas_input_fn needs pandas: pip install pandas") from error
    if not isinstance(x, pandas.DataFrame):
        raise TypeError(f"x must be a pandas DataFrame, given {type(x).__name__}")
    if y is not None and target_column in x.columns:
        raise ValueError(
            f"Cannot use name {target_column} for target column: DataFrame already has a column with that name"
        )
    if y is not None and not x.index.equals(y.index):
        raise ValueError("Index for x and y are mismatched.")
    features = {str(column): x[column].values for column in x.columns}
    target: Any
    if isinstance(y, pandas.DataFrame):
        target = {str(column): y[column].values for column in y.columns}
    else:
        target = None if y is None else y.values
    return numpy_input_fn(features, target, batch_size, num_epochs, shuffle, queue_capacity, num_threads)
