"""tf.estimator.experimental early stopping: hooks that stop training on evaluation results.

Each hook reads the evaluation events in `eval_dir` (default: the estimator's
`eval/`), every `run_every_secs` or `run_every_steps`, and requests a stop
when its predicate holds, as TF 2.15 did:

  stop_if_higher_hook / stop_if_lower_hook           a metric crossed a threshold
  stop_if_no_increase_hook / stop_if_no_decrease_hook  no improvement for N steps
  make_early_stopping_hook                           any `should_stop_fn()`

With no improvement, the count is the latest evaluation's step minus the step
of the best one; evaluations before `min_steps` are ignored.
"""

from __future__ import annotations

import collections
import operator
import os
from collections.abc import Callable

import tensorflow as tf


def read_eval_metrics(eval_dir: str) -> collections.OrderedDict[int, dict]:
    """`{global_step: {metric: value}}` from the event files in `eval_dir`, in step order."""
    return eval_results_in(sorted(tf.io.gfile.glob(os.path.join(eval_dir, "*.tfevents.*"))))


def eval_results_in(paths) -> collections.OrderedDict[int, dict]:
    """`{global_step: {metric: value}}` from these event files, in step order.

    Reads the simple values of graph-mode summaries and the scalar tensors of
    TF2 summaries (one event per value) alike, grouped by step.
    """
    results: dict[int, dict] = collections.defaultdict(dict)
    for path in paths:
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    results[event.step][value.tag] = value.simple_value
                elif value.HasField("tensor") and value.tensor.dtype in (
                    tf.float32.as_datatype_enum,
                    tf.float64.as_datatype_enum,
                ):
                    array = tf.make_ndarray(value.tensor)
                    if array.size == 1:
                        results[event.step][value.tag] = float(array.reshape(()))
    return collections.OrderedDict(sorted(results.items()))


def _stop_signal() -> tf.Variable:
    """The graph's `signal_early_stopping/STOP`, a boolean that TF 2.15's early-stopping hooks set when they
    stopped training: it is in the graph's global variables, so the checkpoints carry it, as TF 2.15's did."""
    with tf.compat.v1.variable_scope("signal_early_stopping", reuse=tf.compat.v1.AUTO_REUSE):
        return tf.compat.v1.get_variable(
            "STOP",
            shape=[],
            dtype=tf.bool,
            initializer=tf.compat.v1.constant_initializer(False),
            collections=[tf.compat.v1.GraphKeys.GLOBAL_VARIABLES],
            trainable=False,
        )


class _StopOnPredicateHook(tf.compat.v1.train.SessionRunHook):
    """Requests a stop when `should_stop_fn()` is true, checked every `every_secs` or `every_steps`."""

    def __init__(
        self, should_stop_fn: Callable[[], bool], run_every_secs: float | None = 60, run_every_steps: int | None = None
    ):
        if not callable(should_stop_fn):
            raise TypeError(f"`should_stop_fn` must be callable, given: {should_stop_fn!r}")
        self._should_stop_fn = should_stop_fn
        self._timer = tf.compat.v1.train.SecondOrStepTimer(every_secs=run_every_secs, every_steps=run_every_steps)
        self._global_step_tensor = None
        self._stop_op: tf.Operation | None = None

    def begin(self):
        self._global_step_tensor = tf.compat.v1.train.get_global_step()
        if self._global_step_tensor is None:
            raise RuntimeError("An early stopping hook needs a global step in the graph")
        self._stop_op = None if tf.executing_eagerly() else tf.compat.v1.assign(_stop_signal(), True)

    def after_run(self, run_context, run_values):
        # Read after the step, not fetched beside it: a fetch of the global step in the train op's own run
        # is not ordered with its increment and may see either value, so a check could be skipped.
        global_step = int(run_context.session.run(self._global_step_tensor))
        if self._timer.should_trigger_for_step(global_step):
            self._timer.update_last_triggered_step(global_step)
            if self._should_stop_fn():
                tf.compat.v1.logging.info("Requesting early stopping at global step %d", global_step)
                if self._stop_op is not None:
                    run_context.session.run(self._stop_op)
                run_context.request_stop()


