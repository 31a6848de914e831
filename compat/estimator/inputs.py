"""tf.compat.v1.estimator.inputs: input_fns over NumPy arrays and pandas DataFrames.

As TF 2.15's: `shuffle` must be given explicitly; `num_epochs=None` repeats for
ever; the last batch may be smaller. Called while a graph is built (the graph
engine, or a program reading the tensors itself), the input_fn dequeues a batch
from the queue TF 2.15 built (queue_input.py: the same ops, so the same op seeds
after them, and the same TensorBoard summary); called eagerly (the Keras
engine), it returns the same batches as a Dataset.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from compat.estimator.queue_input import dequeued_batch

_DIRECT_KEY = "__direct_np_input_key__"
# TF 2.15's pandas_io.HAS_PANDAS, which programs read before calling pandas_input_fn
HAS_PANDAS = importlib.util.find_spec("pandas") is not None


@dataclasses.dataclass(frozen=True)
class _QueueSettings:
    """The queue TF 2.15 fed: its capacity, threads, and the rows a shuffling one keeps."""

    capacity: int
    num_threads: int
    min_after_dequeue: float | None


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
) -> Callable[[], Any]:
    """An input_fn giving batches of `x` (and `y`): features as `x` is shaped, a dict or one tensor."""
    return _arrays_input_fn(x, y, batch_size, num_epochs, shuffle, _QueueSettings(queue_capacity, num_threads, None))


def _arrays_input_fn(
    x: Any, y: Any, batch_size: int, num_epochs: int | None, shuffle: bool | None, queue: _QueueSettings
) -> Callable[[], Any]:
    if not isinstance(shuffle, bool):
        raise ValueError(f"shuffle must be provided explicitly as a bool, not {shuffle}")
    features, features_are_dict = _as_dict(x, "x")
    targets: dict = {}
    targets_are_dict = False
    if y is not None:
        targets, targets_are_dict = _as_dict(y, "y")
        clash = set(features) & set(targets) if targets_are_dict else set()
        if clash:
            raise ValueError(f"{sorted(clash)} duplicate keys are found in both x and y")
    lengths = {key: len(value) for key, value in {**features, **targets}.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"Length of tensors in x and y is mismatched. All elements in x and y must have the same length: {lengths}"
        )
    if batch_size <= 0 or (num_epochs is not None and num_epochs <= 0):
        raise ValueError(f"batch_size and num_epochs must be > 0, given {batch_size} and {num_epochs}")

    feature_keys = sorted(features) if features_are_dict else [_DIRECT_KEY]
    target_keys = None if y is None else (sorted(targets) if targets_are_dict else [_DIRECT_KEY])

    def input_fn() -> Any:
        x_part = features if features_are_dict else features[_DIRECT_KEY]
        if not tf.executing_eagerly():  # TF 2.15's graph: a batch dequeued from its queue
            columns = [features[k] for k in feature_keys] + [targets[k] for k in target_keys or []]
            return _graph_batch(columns, feature_keys, target_keys, features_are_dict, targets_are_dict, batch_size,
                                num_epochs, shuffle, queue)  # fmt: skip
        if y is None:
            dataset = tf.data.Dataset.from_tensor_slices(x_part)
        else:
            y_part = targets if targets_are_dict else targets[_DIRECT_KEY]
            dataset = tf.data.Dataset.from_tensor_slices((x_part, y_part))
        if shuffle:
            dataset = dataset.shuffle(queue.capacity)
        # Repeated for ever, every batch is whole: dropping the (never met) remainder gives the batch
        # dimension its static size, as TF 2.15's `dequeue_many` did.
        dataset = dataset.repeat(num_epochs).batch(batch_size, drop_remainder=num_epochs is None)
        return dataset.prefetch(tf.data.AUTOTUNE)

    return input_fn


def _graph_batch(
    columns: list[np.ndarray],
    feature_keys: list[str],
    target_keys: list[str] | None,
    features_are_dict: bool,
    targets_are_dict: bool,
    batch_size: int,
    num_epochs: int | None,
    shuffle: bool,
    queue: _QueueSettings,
) -> Any:
    """The dequeued batch as the input_fn returns it: features (a dict, or the one array's tensor), targets."""
    tensors = dequeued_batch(
        columns, batch_size, num_epochs, shuffle, queue.capacity, queue.num_threads, queue.min_after_dequeue
    )
    feature_part = dict(zip(feature_keys, tensors))
    features = feature_part if features_are_dict else feature_part[_DIRECT_KEY]
    if target_keys is None:
        return features
    target_part = dict(zip(target_keys, tensors[len(feature_keys) :]))
    return features, (target_part if targets_are_dict else target_part[_DIRECT_KEY])


def pandas_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int | None = 1000,
    num_threads: int = 1,
    target_column: str = "target",
) -> Callable[[], Any]:
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
    if queue_capacity is None:  # as TF 2.15: room for the DataFrame (four times, shuffled)
        queue_capacity = 4 * len(x) if shuffle else len(x)
    queue = _QueueSettings(queue_capacity, num_threads, max(queue_capacity / 4, 1))
    return _arrays_input_fn(features, target, batch_size, num_epochs, shuffle, queue)
