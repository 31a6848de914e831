"""Several replicas in the graph engine: `RunConfig(train_distribute=..., eval_distribute=...)` as TF 2.15 ran it.

TF 2.15's Estimator replicated a model_fn in one graph ("in-graph replication"):
under the strategy's scope the input_fn is called once per worker (with an
`InputContext`) and each replica takes whole batches from it, so the input_fn's
batch size is the per-replica one; the model_fn is called once per replica
(`call_for_each_replica`), its variables are shared (one MirroredVariable each,
saved under the usual name), and the optimizer sums the replicas' gradients
after scaling a mean loss by 1/replicas. What the Estimator runs is then one
spec: the replicas' train ops grouped, their losses reduced to the loss a single
device would report, the first replica's hooks, one scaffold. Evaluation does
the same with `eval_distribute`, each metric summed over replicas before its
value is read. Predictions and exports run on one device, as in TF 2.15.

This module holds those pieces; `Estimator` (estimator.py) calls them. The
strategies it runs: MirroredStrategy (local devices) and, in a TF_CONFIG
cluster, MultiWorkerMirroredStrategy; a strategy of one replica trains on
that device without it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf

from compat.core import strategies, tf_internals
from compat.core.strategies import UnsupportedStrategyError
from compat.estimator.model_fn import EstimatorSpec

_v1 = tf.compat.v1

# The strategies whose replicas the graph engine builds in one graph, TF2's and tf.compat.v1's (separate
# classes); TF 2.15's Estimator ran these too.
_REPLICATED = (
    tf.distribute.MirroredStrategy,
    tf.compat.v1.distribute.MirroredStrategy,
    *strategies.MULTI_WORKER_STRATEGIES,
)


def replicas_of(strategy: tf.distribute.Strategy | None, argument: str) -> tf.distribute.Strategy | None:
    """The strategy the graph engine replicates over, None for one device, or UnsupportedStrategyError.

    Args:
      strategy: `RunConfig.train_distribute` or `eval_distribute`.
      argument: that argument's name, for the message.

    Raises:
      UnsupportedStrategyError: a strategy other than MirroredStrategy, MultiWorkerMirroredStrategy or one of
        a single replica (OneDeviceStrategy, or a mirrored one over one device), e.g. TPUStrategy.
    """
    plan = strategies.plan_of(strategy)
    if plan.in_sync_across_workers:
        return strategy  # even with one replica: its workers' collectives and the chief's saving
    if plan.replicas == 1:
        return None  # no strategy, OneDeviceStrategy, a mirrored one over one device, ...: the same graph and numbers
    if isinstance(strategy, _REPLICATED):
        return strategy
    raise UnsupportedStrategyError(
        f"RunConfig({argument}={type(strategy).__name__}) is not run by compat.estimator's Estimator: it replicates "
        "a model_fn with MirroredStrategy (the devices of one machine) or MultiWorkerMirroredStrategy (a TF_CONFIG "
        f"cluster); a cluster with ps tasks needs no strategy. Use one of those, or remove {argument}"
    )


@contextlib.contextmanager
def replica_scope(strategy: tf.distribute.Strategy) -> Iterator[None]:
    """The strategy's scope, with TF 2.15's flag that makes v1 optimizers scale a mean loss by 1/replicas
    (the gradients are summed across replicas, so the step is the global batch's mean, as on one device)."""
    with strategy.scope(), tf_internals.loss_scaled_for_estimator(strategy):
        yield


def input_iterator(strategy: tf.distribute.Strategy, dataset_fn: Callable[[Any], Any]) -> tuple[Any, list]:
    """(iterator, hooks) over `dataset_fn(input_context)`, called once per worker; each replica's `get_next`
    takes a whole element (a per-replica batch), copied ahead to that replica's device."""
    iterator = strategy.make_input_fn_iterator(dataset_fn)
    return iterator, [_InitializeIterator(iterator)]


class _InitializeIterator(tf.compat.v1.train.SessionRunHook):
    """Initializes a distributed iterator when a session is created (TF 2.15's DistributedIteratorInitializerHook)."""

    def __init__(self, iterator: Any):
        self._iterator = iterator

    def begin(self) -> None:
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord) -> None:
        del coord
        session.run(self._initializer)


