"""The queue numpy_input_fn and pandas_input_fn fed TF 2.15's graphs from, rebuilt on TensorFlow's queues.

Called while a graph is built, TF 2.15's input_fns enqueued rows from a thread of a queue runner and
returned a dequeued batch. Their graph is what a user's results depend on: op seeds follow the number
of ops made before them (a DNN's first weights, dropout masks), and TensorBoard showed the queue's
fill. This module makes the same ops in the same number: a `FIFOQueue` (`RandomShuffleQueue` when
shuffling) under `enqueue_input/`, per thread one op per column, the row numbers first, and an
`enqueue_many`; a `QueueRunner` in the graph's collection (MonitoredSession starts it); the
`fraction_over_<m>_of_<n>_full` summary; `dequeue_many` (`dequeue_up_to` when epochs end). The
rows come from NumPy functions where TF 2.15 fed placeholders (one op each, as a placeholder was),
read as TF 2.15 read them: sequentially from row 0, or from a random row when shuffling, as many
epochs as asked, the last batch short.
"""

from __future__ import annotations

import random
import threading

import numpy as np
import tensorflow as tf

_NAME = "enqueue_input"


class _RowFeeder:
    """One thread's rows: the next batch's row numbers, then each column at those rows."""

    def __init__(self, columns: list[np.ndarray], batch_size: int, shuffle: bool, num_epochs: int | None) -> None:
        self._columns, self._batch_size, self._num_epochs = columns, batch_size, num_epochs
        self._length = len(columns[0])
        self._start = random.randrange(self._length) if shuffle else 0  # TF 2.15: a random first row, unseeded
        self._epoch_end = (self._start - 1) % self._length
        self._epoch = 0
        self._lock = threading.Lock()

    def next_rows(self) -> np.ndarray:
        """The row numbers of the next batch; StopIteration (the queue runner's end) after the last epoch."""
        with self._lock:
            if self._num_epochs is not None and self._epoch >= self._num_epochs:
                raise StopIteration
            rows = [i % self._length for i in range(self._start, self._start + self._batch_size)]
            ends = [position for position, row in enumerate(rows) if row == self._epoch_end]
            self._epoch += len(ends)
            if self._num_epochs is not None and self._epoch >= self._num_epochs:
                rows = rows[: ends[-(self._epoch - self._num_epochs + 1)] + 1]
                self._epoch = self._num_epochs
            self._start = (rows[-1] + 1) % self._length
            return np.asarray(rows, dtype=np.int64)

    def column(self, index: int):
        array = self._columns[index]
        return lambda rows: array[rows]


def _dtype(array: np.ndarray) -> tf.DType:
    return tf.string if array.dtype == object else tf.as_dtype(array.dtype)


def dequeued_batch(
    columns: list[np.ndarray],
    batch_size: int,
    num_epochs: int | None,
    shuffle: bool,
    queue_capacity: int,
    num_threads: int,
    min_after_dequeue: float | None = None,
) -> list[tf.Tensor]:
    """One batch of `columns` (each a NumPy array of the same length), dequeued from a queue fed by
    `num_threads` threads, as TF 2.15's numpy_input_fn built it in the default graph.

    Args:
      columns: the arrays, in the order their tensors are returned.
      batch_size: rows per batch.
      num_epochs: passes over the rows per thread (None: for ever).
      shuffle: read from a random row into a shuffling queue.
      queue_capacity: the queue's capacity.
      num_threads: threads feeding the queue (one when not shuffling, as TF 2.15 advised).
      min_after_dequeue: rows a shuffling queue keeps (default a quarter of its capacity).

    Returns:
      The batch's tensors, one per column.
    """
    dtypes = [tf.int64] + [_dtype(column) for column in columns]
    shapes = [()] + [column.shape[1:] for column in columns]
    with tf.name_scope(_NAME):
        if shuffle:
            min_after_dequeue = int(queue_capacity / 4 if min_after_dequeue is None else min_after_dequeue)
            queue = tf.queue.RandomShuffleQueue(queue_capacity, min_after_dequeue, dtypes=dtypes, shapes=shapes)
        else:
            min_after_dequeue = 0
            queue = tf.queue.FIFOQueue(queue_capacity, dtypes=dtypes, shapes=shapes)
        enqueue_ops = []
        for _ in range(num_threads):
            feeder = _RowFeeder(columns, batch_size, shuffle, num_epochs)
            rows = tf.numpy_function(feeder.next_rows, [], tf.int64, stateful=True)
            values = [tf.numpy_function(feeder.column(i), [rows], dtypes[i + 1]) for i in range(len(columns))]
            enqueue_ops.append(queue.enqueue_many([rows, *values]))
        tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(queue, enqueue_ops))
        free = queue_capacity - min_after_dequeue
        full = tf.cast(tf.maximum(0, queue.size() - min_after_dequeue), tf.float32) * (1.0 / free)
        # TF 2.15's tag, the queue's name run into "fraction" (as TensorBoard showed it)
        tf.compat.v1.summary.scalar(f"queue/{queue.name}fraction_over_{min_after_dequeue}_of_{free}_full", full)
    batch = queue.dequeue_many(batch_size) if num_epochs is None else queue.dequeue_up_to(batch_size)
    return list(batch[1:])
