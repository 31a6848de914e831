"""train_and_evaluate, with TensorFlow 2.15's schedules on one machine and in a TF_CONFIG cluster.

On one machine (no cluster in TF_CONFIG) the train input_fn is called once;
training runs to `max_steps` and, after each checkpoint save except the first
(the step-0 or restored one), evaluates, unless less than `throttle_secs` has
passed since the previous evaluation began. A last evaluation follows the final
checkpoint if it was not evaluated. Exporters run after each evaluation.

In a cluster each task does its part and returns None, as in TF 2.15: the chief
and the workers train together (the chief saves), the `evaluator` evaluates
each new checkpoint of the chief's, `throttle_secs` apart, runs the exporters and
ends after the final one. Together means one of two things:
- a MultiWorkerMirroredStrategy in `train_distribute` (model_to_estimator): every
  step in sync;
- `ps` tasks in the cluster (TF 1's between-graph replication, graph engine):
  each task starts its in-process server, `ps` tasks serve the variables until
  they are killed, and the chief (or `master`) and the workers each run their own
  graph against them, asynchronously; worker i starts (i + 1) * 5 s late (at most
  60 s, or `experimental_max_worker_delay_secs`). A `master` evaluates after its
  saves, as on one machine, since a TF 1 cluster has no evaluator task. While a
  ps task cannot be reached, training waits for it as in TF 2.15, and says so
  (compat/estimator/ps_watch.py).
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

import tensorflow as tf

from compat.core import tf_internals
from compat.estimator import replicated
from compat.estimator.base import EstimatorBase, KerasEngineEstimator
from compat.estimator.estimator import Estimator
from compat.estimator.exporter import Exporter
from compat.estimator.ps_watch import ParameterServerWatch, reachable
from compat.estimator.run_config import TaskType

_EVALUATOR_POLL_SECS = 1.0  # an evaluator looks for a new checkpoint at least this often
# TF 2.15's start delays of asynchronous workers: the chief's first steps move the model away from its
# initial values before every worker pushes its gradients.
_DELAY_SECS_PER_WORKER = 5
_MAX_DELAY_SECS = 60


def _checked_input_fn(input_fn: Callable) -> Callable:
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")
    return input_fn


def _checked_hooks(hooks: Iterable | None) -> tuple:
    """SessionRunHooks, or Keras callbacks (which a model_to_estimator Estimator calls as hooks)."""
    from compat.estimator.keras_engine.keras2_artefacts import callback_classes

    hooks = tuple(hooks or ())
    for hook in hooks:
        if not isinstance(hook, (tf.compat.v1.train.SessionRunHook, *callback_classes())):
            raise TypeError(f"All hooks must be `SessionRunHook` instances, given: {hook}")
    return hooks


def _checked_listeners(listeners: Iterable | None) -> tuple:
    listeners = tuple(listeners or ())
    for listener in listeners:
        if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
            raise TypeError(f"All saving_listeners must be `CheckpointSaverListener` instances, given: {listener}")
    return listeners


def _checked_exporters(exporters: Any) -> tuple:
    """A tuple of Exporters with distinct, non-empty string names (what `export/<name>` folders are called)."""
    if not exporters:
        return ()
    if isinstance(exporters, Exporter):
        exporters = [exporters]
    try:
        exporters = list(exporters)
    except TypeError:
        exporters = None
    if exporters is None or not all(isinstance(exporter, Exporter) for exporter in exporters):
        raise TypeError(f"`exporters` must be an Exporter, an iterable of Exporter, or `None`, found {exporters}.")
    names = [exporter.name for exporter in exporters]
    for name in names:
        if not name:
            raise ValueError(f"An Exporter cannot have a name that is `None` or empty. All exporter names: {names}")
        if not isinstance(name, str):
            raise ValueError(f"An Exporter must have a string name. Given: {type(name)}")
    if len(set(names)) != len(names):
        raise ValueError(
            f"`exporters` must have unique names. Such a name cannot be `None`. All exporter names: {names}"
        )
    return tuple(exporters)


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks", "saving_listeners"])):
    """What `train_and_evaluate` trains: tf.estimator.TrainSpec."""

    def __new__(
        cls,
        input_fn: Callable,
        max_steps: int | None = None,
        hooks: Iterable | None = None,
        saving_listeners: Iterable | None = None,
    ):
        _checked_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn, max_steps, _checked_hooks(hooks), _checked_listeners(saving_listeners))


class EvalSpec(
    collections.namedtuple(
        "EvalSpec", ["input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"]
    )
):
    """How `train_and_evaluate` evaluates: tf.estimator.EvalSpec.

    `start_delay_secs` only delays a separate evaluator task; on one machine it is unused.
    """

    def __new__(
        cls,
        input_fn: Callable,
        steps: int | None = 100,
        name: str | None = None,
        hooks: Iterable | None = None,
        exporters: Any = None,
        start_delay_secs: float = 120,
        throttle_secs: float = 600,
    ):
        _checked_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        hooks, exporters = _checked_hooks(hooks), _checked_exporters(exporters)
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(cls, input_fn, steps, name, hooks, exporters, start_delay_secs, throttle_secs)


# Called around checkpoint saves; `after_save` returning True stops training. TensorFlow's own class.
CheckpointSaverListener = tf.compat.v1.train.CheckpointSaverListener


def _run_exporters(
    estimator: EstimatorBase, eval_spec: EvalSpec, checkpoint: str, result: dict, max_steps: int | None
) -> list:
    final = max_steps is not None and result["global_step"] >= max_steps
    return [
        exporter.export(
            estimator, os.path.join(estimator.model_dir, "export", exporter.name), checkpoint, result, final
        )
        for exporter in eval_spec.exporters
    ]


def _start_server(config, strategy: tf.distribute.Strategy | None = None) -> tf.distribute.Server:
    """This task's in-process TensorFlow server, which the other tasks reach and its own session runs on.

    With a multi-worker `strategy`, the server is configured by it (the collective ops' group leader), as the
    strategy's own server would be: each task's collectives then form one group, led by the chief.
    """
    server_config = tf.compat.v1.ConfigProto(log_device_placement=False)
    if config.session_config is not None:
        server_config.gpu_options.CopyFrom(config.session_config.gpu_options)
    if strategy is not None:
        server_config = replicated.session_config(server_config, strategy)
    tf.compat.v1.logging.info("Starting the TensorFlow server of %s %d", config.task_type, config.task_id)
    return tf.distribute.Server(
        config.cluster_spec,
        job_name=config.task_type,
        task_index=config.task_id,
        protocol=config.protocol,
        config=server_config,
        start=True,
    )


def _train_between_graphs(estimator: EstimatorBase, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    """A task of a cluster with ps tasks, as TF 2.15 ran it (see the module docstring)."""
    config = estimator.config
    runs = (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER, TaskType.PS)
    if config.task_type not in runs:
        raise ValueError(f"Task type {config.task_type} is not supported. Supported task types are {list(runs)}")
    if not config.master:
        raise RuntimeError(
            "Could not start the TensorFlow server: this task has no address (RunConfig.master is empty); set "
            "TF_CONFIG's cluster and task"
        )
    if estimator.engine == "keras":  # Keras 3 models cannot be built into TF 1's between-graph replication
        _train_with_a_coordinator(estimator, train_spec, eval_spec)
        return
    server = _start_server(config)  # before the delay: the other tasks' sessions wait to reach it
    if config.task_type == TaskType.PS:
        server.join()  # serves the variables until the task is killed, as in TF 2.15
        return
    if config.task_type == TaskType.WORKER:
        longest = config.experimental_max_worker_delay_secs
        delay = min(_MAX_DELAY_SECS if longest is None else int(longest), (config.task_id + 1) * _DELAY_SECS_PER_WORKER)
        if delay > 0:
            tf.compat.v1.logging.info("Waiting %d secs before starting training.", delay)
            time.sleep(delay)
    listeners = _trainer_listeners(estimator, train_spec, eval_spec)
    watch = ParameterServerWatch(
        config.cluster_spec.job_tasks(TaskType.PS), estimator.model_dir, config.session_creation_timeout_secs
    )
    try:
        estimator.train(
            train_spec.input_fn,
            hooks=[*train_spec.hooks, watch],
            max_steps=train_spec.max_steps,
            saving_listeners=listeners,
        )
    finally:
        watch.stop()  # also when training raised, so that no later loss of the ps ends this process


def _trainer_listeners(estimator: EstimatorBase, train_spec: TrainSpec, eval_spec: EvalSpec) -> list:
    """A trainer's saving listeners in a cluster with ps tasks: a TF 1 `master` (no evaluator task in its
    cluster) also evaluates after its saves, as on one machine."""
    listeners = list(train_spec.saving_listeners)
    if estimator.config.task_type == TaskType.MASTER:
        listeners.append(_EvaluateAfterSaves(estimator, eval_spec, train_spec.max_steps))
    return listeners


def _train_with_a_coordinator(estimator: EstimatorBase, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    """A task of a cluster with ps tasks, for a model_to_estimator Estimator: TF 2's parameter-server training.

    Keras 3 models cannot be built into a TF 1 graph, so the between-graph replication of TF 2.15 is replaced
    by `tf.distribute.experimental.ParameterServerStrategy`: the chief (or `master`) coordinates, sending
    the steps to the workers and saving; workers and ps tasks only serve. Steps are still asynchronous
    (each worker applies its own updates to the variables on the ps tasks), but the step count is exact; a
    worker's program ends once the chief has ended, a ps task's when it is killed (as in TF 2.15).
    """
    from compat.core import strategies

    config = estimator.config
    if config.task_type in (TaskType.WORKER, TaskType.PS):
        server = strategies.serve_parameter_server_task(config)
        if config.task_type == TaskType.PS:
            server.join()  # until the task is killed, as in TF 2.15
            return
        _serve_the_chief(strategies.parameter_server_cluster(config).job_tasks(TaskType.CHIEF)[0])
        tf.compat.v1.logging.info(
            "The chief ended (its newest checkpoint: %s): so does this worker.", estimator.latest_checkpoint()
        )
        return
    if not strategies.plan_of(cast(KerasEngineEstimator, estimator).strategy).coordinated:
        raise strategies.UnsupportedStrategyError(
            "TF_CONFIG names ps tasks, but this model_to_estimator Estimator was given another strategy "
            "(RunConfig.train_distribute): its chief would train alone. Leave train_distribute unset: on the chief "
            "of a cluster with ps tasks model_to_estimator makes a ParameterServerStrategy"
        )
    estimator.train(
        train_spec.input_fn,
        hooks=train_spec.hooks,
        max_steps=train_spec.max_steps,
        saving_listeners=_trainer_listeners(estimator, train_spec, eval_spec),
    )


def _serve_the_chief(chief: str) -> None:
    """Returns once the chief at `chief` has come and gone: a worker's server runs the steps the chief
    sends while the chief runs (it drops its functions here even as it ends), whatever step training
    stops at. Three failed probes in a row, a second apart, mean gone."""
    while not reachable(chief):
        time.sleep(_EVALUATOR_POLL_SECS)
    misses = 0
    while misses < 3:
        misses = 0 if reachable(chief) else misses + 1
        time.sleep(_EVALUATOR_POLL_SECS)


def _train_in_cluster(estimator: EstimatorBase, train_spec: TrainSpec) -> None:
    """A chief or a worker of a MultiWorkerMirroredStrategy: trains with the others; the chief saves."""
    from compat.core import strategies

    config = estimator.config
    cluster = config.cluster_spec.as_dict()
    if cluster.get(TaskType.WORKER) and not strategies.plan_of(config.train_distribute).in_sync_across_workers:
        raise strategies.UnsupportedStrategyError(
            "TF_CONFIG names workers beside the chief, but RunConfig(train_distribute=...) is not a "
            "MultiWorkerMirroredStrategy: the workers would train apart. Create the strategy (it reads "
            "TF_CONFIG) and pass it as train_distribute"
        )
    # Made eagerly, the strategy serves this task in-process, where the training session reaches it. A program
    # that disabled eager execution (TensorFlow's "Multi-worker training with Estimator" tutorial) made it in
    # graph mode, which starts no server: this task's is started here, as TF 2.15's distribute coordinator did,
    # or every session waits for a server that never comes. (The strategy says which; executing_eagerly() is
    # False inside a program's own `with tf.Graph().as_default()`, where an eager strategy already serves.)
    strategy = config.train_distribute
    starts_server = strategies.plan_of(strategy).in_sync_across_workers and not tf_internals.serves_in_process(strategy)
    server = _start_server(config, strategy) if starts_server else None
    estimator.train(
        train_spec.input_fn,
        hooks=train_spec.hooks,
        max_steps=train_spec.max_steps,
        saving_listeners=list(train_spec.saving_listeners),
    )
    del server  # this task's server stops with the process, once training is over


def _run_evaluator(estimator: EstimatorBase, train_spec: TrainSpec, eval_spec: EvalSpec) -> None:
    """The evaluator task: each new checkpoint of the chief's, `throttle_secs` apart, until the final one."""
    tf.compat.v1.logging.info("Waiting %s secs before starting evaluation.", eval_spec.start_delay_secs)
    time.sleep(eval_spec.start_delay_secs)
    evaluated = None
    while True:
        started = time.monotonic()
        latest = estimator.latest_checkpoint()
        if latest is not None and latest != evaluated:
            result = estimator.evaluate(
                eval_spec.input_fn,
                steps=eval_spec.steps,
                hooks=eval_spec.hooks,
                checkpoint_path=latest,
                name=eval_spec.name,
            )
            _run_exporters(estimator, eval_spec, latest, result, train_spec.max_steps)
            evaluated = latest
            if train_spec.max_steps is not None and result["global_step"] >= train_spec.max_steps:
                tf.compat.v1.logging.info(
                    "Exiting evaluation, global_step=%s >= train max_steps=%s",
                    result["global_step"],
                    train_spec.max_steps,
                )
                return
        else:
            tf.compat.v1.logging.info("Waiting for a new checkpoint in %s", estimator.model_dir)
        time.sleep(max(eval_spec.throttle_secs - (time.monotonic() - started), _EVALUATOR_POLL_SECS))