def call_for_each_replica(strategy: tf.distribute.Strategy, model_fn: Callable, args: tuple) -> Any:
    """`model_fn(*args)` once per replica (its variables shared), as TF 2.15 replicated a model_fn.

    A variable a Keras 3 layer makes is a `tf.Variable` (TensorFlow 2's), which in a graph puts itself in
    the variable collections: under the strategy each replica's copy did so beside the replicated variable
    that holds them, so the Saver wrote `dense/kernel/replica_1` too and the initializers ran per copy. Only
    the replicated variables stay in the collections, as tf.compat.v1.layers' (`get_variable`) are. (The
    copies of other TF 2 variables stay: TF 2.15 saved a canned estimator's Keras 2 optimizer slots so.)
    """
    grouped = strategy.extended.call_for_each_replica(model_fn, args=args)
    graph = _v1.get_default_graph()
    keys = (_v1.GraphKeys.GLOBAL_VARIABLES, _v1.GraphKeys.LOCAL_VARIABLES, _v1.GraphKeys.TRAINABLE_VARIABLES)
    copies = {
        id(copy)
        for key in keys
        for variable in graph.get_collection(key)
        if tf_internals.copies(variable) != (variable,)
        for copy in tf_internals.copies(variable)
        if tf_internals.made_by_keras_3(copy)
    }
    if copies:
        for key in (*keys, _v1.GraphKeys.MODEL_VARIABLES):
            collection = graph.get_collection_ref(key)
            collection[:] = [variable for variable in collection if id(variable) not in copies]
    return grouped


def loss_reduction() -> tf.distribute.ReduceOp:
    """How the replicas' losses combine into the reported one: their mean where a v1 optimizer scaled a mean
    loss (the loss a single device reports), else their sum (TF 2.15's rule)."""
    graph = _v1.get_default_graph()
    if tf_internals.loss_scaled_by_optimizer(graph):
        return _v1.distribute.get_loss_reduction()
    return tf.distribute.ReduceOp.SUM


def first_replica(strategy: tf.distribute.Strategy, per_replica: Any) -> Any:
    """The first replica's value of each element of `per_replica` (hooks: one of each runs, as in TF 2.15)."""
    return [strategy.experimental_local_results(value)[0] for value in per_replica]


def train_spec(strategy: tf.distribute.Strategy, grouped: EstimatorSpec) -> EstimatorSpec:
    """The one TRAIN spec the Estimator runs, from the replicas' specs (`call_for_each_replica`'s result)."""
    loss = strategy.reduce(loss_reduction(), grouped.loss, axis=None)
    return EstimatorSpec(
        mode=grouped.mode,
        loss=loss,
        train_op=strategy.group(grouped.train_op),
        training_hooks=first_replica(strategy, grouped.training_hooks),
        training_chief_hooks=first_replica(strategy, grouped.training_chief_hooks),
        scaffold=combined_scaffold(strategy, grouped.scaffold),
    )


def eval_metric_ops(strategy: tf.distribute.Strategy, grouped: EstimatorSpec, loss_key: str) -> dict:
    """The replicas' eval_metric_ops with the mean loss added under `loss_key`: each metric's variables are
    summed over replicas when its value is read, so the metrics are those of the whole evaluation set."""
    metrics = dict(grouped.eval_metric_ops)
    metrics[loss_key] = strategy.extended.call_for_each_replica(_v1.metrics.mean, args=(grouped.loss,))
    return metrics


