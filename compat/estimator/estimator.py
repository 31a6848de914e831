"""tf.estimator.Estimator: the graph engine for custom model_fns, with TF 2.15's semantics.

`Estimator(model_fn, model_dir, config, params, warm_start_from)` runs a
model_fn written for tf.estimator on what TensorFlow >= 2.16 still ships: a
`tf.compat.v1.Graph` per call, `MonitoredTrainingSession` with TensorFlow's own
hooks (checkpoints, summaries, step counter, NaN check, loss logging),
TensorFlow's evaluation loop, a name-based `Saver`, and `SavedModelBuilder`
for exports. The files are TF 2.15's, so model folders written by TF 2.15
restore and train on:

  <model_dir>/model.ckpt-<step>.{index,data-*,meta}, checkpoint, graph.pbtxt
  <model_dir>/events.out.tfevents.*           loss, global_step/sec, the model's summaries
  <model_dir>/eval[_<name>]/events.out.tfevents.*   metrics and checkpoint_path
  <export_dir_base>/<timestamp>/              SavedModel

Inside a model_fn, `tf.compat.v1.layers` are tf_keras' (compat/core/tf_internals.py)
and Keras 3 layers run in the mode being built: called without `training=`,
they train in TRAIN mode, and the state they update (batch norm's moving
statistics, dropout's seed) is updated with every training step, as the
UPDATE_OPS of TF 1.x layers were when a model_fn ran them.

`model_to_estimator` returns a `KerasEstimator` (compat/estimator/keras_engine/),
which trains a Keras 3 model eagerly: a sibling of this class over
`EstimatorBase` (base.py: the model folder, config, params, checkpoint reads),
registered as an `Estimator`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import tensorflow as tf

from compat.core import atomic, strategies, tf_internals
from compat.core.checkpoints import newest_readable_in
from compat.estimator import replicated, warm_starting
from compat.estimator.base import (
    EstimatorBase,
    check_checkpoint_exists,
    check_train_steps,
    extract_keys,
    per_example,
    seeded_python_random,
    timestamped_dir,
    write_checkpoint_path_to_summary,
    write_dict_to_summary,
)
from compat.estimator.export import export as export_lib
from compat.estimator.input_fns import input_fn_kwargs, input_fn_name, parse_input_fn_result, split_features_labels
from compat.estimator.model_fn import LOSS_METRIC_KEY, EstimatorSpec, ModeKeys, make_local
from compat.estimator.run_config import RunConfig, TaskType

_v1 = tf.compat.v1
# Model_fns are built from tf.compat.v1.layers, and from Keras 3 layers that must honour the graph's
# training mode: loading the graph engine makes both work (compat/core/tf_internals.py), however a
# program reaches it (a public name of compat.estimator does the same; uninstall() undoes it).
tf_internals.prepare()  # as importing the package does; nothing after uninstall()
# TF 2.15's usage gauges of the Estimator API (its names), which libraries' canned estimators set
_estimator_api_gauge = tf_internals.usage_gauge("/tensorflow/api/estimator", "estimator api usage", "method")
_canned_estimator_api_gauge = tf_internals.usage_gauge(
    "/tensorflow/api/estimator/canned_estimator",
    "Gauge to track the type of canned estimator used",
    "ClassType",
    of="string",
)

_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}
# What a subclass of Estimator may define itself (TF 2.15's list); anything else it inherits as it is.
_ALLOWED_OVERRIDES = {
    "model_fn",
    "_create_and_assert_global_step",
    "_export_all_saved_models",
    "latest_checkpoint",
    "_tf_api_names",
    "_tf_api_names_v1",
    "_estimator_api_names",
    "_estimator_api_names_v1",
    "_estimator_api_constants",
    "_estimator_api_constants_v1",
    # this package's engine protocol (base.py), names TF 2.15's Estimator did not have: a subclass written
    # for TF 2.15 that happens to define one keeps working
    "engine",
    "keras_recipe",
    "trained_keras_model",
}
_ASSIGNMENTS = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}


def verify_model_fn_args(model_fn: Callable, params: dict | None) -> None:
    """TF 2.15's checks of a model_fn's signature."""
    args = set(tf_internals.fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(
            f"model_fn ({model_fn}) does not include params argument, but params ({params}) is passed to Estimator."
        )
    if params is None and "params" in args:
        tf.compat.v1.logging.warning(
            "Estimator's model_fn (%s) includes params argument, but params are not passed to Estimator.", model_fn
        )
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


def replica_device_setter(config: RunConfig) -> Callable | None:
    """Variables on the ps tasks, ops on this worker, when the cluster has ps tasks (TF 2.15's device_fn)."""
    if not config.num_ps_replicas:
        return None
    worker_device = f"/job:{config.task_type}/task:{config.task_id}" if config.task_type else "/job:worker"
    return _v1.train.replica_device_setter(
        ps_tasks=config.num_ps_replicas,
        worker_device=worker_device,
        merge_devices=True,
        ps_ops=[
            "Variable",
            "VariableV2",
            "AutoReloadVariable",
            "MutableHashTable",
            "MutableHashTableV2",
            "MutableHashTableOfTensors",
            "MutableHashTableOfTensorsV2",
            "MutableDenseHashTable",
            "MutableDenseHashTableV2",
            "VarHandleOp",
            "BoostedTreesEnsembleResourceHandleOp",
            "BoostedTreesQuantileStreamResourceHandleOp",
        ],
        cluster=config.cluster_spec,
    )


def _ancestors(roots: Iterable) -> set[str]:
    """The names of every op that running `roots` (tensors or ops) runs."""
    stack = [getattr(root, "op", root) for root in roots if root is not None]
    seen: set[str] = set()
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(tensor.op for tensor in op.inputs)
        stack.extend(op.control_inputs)
    return seen


def _state_updates_nothing_runs(graph: tf.Graph, first_op: int, spec: EstimatorSpec, keras_layers: list) -> list:
    """The state updates that the Keras 3 layers a model_fn called made, that no fetch of the spec runs.

    Keras 3 layers update state in a graph (batch norm's moving statistics,
    dropout's seed generator) with ops nothing depends on, and keep no list of
    them, where TF 2.15's Keras 2 layers kept `layer.updates`: so these, and only
    these, join the training step. Every other assignment is the program's own
    (a hook's `run_context.session.run`, a scaffold's init_fn, a second train op)
    and runs when the program runs it, as in TF 2.15. Updates a model_fn collected
    in UPDATE_OPS stay the model_fn's to run; variable initializers are not updates.
    """
    if not keras_layers:
        return []
    candidates = [op for op in graph.get_operations()[first_op:] if op.type in _ASSIGNMENTS]
    if not candidates:
        return []
    handles = {v.handle.name for v in tf_internals.keras_state_variables(keras_layers) if hasattr(v, "handle")}
    initializers = {
        copy.initializer.name for v in _v1.global_variables() + _v1.local_variables() for copy in tf_internals.copies(v)
    }
    candidates = [op for op in candidates if op.inputs[0].name in handles and op.name not in initializers]
    if not candidates:
        return []
    reached = _ancestors(
        [spec.train_op, spec.loss, *tf.nest.flatten(spec.predictions), *_v1.get_collection(_v1.GraphKeys.UPDATE_OPS)]
    )
    return [op for op in candidates if op.name not in reached]


def evaluation_steps_hooks(steps: int | None) -> list:
    """The hook that ends an evaluation after `steps` batches (none: until the input ends)."""
    if steps is None:
        return []
    if steps <= 0:
        raise ValueError(f"Must specify steps > 0, given: {steps}")
    return [tf_internals.stop_after_n_evals_hook(steps)]


def check_hooks(hooks: Iterable | None) -> list:
    hooks = list(hooks or ())
    for hook in hooks:
        if not isinstance(hook, _v1.train.SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {hook}")
    return hooks


def _check_listeners(saving_listeners: Iterable | None) -> list:
    saving_listeners = list(saving_listeners or ())
    for listener in saving_listeners:
        if not isinstance(listener, _v1.train.CheckpointSaverListener):
            raise TypeError(f"saving_listeners must be a list of CheckpointSaverListener, given: {listener}")
    return saving_listeners


# The variable a Keras 3 layer that draws random numbers (Dropout, GaussianNoise, ...) keeps its seed
# generator's state in. Keras 2's layers in TF 2.15 drew from stateful random ops and had none.
_KERAS_SEED_STATE = re.compile(r"(^|/)seed_generator_state(_\d+)?$")


def _keep_seed_states_out_of_checkpoints(graph: tf.Graph) -> None:
    """Makes Keras 3's seed generator states local variables, as TF's metric variables are: set up anew by
    each session, never saved or restored. So the checkpoints hold the variables TF 2.15's held, and a
    model folder TF 2.15 wrote with a Keras Dropout in the model_fn restores here; as on TF 2.15, random
    draws start afresh in each session."""
    global_variables = graph.get_collection_ref(_v1.GraphKeys.GLOBAL_VARIABLES)
    seed_states = [v for v in global_variables if _KERAS_SEED_STATE.search(v.op.name)]
    for variable in seed_states:
        global_variables.remove(variable)
        graph.add_to_collection(_v1.GraphKeys.LOCAL_VARIABLES, variable)


def _is_metric_variable(variable: Any) -> bool:
    return (
        getattr(variable, "synchronization", None) == tf.VariableSynchronization.ON_READ
        and getattr(variable, "aggregation", None) == tf.VariableAggregation.SUM
        and not variable.trainable
    )


@contextlib.contextmanager
def _metric_variables_made_local() -> Iterator[None]:
    """A Keras metric's variables are local from the moment they are made: a Saver the model_fn makes after
    the metric (a Scaffold's) leaves them out, as TF 2.15's did."""

    def creator(next_creator: Callable, **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        if _is_metric_variable(variable):
            make_local([variable])
        return variable

    with tf.variable_creator_scope(creator):
        yield


def _keep_metric_variables_out_of_checkpoints(graph: tf.Graph) -> None:
    """Makes the variables of every Keras metric object the model_fn made local, in any mode: TF 2.15 kept a
    metric's state out of the checkpoint even where the metric never reached `eval_metric_ops` (one made
    before `if mode == EVAL`), so a folder it wrote lacks them. A Keras metric's variables are read per replica
    (ON_READ), summed across replicas and never trained; batch normalization's moving statistics, also read per
    replica and not trained, are averaged, and stay in the checkpoint."""
    make_local(
        [variable for variable in graph.get_collection(_v1.GraphKeys.GLOBAL_VARIABLES) if _is_metric_variable(variable)]
    )


def check_restorable(checkpoint_path: str | None) -> None:
    """A clear error, before any session, when the checkpoint lacks variables the default graph has."""
    if checkpoint_path is None:
        return
    check_checkpoint_exists(checkpoint_path)
    stored = {name for name, _ in tf.train.list_variables(checkpoint_path)}
    needed = {
        tf_internals.checkpoint_name(variable)
        for variable in _v1.global_variables()
        if not tf_internals.is_partition(variable)
    }
    missing = sorted(needed - stored)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(
            f"The checkpoint {checkpoint_path} was written by another model: it lacks {shown}. Train this model in a "
            "new model_dir, or reuse the matching part with warm_start_from=WarmStartSettings(<that folder>, "
            "vars_to_warm_start=...)"
        )


def _uses_dataset_or_queue(features: Any) -> bool:
    tensors = [value for value in tf.nest.flatten(features) if isinstance(value, tf.Tensor)]
    if any(tensor.op.type == "IteratorGetNext" for tensor in tensors):
        return True
    return bool(_v1.get_collection(_v1.GraphKeys.QUEUE_RUNNERS))


class Estimator(EstimatorBase):
    """tf.estimator.Estimator: trains, evaluates, predicts and exports with a model_fn.

    Its metaclass (ABCMeta, from EstimatorBase) lets the Keras engine, a sibling
    over EstimatorBase, register as a tf.estimator.Estimator without inheriting
    this graph engine.
    """

    def __init__(
        self,
        model_fn: Callable,
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: dict | None = None,
        warm_start_from: Any = None,
    ):
        self.__class__._assert_members_are_not_overridden(self)
        self._init_common(model_dir, config, params)
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._warm_start_settings = warm_starting.settings_from(warm_start_from)

    def _init_common(self, model_dir: str | None, config: RunConfig | None, params: dict | None) -> None:
        self._init_base(model_dir, config, params)
        self._session_config = self._config.session_config
        # Checked here, before anything is written: a strategy the engine cannot run is refused in one line.
        self._train_distribution = replicated.replicas_of(self._config.train_distribute, "train_distribute")
        self._eval_distribution = replicated.for_evaluation(
            replicated.replicas_of(self._config.eval_distribute, "eval_distribute")
        )
        self._device_fn = self._config.device_fn or replica_device_setter(self._config)

    def _assert_members_are_not_overridden(self) -> None:
        """A subclass that redefines train, evaluate, ... is refused, as in TF 2.15: the contract of these
        methods is the Estimator's. This project's own engines are not user subclasses."""
        cls = type(self)
        if cls.__dict__.get("_overrides_on_purpose", False):  # this package's own subclass (not inherited)
            return
        own = {name for name in dir(Estimator) if not name.startswith("__") and not name.startswith("_abc")}
        overridden = [
            name
            for name in (own & set(cls.__dict__)) - _ALLOWED_OVERRIDES
            if getattr(Estimator, name) != getattr(cls, name)
        ]
        if overridden:
            raise ValueError(
                f"Subclasses of Estimator cannot override members of Estimator. {cls} does override {overridden}"
            )

    # -- properties, as tf.estimator ------------------------------------------
    @property
    def model_fn(self) -> Callable:
        """The model_fn with this Estimator's params bound: `model_fn(features, labels, mode, config)`."""

        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)

        return public_model_fn

    # -- graph building -------------------------------------------------------
    def _create_and_assert_global_step(self, graph: tf.Graph) -> tf.Variable:
        step = _v1.train.create_global_step(graph)
        assert step is _v1.train.get_global_step() and step.dtype.is_integer
        return step

    @contextlib.contextmanager
    def _new_graph(self, device_fn: Callable | None = None) -> Iterator[tf.Graph]:
        """A new graph as the default one, seeded, with a global step, and fresh Keras layer names; under
        `device_fn` from the start, so that the global step is placed with the other variables (on a ps)."""
        graph = tf.Graph()
        with graph.as_default(), graph.device(device_fn), tf_internals.keras_names_per_graph():
            _v1.random.set_random_seed(self._config.tf_random_seed)
            self._create_and_assert_global_step(graph)
            yield graph

    def _call_input_fn(self, input_fn: Callable, mode: str, input_context: Any = None) -> Any:
        kwargs = input_fn_kwargs(
            input_fn, params=self.params, mode=mode, config=self.config, input_context=input_context
        )
        with tf.device("/cpu:0"):  # input ops on the host, as TF 2.15 placed them
            return input_fn(**kwargs)

    def _call_model_fn(self, features: Any, labels: Any, mode: str, config: RunConfig) -> EstimatorSpec:
        """Calls the model_fn with the arguments its signature names; Keras 3 layers in it follow the mode and,
        in TRAIN mode, update their state with every step."""
        args = tf_internals.fn_args(self._model_fn)
        kwargs = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        for name, value in (("mode", mode), ("params", self.params), ("config", config)):
            if name in args:
                kwargs[name] = value
        graph = _v1.get_default_graph()
        first_op = len(graph.get_operations())
        tf.compat.v1.logging.info("Calling model_fn.")
        with (
            tf_internals.keras_training_default(mode == ModeKeys.TRAIN),
            tf_internals.keras_layers_called() as keras_layers,
            seeded_python_random(config.tf_random_seed),
            _metric_variables_made_local(),
        ):
            spec = self._model_fn(features=features, **kwargs)
        tf.compat.v1.logging.info("Done calling model_fn.")
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(
                f"model_fn should return an EstimatorSpec. It returned {type(spec).__name__} in {mode} mode"
            )
        if mode == ModeKeys.TRAIN and spec.train_op is not None:
            updates = _state_updates_nothing_runs(graph, first_op, spec, keras_layers)
            if updates:
                spec = spec._replace(train_op=tf.group(spec.train_op, *updates))
        _keep_seed_states_out_of_checkpoints(graph)
        _keep_metric_variables_out_of_checkpoints(graph)
        return spec

    def _features_and_labels(
        self, input_fn: Callable, mode: str, strategy: tf.distribute.Strategy | None = None
    ) -> tuple[Any, Any, list]:
        """(features, labels, input hooks) of `input_fn` in `mode`; under a strategy of several replicas, each
        replica's own (a PerReplica of per-replica batches), from the input_fn called once per worker."""
        if strategy is not None:
            iterator, hooks = replicated.input_iterator(
                strategy, lambda context: self._dataset_for_replicas(input_fn, mode, context)
            )
            return (*split_features_labels(iterator.get_next()), hooks)
        result = self._call_input_fn(input_fn, mode)
        if not isinstance(result, tf.data.Dataset) or mode == ModeKeys.PREDICT:
            return parse_input_fn_result(result)

        def cached() -> tf.data.Dataset | None:
            rewritten = self._input_cache.wrap(result, input_fn_name(input_fn), mode)
            return None if rewritten is result else rewritten

        return parse_input_fn_result(result, cached)

    def _dataset_for_replicas(self, input_fn: Callable, mode: str, context: tf.distribute.InputContext) -> Any:
        """What `input_fn` returns for one worker's replicas, through the input cache as on one device."""
        result = self._call_input_fn(input_fn, mode, context)
        if not isinstance(result, tf.data.Dataset):
            raise ValueError(
                f"input_fn must return a tf.data.Dataset when the Estimator replicates the model ({mode} under "
                f"{'train' if mode == ModeKeys.TRAIN else 'eval'}_distribute); it returned {type(result).__name__}"
            )
        return self._input_cache.wrap(result, input_fn_name(input_fn), mode)

    def _saver_of_local_copies(self) -> tf.compat.v1.train.Saver:
        return replicated.saver_of_local_copies(**_saver_settings(self._config))

    def _saver(self, spec: EstimatorSpec) -> tf.compat.v1.train.Saver:
        """The Saver of `spec`'s graph: the scaffold's, the graph's, else TF 2.15's default (sharded)."""
        if spec.scaffold.saver is not None:
            return spec.scaffold.saver
        savers = _v1.get_collection(_v1.GraphKeys.SAVERS)
        return savers[0] if savers else _v1.train.Saver(sharded=True)

    def _maybe_warm_start(self, checkpoint_path: str | None) -> None:
        """Warm-starts the graph's variables from `warm_start_from`, in every mode, when the model has no
        checkpoint of its own to restore (`checkpoint_path`: the one the mode restores, None for none)."""
        if not checkpoint_path and self._warm_start_settings:
            tf.compat.v1.logging.info("Warm-starting with WarmStartSettings: %s", self._warm_start_settings)
            warm_starting.warm_start(self._warm_start_settings)

    # -- train ------------------------------------------------------------------
    def train(
        self,
        input_fn: Callable,
        hooks=None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners=None,
    ) -> Estimator:
        """Trains from the latest checkpoint: `steps` more, or up to the absolute `max_steps`."""
        if self._config.task_type in (TaskType.EVALUATOR, TaskType.PS):
            raise ValueError(
                "Train has been called wrong configuration. Please use tf.estimator.train_and_evaluate "
                f"which calls proper API according to given configuration. Current configuration: "
                f"{self._config}."
            )
        check_train_steps(steps, max_steps)
        if max_steps is not None and max_steps <= self._checkpoint_step():
            tf.compat.v1.logging.info("Skipping training since max_steps has already saved.")
            return self
        hooks = check_hooks(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(_v1.train.StopAtStepHook(num_steps=steps, last_step=max_steps))
        try:
            loss = self._train_model(input_fn, hooks, _check_listeners(saving_listeners))
        finally:
            self._input_cache.publish()
        tf.compat.v1.logging.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn: Callable, hooks: list, listeners: list) -> Any:
        strategy = self._train_distribution
        if strategy is not None:
            return self._train_model_replicated(strategy, input_fn, hooks, listeners)
        with self._new_graph(self._device_fn) as graph:
            global_step = _v1.train.get_global_step()
            tf_internals.global_step_read(graph)  # before the input_fn, as TF 2.15: the op seeds after follow
            features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.TRAIN)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            return self._train_with_spec(spec, [*input_hooks, *hooks], global_step, listeners)

    def _train_model_replicated(
        self, strategy: tf.distribute.Strategy, input_fn: Callable, hooks: list, listeners: list
    ) -> Any:
        """Trains one model_fn per replica in one graph (replicated.py says how), as TF 2.15 did."""
        graph = tf.Graph()
        with graph.as_default(), tf_internals.keras_names_per_graph(), replicated.replica_scope(strategy):
            _v1.random.set_random_seed(self._config.tf_random_seed)
            features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.TRAIN, strategy)
            global_step = self._create_and_assert_global_step(graph)
            # the global step's read, made here and not in a replica (TF 2.15)
            _v1.add_to_collection(tf_internals.GLOBAL_STEP_READ_KEY, strategy.extended.read_var(global_step))
            grouped = replicated.call_for_each_replica(
                strategy, self._call_model_fn, (features, labels, ModeKeys.TRAIN, self.config)
            )
            spec = replicated.train_spec(strategy, grouped)
            return self._train_with_spec(spec, [*input_hooks, *hooks], global_step, listeners, strategy)

    def _train_with_spec(
        self,
        spec: EstimatorSpec,
        worker_hooks: list,
        global_step: tf.Variable,
        listeners: list,
        strategy: tf.distribute.Strategy | None = None,
    ) -> Any:
        config = self._config
        session_config = self._session_config
        if strategy is not None:
            session_config = replicated.session_config(session_config, strategy)
        self._maybe_warm_start(self.latest_checkpoint())
        if not any(summary.op.name == "loss" for summary in _v1.get_collection(_v1.GraphKeys.SUMMARIES)):
            _v1.summary.scalar("loss", spec.loss)
        _v1.add_to_collection(_v1.GraphKeys.LOSSES, spec.loss)
        worker_hooks.append(_v1.train.NanTensorHook(spec.loss))
        if config.log_step_count_steps is not None:
            worker_hooks.append(_loss_and_step_logger(spec, global_step, config.log_step_count_steps))
        worker_hooks.extend(spec.training_hooks)
        default_saver = not (spec.scaffold.saver or _v1.get_collection(_v1.GraphKeys.SAVERS))
        if default_saver:
            _v1.add_to_collection(_v1.GraphKeys.SAVERS, _default_saver(config))
        check_restorable(newest_readable_in(self._model_dir))  # past a damaged latest, which TF 2.15 could not
        # a program's own Saver saves as it was made; only the default one is swapped for the local copies'
        local_saver = default_saver and strategies.plan_of(strategy).in_sync_across_workers
        chief_hooks = self._checkpoint_hooks(spec, worker_hooks, listeners, local_saver)
        save_summary_steps, log_step_count_steps = config.save_summary_steps, config.log_step_count_steps
        jobs = config.cluster_spec.jobs if config.cluster_spec else []
        if TaskType.WORKER in jobs and TaskType.MASTER in jobs:
            # A TF1 cluster with a master: the first worker, not the master, writes summaries and step counts.
            save_summary_steps, log_step_count_steps = 0, None
            if config.task_type == TaskType.WORKER and config.task_id == 0:
                worker_hooks.extend(_first_workers_summary_hooks(config, spec.scaffold))
        loss, steps = None, 0
        with self._training_session(
            spec, worker_hooks, chief_hooks, session_config, save_summary_steps, log_step_count_steps, strategy
        ) as session:
            while not session.should_stop():
                steps += 1
                _, loss = session.run([spec.train_op, spec.loss])
        if steps == 0:
            tf.compat.v1.logging.warning(
                "Training with estimator made no steps. Perhaps input is empty or misspecified."
            )
        return loss

    def _training_session(
        self,
        spec: EstimatorSpec,
        worker_hooks: list,
        chief_hooks: list,
        session_config: Any,
        save_summary_steps: int,
        log_step_count_steps: int | None,
        strategy: tf.distribute.Strategy | None,
    ) -> Any:
        """The session a training loop runs in: TensorFlow's MonitoredTrainingSession, as TF 2.15's. A worker of
        a MultiWorkerMirroredStrategy other than the chief keeps its own copy of every variable, so it sets up
        (or restores) its variables itself as the chief does, but saves and summarizes nothing (TF 2.15's
        distribute coordinator gave it the same session)."""
        config = self._config
        if strategies.plan_of(strategy).in_sync_across_workers and not config.is_chief:
            creator = _v1.train.ChiefSessionCreator(
                scaffold=spec.scaffold, master=config.master, config=session_config, checkpoint_dir=self._model_dir
            )
            return _v1.train.MonitoredSession(session_creator=creator, hooks=worker_hooks)
        return tf_internals.monitored_training_session(
            master=config.master,
            is_chief=config.is_chief,
            checkpoint_dir=self._model_dir,
            scaffold=spec.scaffold,
            hooks=worker_hooks,
            chief_only_hooks=(*chief_hooks, *spec.training_chief_hooks),
            save_checkpoint_secs=0,
            save_summaries_steps=save_summary_steps,
            config=session_config,
            max_wait_secs=config.session_creation_timeout_secs,
            log_step_count_steps=log_step_count_steps,
            save_graph_def=config.checkpoint_save_graph_def,
        )

    def _checkpoint_hooks(
        self, spec: EstimatorSpec, worker_hooks: list, listeners: list, local_saver: bool = False
    ) -> list:
        """The chief's CheckpointSaverHook, unless a hook given saves already; the listeners join it. With
        `local_saver` (the chief of a multi-worker strategy, default Saver) it saves with a Saver that needs no
        other worker (replicated.py)."""
        config = self._config
        savers = [
            hook
            for hook in [*worker_hooks, *spec.training_chief_hooks]
            if isinstance(hook, _v1.train.CheckpointSaverHook)
        ]
        chief_hooks = []
        if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not savers:
            chief_hooks = [
                _v1.train.CheckpointSaverHook(
                    self._model_dir,
                    save_secs=config.save_checkpoints_secs,
                    save_steps=config.save_checkpoints_steps,
                    scaffold=None if local_saver else spec.scaffold,
                    saver=self._saver_of_local_copies() if local_saver else None,
                    save_graph_def=config.checkpoint_save_graph_def,
                )
            ]
            savers = chief_hooks
        if listeners:
            if not savers:
                raise ValueError(
                    "There should be a CheckpointSaverHook to use saving_listeners. Please set one of the "
                    "RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs."
                )
            attached = tf_internals.saver_listeners(savers[0])  # TF 2.15 used the first saver hook, a user's too
            attached.extend(listener for listener in listeners if listener not in attached)
        return chief_hooks

    # -- evaluate ----------------------------------------------------------------
    def evaluate(
        self,
        input_fn: Callable,
        steps: int | None = None,
        hooks=None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict:
        """Metrics of a checkpoint (default: the latest): eval_metric_ops, `loss` and `global_step`."""
        hooks = [*check_hooks(hooks), *evaluation_steps_hooks(steps)]
        if not checkpoint_path:
            checkpoint_path = self.latest_checkpoint()
            if not checkpoint_path:
                tf.compat.v1.logging.info(
                    f"Could not find trained model in model_dir: {self._model_dir}, running initialization to evaluate."
                )
        with self._new_graph():
            scaffold, update_op, values, all_hooks = self._evaluation_graph(input_fn, hooks, checkpoint_path)
            check_restorable(checkpoint_path)
            try:
                return self._run_evaluation(
                    checkpoint_path, scaffold, update_op, values, all_hooks, self.eval_dir(name)
                )
            finally:
                self._input_cache.publish()

    def _eval_session_config(self) -> Any:
        strategy = self._eval_distribution
        return self._session_config if strategy is None else replicated.session_config(self._session_config, strategy)

    def _run_evaluation(
        self, checkpoint_path: str | None, scaffold, update_op, values: dict, hooks: list, output_dir: str
    ) -> dict:
        """Runs an evaluation graph built by `_evaluation_graph` to its end; writes and returns its results."""
        results = tf_internals.evaluate_once(
            checkpoint_path=checkpoint_path,
            master=self._config.evaluation_master,
            scaffold=scaffold,
            eval_ops=update_op,
            final_ops=values,
            hooks=hooks,
            config=self._eval_session_config(),
        )
        step = int(results["global_step"])
        write_dict_to_summary(output_dir, results, step)
        if checkpoint_path:
            write_checkpoint_path_to_summary(output_dir, checkpoint_path, step)
        return results

    def _evaluation_graph(self, input_fn: Callable, hooks: list, checkpoint_path: str | None) -> tuple:
        """(scaffold, the op updating every metric, {name: value}, hooks) of an evaluation in this graph; under
        `eval_distribute`, one model_fn per replica, each metric over every replica's batches."""
        strategy = self._eval_distribution
        with replicated.replica_scope(strategy) if strategy is not None else contextlib.nullcontext():
            features, labels, input_hooks = self._features_and_labels(input_fn, ModeKeys.EVAL, strategy)
            if strategy is None:
                spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            else:
                spec = replicated.call_for_each_replica(
                    strategy, self._call_model_fn, (features, labels, ModeKeys.EVAL, self.config)
                )
            if LOSS_METRIC_KEY in spec.eval_metric_ops:
                raise ValueError(
                    f'Metric with name "{LOSS_METRIC_KEY}" is not allowed, because Estimator already defines '
                    "a default metric with the same name."
                )
            if strategy is None:
                metrics = {**spec.eval_metric_ops, LOSS_METRIC_KEY: _v1.metrics.mean(spec.loss)}
                updates = [metric[1] for _, metric in sorted(metrics.items())]
                scaffold, evaluation_hooks = spec.scaffold, list(spec.evaluation_hooks)
            else:
                metrics = replicated.eval_metric_ops(strategy, spec, LOSS_METRIC_KEY)
                updates = [strategy.group(metric[1]) for _, metric in sorted(metrics.items())]  # on every replica
                scaffold = replicated.combined_scaffold(strategy, spec.scaffold)
                evaluation_hooks = replicated.first_replica(strategy, spec.evaluation_hooks)
        self._maybe_warm_start(checkpoint_path)
        values = {name: metric[0] for name, metric in sorted(metrics.items())}
        update_op = tf.group(*updates)
        if _v1.GraphKeys.GLOBAL_STEP in values:
            raise ValueError(
                "Metric with name `global_step` is not allowed, because Estimator already defines a "
                "default metric with the same name."
            )
        values[_v1.GraphKeys.GLOBAL_STEP] = _v1.train.get_global_step()
        if scaffold.local_init_op is not None:  # the model's own local init, and the metrics' and eval step's
            tf_internals.create_eval_step()
            scaffold = _v1.train.Scaffold(
                local_init_op=tf.group(scaffold.local_init_op, _v1.train.Scaffold.default_local_init_op()),
                copy_from_scaffold=scaffold,
            )
        return scaffold, update_op, values, [*input_hooks, *hooks, *evaluation_hooks]

    # -- predict -----------------------------------------------------------------
    def predict(
        self,
        input_fn: Callable,
        predict_keys: Sequence[str] | None = None,
        hooks=None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator:
        """Yields the model_fn's predictions per example (or per batch), from a checkpoint."""
        hooks = check_hooks(hooks)
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            tf.compat.v1.logging.info(
                f"Could not find trained model in model_dir: {self._model_dir}, running initialization to predict."
            )
        with self._new_graph():
            features, _, input_hooks = self._features_and_labels(input_fn, ModeKeys.PREDICT)
            if not _uses_dataset_or_queue(features):
                tf.compat.v1.logging.warning(
                    "Input graph does not use tf.data.Dataset or contain a QueueRunner. That means "
                    "predict yields forever. This is probably a mistake."
                )
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            self._maybe_warm_start(checkpoint_path)
            predictions = extract_keys(spec.predictions, predict_keys)
            check_restorable(checkpoint_path)
            creator = _v1.train.ChiefSessionCreator(
                checkpoint_filename_with_path=checkpoint_path,
                master=self._config.master,
                scaffold=spec.scaffold,
                config=self._session_config,
            )
            with _v1.train.MonitoredSession(
                session_creator=creator, hooks=[*input_hooks, *hooks, *spec.prediction_hooks]
            ) as session:
                while not session.should_stop():
                    values = session.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        yield from per_example(values)

    # -- export ------------------------------------------------------------------
    def export_saved_model(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable | None,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        experimental_mode: str = ModeKeys.PREDICT,
    ) -> bytes:
        """Writes `<export_dir_base>/<timestamp>` (built under a temporary name); returns that path as bytes."""
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        return self._export_all_saved_models(
            export_dir_base,
            {experimental_mode: serving_input_receiver_fn},
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            strip_default_attrs=True,
        )

    def experimental_export_all_saved_models(
        self,
        export_dir_base: str,
        input_receiver_fn_map: dict,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
    ) -> bytes:
        """One SavedModel with a meta graph per mode in `input_receiver_fn_map` (train, eval and/or predict),
        each with TF 2.15's tags and signatures; the variables are saved once."""
        return self._export_all_saved_models(
            export_dir_base,
            input_receiver_fn_map,
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            strip_default_attrs=True,
        )

    def export_savedmodel(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable | None,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        strip_default_attrs: bool = False,
    ) -> bytes:
        """The TF 1.x name of export_saved_model."""
        if not serving_input_receiver_fn:
            raise ValueError("An input_receiver_fn must be defined.")
        return self._export_all_saved_models(
            export_dir_base,
            {ModeKeys.PREDICT: serving_input_receiver_fn},
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            strip_default_attrs=strip_default_attrs,
        )

    def _export_all_saved_models(
        self,
        export_dir_base: str,
        input_receiver_fn_map: dict,
        assets_extra: dict | None = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        strip_default_attrs: bool = True,
    ) -> bytes:
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            if not self._warm_start_settings:
                raise ValueError(f"Couldn't find trained model at {self._model_dir}.")
            checkpoint_path = self._warm_start_settings.ckpt_to_initialize_from
            if tf.io.gfile.isdir(checkpoint_path):
                checkpoint_path = tf.train.latest_checkpoint(checkpoint_path)
        modes = [mode for mode in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT) if input_receiver_fn_map.get(mode)]
        if not modes:
            raise ValueError(f"No valid modes for exporting found. Got {list(input_receiver_fn_map)}.")
        export_dir = timestamped_dir(export_dir_base)

        def build(folder: str) -> None:
            saved = os.path.join(folder, "saved_model")  # the builder needs a folder that does not exist yet
            builder = _v1.saved_model.Builder(saved)
            for index, mode in enumerate(modes):
                self._add_meta_graph_for_mode(
                    builder,
                    input_receiver_fn_map[mode],
                    checkpoint_path,
                    mode,
                    save_variables=index == 0,
                    strip_default_attrs=strip_default_attrs,
                )
            builder.save(as_text)
            for name in os.listdir(saved):
                os.rename(os.path.join(saved, name), os.path.join(folder, name))
            os.rmdir(saved)
            export_lib.write_assets_extra(folder, assets_extra)

        atomic.publish_folder(export_dir, build)
        tf.compat.v1.logging.info("SavedModel written to: %s", export_dir)
        return export_dir.encode()

    def _add_meta_graph_for_mode(
        self,
        builder,
        receiver_fn: Callable,
        checkpoint_path: str,
        mode: str,
        save_variables: bool,
        strip_default_attrs: bool,
        tags: Sequence[str] | None = None,
    ) -> None:
        """One meta graph of the export: the model_fn in `mode` on the receiver's inputs, restored, tagged
        `tags` (default: TF 2.15's tags of `mode`)."""
        with self._new_graph() as graph:
            receiver = receiver_fn()
            spec = self._call_model_fn(receiver.features, getattr(receiver, "labels", None), mode, self.config)
            outputs = export_lib.export_utils.export_outputs_for_mode(
                mode=spec.mode,
                serving_export_outputs=spec.export_outputs,
                predictions=spec.predictions,
                loss=spec.loss,
                metrics=spec.eval_metric_ops,
            )
            signatures = export_lib.build_all_signature_defs(
                receiver.receiver_tensors,
                outputs,
                getattr(receiver, "receiver_tensors_alternatives", None),
                serving_only=(mode == ModeKeys.PREDICT),
            )
            saver = self._saver(spec)
            local_init_op = spec.scaffold.local_init_op
            if local_init_op is None:
                local_init_op = _v1.train.Scaffold.default_local_init_op()
            with _v1.Session(graph=graph, config=self._session_config) as session:
                try:
                    saver.restore(session, checkpoint_path)
                except tf.errors.NotFoundError as error:
                    raise ValueError(
                        "Could not load all requested variables from checkpoint. Please make sure your model_fn does "
                        f"not expect variables that were not saved in the checkpoint.\n\nEncountered error with mode "
                        f"`{mode}` while restoring checkpoint from: `{checkpoint_path}`. Full Traceback:\n\n{error}"
                    ) from error
                tf_internals.add_train_op(builder, spec.train_op)
                kwargs = dict(
                    tags=list(tags) if tags is not None else export_lib.export_utils.EXPORT_TAG_MAP[mode],
                    signature_def_map=signatures,
                    assets_collection=_v1.get_collection(_v1.GraphKeys.ASSET_FILEPATHS),
                    main_op=local_init_op,
                    saver=saver,
                    strip_default_attrs=strip_default_attrs,
                )
                if save_variables:
                    builder.add_meta_graph_and_variables(session, **kwargs)
                else:
                    builder.add_meta_graph(**kwargs)


EstimatorV2 = Estimator


def _loss_and_step_logger(spec: EstimatorSpec, global_step: tf.Variable, every_n_iter: int) -> Any:
    """The LoggingTensorHook of "loss = ..., step = ..." lines, every `every_n_iter` steps.

    The step is the one this run trained: the global step read after the train op, less its increment.
    A read fetched beside the train op is not ordered with the increment and may see either value.
    """
    with tf.control_dependencies([spec.train_op]):
        trained_step = tf.identity(global_step.read_value()) - 1
    return _v1.train.LoggingTensorHook({"loss": spec.loss, "step": trained_step}, every_n_iter=every_n_iter)


def _saver_settings(config: RunConfig) -> dict:
    """How TF 2.15's Estimator built its Savers from RunConfig: sharded, relative paths, its retention."""
    return {
        "sharded": True,
        "max_to_keep": config.keep_checkpoint_max,
        "keep_checkpoint_every_n_hours": config.keep_checkpoint_every_n_hours,
        "save_relative_paths": True,
    }


def _default_saver(config: RunConfig) -> Any:
    """The Saver an Estimator saves with when the model_fn brings none, as TF 2.15 built it."""
    return _v1.train.Saver(defer_build=True, **_saver_settings(config))


def _first_workers_summary_hooks(config: RunConfig, scaffold: Any) -> list:
    """In a TF 1 cluster with a master, the summaries and step counts the first worker writes."""
    hooks: list = []
    if config.save_summary_steps and config.save_summary_steps > 0:
        hooks.append(
            _v1.train.SummarySaverHook(
                save_steps=config.save_summary_steps, output_dir=config.model_dir, scaffold=scaffold
            )
        )
    if config.log_step_count_steps and config.log_step_count_steps > 0:
        hooks.append(_v1.train.StepCounterHook(every_n_steps=config.log_step_count_steps, output_dir=config.model_dir))
    return hooks