class _EvaluateAfterSaves(tf.compat.v1.train.CheckpointSaverListener):
    def __init__(self, estimator: EstimatorBase, eval_spec: EvalSpec, max_steps: int | None):
        self.estimator, self.eval_spec, self.max_steps = estimator, eval_spec, max_steps
        self.eval_result: dict | None = None
        self.export_results: list = []
        self.saves = 0
        self._last_start: float | None = None
        self._evaluated_step: int | None = None

    def after_save(self, session, global_step_value):
        self.saves += 1
        if self.saves == 1:  # the save of the step training starts from
            return False
        if self._last_start is not None and time.monotonic() - self._last_start < self.eval_spec.throttle_secs:
            tf.compat.v1.logging.info(
                "Skip the current checkpoint eval due to throttle secs (%s secs).", self.eval_spec.throttle_secs
            )
            return False
        self._evaluate(global_step_value)
        return False

    def end(self, session, global_step_value):
        if self._evaluated_step != global_step_value and self.saves > 0:
            self._evaluate(global_step_value)  # the last checkpoint was not evaluated

    def _evaluate(self, step: int) -> None:
        self._last_start = time.monotonic()
        spec = self.eval_spec
        self.eval_result = self.estimator.evaluate(spec.input_fn, steps=spec.steps, hooks=spec.hooks, name=spec.name)
        self._evaluated_step = step
        checkpoint = self.estimator.latest_checkpoint()
        assert checkpoint is not None  # called after a save
        self.export_results = _run_exporters(self.estimator, spec, checkpoint, self.eval_result, self.max_steps)


