"""tf.estimator.experimental's hooks: InMemoryEvaluatorHook and make_stop_at_checkpoint_step_hook.

`InMemoryEvaluatorHook` evaluates while training, every `every_n_iter`
steps and at the end, without a checkpoint: it builds the evaluation graph
once, and before each evaluation copies the training session's variable
values into it. Its results go to `eval[_<name>]/` as `evaluate()`'s do. One
machine only, as in TF 2.15.

`make_stop_at_checkpoint_step_hook` stops the chief at `last_step` (a
StopAtStepHook) and a worker once the chief's checkpoint has reached it, so
that workers of an asynchronous cluster do not stop before the chief saved.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import tensorflow as tf

_v1 = tf.compat.v1


class InMemoryEvaluatorHook(tf.compat.v1.train.SessionRunHook):
    """Runs `estimator`'s evaluation on `input_fn` inside training, every `every_n_iter` steps and at the end."""

    def __init__(
        self,
        estimator: Any,
        input_fn: Callable,
        steps: int | None = None,
        hooks: Iterable | None = None,
        name: str | None = None,
        every_n_iter: int = 100,
    ):
        from compat.estimator.estimator import check_hooks, evaluation_steps_hooks

        if every_n_iter is None or every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if estimator.config.num_ps_replicas > 0 or estimator.config.num_worker_replicas > 1:
            raise ValueError("InMemoryEvaluator supports only single machine (aka Local) setting.")
        self._estimator, self._input_fn, self._steps, self._name = estimator, input_fn, steps, name
        self._eval_dir = estimator.eval_dir(name)
        self._hooks = [*check_hooks(hooks), *evaluation_steps_hooks(steps)]
        self._timer = _v1.train.SecondOrStepTimer(every_steps=every_n_iter)
        self._graph: tf.Graph | None = None

    def begin(self):
        self._timer.reset()
        self._iter_count = 0
        self._graph = tf.Graph()
        with self._graph.as_default():
            self._estimator._create_and_assert_global_step(self._graph)
            (self._scaffold, self._update_op, self._values, self._all_hooks) = self._estimator._evaluation_graph(
                self._input_fn, self._hooks, checkpoint_path=None
            )
            if self._scaffold.saver is not None:
                raise ValueError("InMemoryEvaluator does not support custom saver")
            if self._scaffold.init_fn is not None:
                raise ValueError("InMemoryEvaluator does not support custom init_fn")
            self._eval_variables = {v.name: v for v in _v1.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES)}
            self._placeholders = {name: _v1.placeholder(v.dtype) for name, v in self._eval_variables.items()}

    def after_create_session(self, session, coord):
        if _v1.get_collection(_v1.GraphKeys.SAVEABLE_OBJECTS):
            raise ValueError("InMemoryEvaluator does not support saveables other than global variables.")
        training = {v.name: v for v in _v1.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES)}
        shared = sorted(set(training) & set(self._placeholders))
        self._train_variables = {name: training[name] for name in shared}
        with self._graph.as_default():
            self._copy_in = tf.group(
                [_v1.assign(self._eval_variables[name], self._placeholders[name]) for name in shared]
            )
        self._evaluate(session)

    def _evaluate(self, train_session) -> None:
        values = train_session.run(self._train_variables)
        feed = {self._placeholders[name]: value for name, value in values.items()}

        def copy_training_values(scaffold, session):
            session.run(self._copy_in, feed_dict=feed)

        scaffold = _v1.train.Scaffold(init_fn=copy_training_values, copy_from_scaffold=self._scaffold)
        assert self._graph is not None  # built in begin()
        with self._graph.as_default():
            self._estimator._run_evaluation(
                None, scaffold, self._update_op, self._values, self._all_hooks, self._eval_dir
            )
        self._timer.update_last_triggered_step(self._iter_count)

    def after_run(self, run_context, run_values):
        self._iter_count += 1
        if self._timer.should_trigger_for_step(self._iter_count):
            self._evaluate(run_context.session)

    def end(self, session):
        self._evaluate(session)


class _StopAtCheckpointStepHook(tf.compat.v1.train.SessionRunHook):
    """A worker's stop: once its step reaches `last_step`, it waits for the chief's checkpoint to reach it."""

    def __init__(self, model_dir: str, last_step: int, wait_after_file_check_secs: float = 30):
        if last_step is None:
            raise ValueError("last_step must be specified.")
        if model_dir is None:
            raise ValueError("model_dir must be specified.")
        self._model_dir, self._last_step, self._wait = model_dir, last_step, wait_after_file_check_secs

    def begin(self):
        self._global_step = _v1.train.get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use StopAtCheckpointStepHook.")

    def after_run(self, run_context, run_values):
        if int(run_context.session.run(self._global_step)) < self._last_step:
            return
        latest = tf.train.latest_checkpoint(self._model_dir)
        saved = int(tf.train.load_variable(latest, _v1.GraphKeys.GLOBAL_STEP)) if latest else 0
        if saved >= self._last_step:
            run_context.request_stop()
        else:
            time.sleep(self._wait)


def make_stop_at_checkpoint_step_hook(estimator: Any, last_step: int, wait_after_file_check_secs: float = 30):
    """The chief stops at `last_step`; another task stops once the chief's checkpoint is at `last_step`."""
    if estimator.config.is_chief:
        return _v1.train.StopAtStepHook(last_step=last_step)
    return _StopAtCheckpointStepHook(
        model_dir=estimator.model_dir, last_step=last_step, wait_after_file_check_secs=wait_after_file_check_secs
    )


__all__ = ["InMemoryEvaluatorHook", "make_stop_at_checkpoint_step_hook"]