def make_early_stopping_hook(
    estimator, should_stop_fn: Callable[[], bool], run_every_secs: float | None = 60, run_every_steps: int | None = None
) -> tf.compat.v1.train.SessionRunHook:
    """A hook that stops training when `should_stop_fn()` returns True."""
    del estimator  # one machine: no cross-worker stop variable is needed
    if run_every_secs is not None and run_every_steps is not None:
        raise ValueError("Only one of run_every_secs and run_every_steps can be set.")
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps)


def _eval_dir(estimator, eval_dir: str | None) -> str:
    return eval_dir or estimator.eval_dir()


def _threshold_hook(
    estimator,
    metric_name: str,
    threshold: float,
    is_past: Callable,
    word: str,
    eval_dir: str | None,
    min_steps: int,
    run_every_secs,
    run_every_steps,
):
    folder = _eval_dir(estimator, eval_dir)

    def crossed() -> bool:
        for step, metrics in read_eval_metrics(folder).items():
            if step < min_steps or metric_name not in metrics:
                continue
            value = metrics[metric_name]
            if is_past(value, threshold):
                tf.compat.v1.logging.info(
                    'At step %s, metric "%s" has value %s which is %s the configured threshold (%s) '
                    "for early stopping.",
                    step,
                    metric_name,
                    value,
                    word,
                    threshold,
                )
                return True
        return False

    return make_early_stopping_hook(estimator, crossed, run_every_secs, run_every_steps)


def _no_improvement_hook(
    estimator,
    metric_name: str,
    max_steps: int,
    is_better: Callable,
    word: str,
    eval_dir: str | None,
    min_steps: int,
    run_every_secs,
    run_every_steps,
):
    folder = _eval_dir(estimator, eval_dir)

    def stalled() -> bool:
        best, best_step = None, 0
        for step, metrics in read_eval_metrics(folder).items():
            if step < min_steps or metric_name not in metrics:
                continue
            value = metrics[metric_name]
            if best is None or is_better(value, best):
                best, best_step = value, step
            if step - best_step >= max_steps:
                tf.compat.v1.logging.info(
                    'No %s in metric "%s" for %s steps, which is greater than or equal to max steps (%s) '
                    "configured for early stopping.",
                    word,
                    metric_name,
                    step - best_step,
                    max_steps,
                )
                return True
        return False

    return make_early_stopping_hook(estimator, stalled, run_every_secs, run_every_steps)


def stop_if_higher_hook(
    estimator,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
):
    """Stops training once `metric_name` is higher than `threshold`."""
    return _threshold_hook(
        estimator,
        metric_name,
        threshold,
        operator.gt,
        "higher than",
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )


def stop_if_lower_hook(
    estimator,
    metric_name: str,
    threshold: float,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
):
    """Stops training once `metric_name` is lower than `threshold`."""
    return _threshold_hook(
        estimator,
        metric_name,
        threshold,
        operator.lt,
        "lower than",
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )


def stop_if_no_increase_hook(
    estimator,
    metric_name: str,
    max_steps_without_increase: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
):
    """Stops training once `metric_name` has not increased for `max_steps_without_increase` steps."""
    return _no_improvement_hook(
        estimator,
        metric_name,
        max_steps_without_increase,
        operator.gt,
        "increase",
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )


def stop_if_no_decrease_hook(
    estimator,
    metric_name: str,
    max_steps_without_decrease: int,
    eval_dir: str | None = None,
    min_steps: int = 0,
    run_every_secs: float | None = 60,
    run_every_steps: int | None = None,
):
    """Stops training once `metric_name` has not decreased for `max_steps_without_decrease` steps."""
    return _no_improvement_hook(
        estimator,
        metric_name,
        max_steps_without_decrease,
        operator.lt,
        "decrease",
        eval_dir,
        min_steps,
        run_every_secs,
        run_every_steps,
    )