def train_and_evaluate(estimator: EstimatorBase, train_spec: TrainSpec, eval_spec: EvalSpec):
    """Trains and evaluates on one machine; returns (eval_metrics, export_results).

    Returns (None, None) when `max_steps` was already reached: nothing is trained
    or evaluated (TF 2.15 with the object-based format trained one extra step).
    """
    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: {type(eval_spec)}")
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: {type(estimator)}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: {type(train_spec)}")
    config = estimator.config
    if config.task_type == TaskType.EVALUATOR and config.task_id > 0:
        raise ValueError(
            "For distributed training, there can only be one `evaluator` task (with task id 0).  Given "
            f"task id {config.task_id}"
        )
    if not config.saves_checkpoints:
        raise ValueError(
            "train_and_evaluate needs checkpoints: set save_checkpoints_steps or _secs in the RunConfig (both are None)"
        )
    if config.task_type == TaskType.EVALUATOR:
        _run_evaluator(estimator, train_spec, eval_spec)
        return None
    cluster = config.cluster_spec.as_dict()
    if TaskType.PS in cluster:
        _train_between_graphs(estimator, train_spec, eval_spec)
        return None
    if cluster:
        _train_in_cluster(estimator, train_spec)
        return None
    listener = _EvaluateAfterSaves(estimator, eval_spec, train_spec.max_steps)
    estimator.train(
        train_spec.input_fn,
        hooks=train_spec.hooks,
        max_steps=train_spec.max_steps,
        saving_listeners=[*train_spec.saving_listeners, listener],
    )
    if listener.saves == 0:  # train() skipped: max_steps was already reached
        return None, None
    return listener.eval_result, listener.export_results