def combined_scaffold(strategy: tf.distribute.Strategy, grouped: Any) -> tf.compat.v1.train.Scaffold:
    """One Scaffold from the replicas' (TF 2.15's merge): their init and local-init ops grouped, the readiness
    checks of every replica, the first saver and init_fn."""
    scaffolds = strategy.experimental_local_results(grouped)

    def grouped_ops(name: str) -> Any:
        ops = [getattr(scaffold, name) for scaffold in scaffolds if getattr(scaffold, name) is not None]
        return strategy.group(ops) if ops else None

    def concatenated(per_replica: Any) -> Any:
        if per_replica is None:
            return None
        values = tf.nest.flatten(strategy.experimental_local_results(per_replica))
        return tf.concat(values, 0) if len(values) != 1 else values[0]

    feeds = [scaffold.init_feed_dict for scaffold in scaffolds if scaffold.init_feed_dict is not None]
    init_fns = [tf_internals.scaffold_init_fn(s) for s in scaffolds if tf_internals.scaffold_init_fn(s) is not None]
    savers = [scaffold.saver for scaffold in scaffolds if scaffold.saver is not None]
    ready_op = strategy.extended.call_for_each_replica(lambda scaffold: scaffold.ready_op, args=(grouped,))
    ready_for_local_init_op = strategy.extended.call_for_each_replica(_ready_for_local_init_op, args=(grouped,))
    return _v1.train.Scaffold(
        init_op=grouped_ops("init_op"),
        ready_op=concatenated(ready_op),
        ready_for_local_init_op=concatenated(ready_for_local_init_op),
        local_init_op=grouped_ops("local_init_op"),
        summary_op=grouped_ops("summary_op"),
        saver=savers[0] if savers else None,
        init_feed_dict=strategy.group(feeds) if feeds else None,
        init_fn=init_fns[0] if init_fns else None,
        copy_from_scaffold=None,
    )


def _ready_for_local_init_op(scaffold: tf.compat.v1.train.Scaffold) -> Any:
    if scaffold.ready_for_local_init_op is not None:
        return scaffold.ready_for_local_init_op
    return _v1.train.Scaffold.get_or_default(
        "ready_for_local_init_op",
        _v1.GraphKeys.READY_FOR_LOCAL_INIT_OP,
        lambda: _v1.report_uninitialized_variables(_v1.global_variables()),
    )


def session_config(config: Any, strategy: tf.distribute.Strategy) -> Any:
    """The session config replicated training runs with: the user's (or RunConfig's default), completed by the
    strategy (collective ops' group leader in a cluster), and with enough inter-op threads that every replica's
    half of a cross-device reduction can wait for the other's (TF 2.15 deadlocked with two CPU replicas on a
    2-core machine, where the default pool is one thread a core)."""
    config = _v1.ConfigProto() if config is None else _copy(config)
    config = tf_internals.strategy_session_config(strategy, config)
    # A session sees one CPU device unless told more: the logical CPUs a strategy may mirror over (what
    # tf.config.set_logical_device_configuration made for the eager context) are counted in for it.
    cpus = len(tf.config.list_logical_devices("CPU"))
    if config.device_count.get("CPU", 1) < cpus:
        config.device_count["CPU"] = cpus
    wanted = max(4, 2 * strategy.num_replicas_in_sync, os.cpu_count() or 1)
    if config.inter_op_parallelism_threads < wanted:  # 0 is the default: one thread a core
        config.inter_op_parallelism_threads = wanted
    return config


def _copy(config: Any) -> Any:
    copied = _v1.ConfigProto()
    copied.CopyFrom(config)
    return copied


def for_evaluation(strategy: tf.distribute.Strategy | None) -> tf.distribute.Strategy | None:
    """The strategy an evaluation runs under: a multi-worker one only over this task's own devices, since one
    task evaluates alone (the chief after training, or the evaluator), as TF 2.15's distribute coordinator
    configured it; the other workers take no part."""
    if not strategies.plan_of(strategy).in_sync_across_workers:
        return strategy
    assert strategy is not None
    devices = [device.split("/device:")[-1] for device in strategy.extended.worker_devices]
    if len(devices) == 1:
        return None
    return tf.distribute.MirroredStrategy([f"/device:{device}" for device in devices])


def saver_of_local_copies(**saver_kwargs: Any) -> tf.compat.v1.train.Saver:
    """A Saver for the chief of a multi-worker strategy, which saves alone: a variable synchronized on read
    (batch norm's moving statistics) is saved as its first copy, since its usual saved value is a reduction
    across every worker, which the other workers would have to join. The names are the usual ones, so the
    graph's default Saver restores these checkpoints (into every copy)."""
    variables = [
        tf_internals.first_copy(variable)
        if getattr(variable, "synchronization", None) == tf.VariableSynchronization.ON_READ
        else variable
        for variable in _v1.global_variables()
    ]
    return _v1.train.Saver(var_list=variables + _v1.get_collection(_v1.GraphKeys.SAVEABLE_OBJECTS), **saver_kwargs)
