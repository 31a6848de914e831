"""The strategies' plumbing that the Estimator engines and the input pipeline share: where a strategy's
replicas run (`plan_of`, the typed plan every engine and mode reads), a parameter-server cluster's
connection and servers, and batches copied ahead to an accelerator.

Which engine runs which strategy: Keras 3 `fit` runs MirroredStrategy but not
MultiWorkerMirroredStrategy (keras-team/keras#20585) nor ParameterServerStrategy; the Estimator
path's Keras engine runs all three, stepping replicas through `strategy.run` (and, under a parameter
server strategy, sending the steps to the workers through a `ClusterCoordinator`). On one device,
`prefetch_to_accelerator` is every input path's last stage: batches copied ahead to the GPU.

The cluster functions take any object with RunConfig's cluster properties (`cluster_spec`,
`task_type`, `task_id`, `protocol`), so that this module needs nothing of `compat.estimator`.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from typing import Protocol

import tensorflow as tf

from compat.core.errors import UserError

logging = tf.get_logger()  # TensorFlow's logger, as TF 2.15's Estimator logged (docs/estimator.md)


class ClusterConfig(Protocol):
    """What the cluster functions read of a `RunConfig`."""

    @property
    def cluster_spec(self) -> tf.train.ClusterSpec: ...

    @property
    def task_type(self) -> str | None: ...

    @property
    def task_id(self) -> int: ...

    @property
    def protocol(self) -> str | None: ...


class UnsupportedStrategyError(UserError, ValueError):
    """A strategy the chosen mode or engine cannot run; the message names what can."""


DEVICE_PREFETCH_VARIABLE = "COMPAT_PREFETCH_TO_DEVICE"


def prefetch_to_accelerator(
    dataset: tf.data.Dataset, buffer_size: int = 2, device: str | None = None
) -> tf.data.Dataset:
    """`dataset` with its next `buffer_size` elements copied ahead to `device` (default: the first visible
    GPU), so that the host-to-device copy overlaps the step instead of starting it; `dataset` itself where
    no GPU is visible. `COMPAT_PREFETCH_TO_DEVICE=0` turns it off, `=/cpu:0` (a device name) copies there
    (what the tests do on a machine without a GPU). It must be the last transformation, on one device
    only: a strategy's distributed dataset copies ahead to each replica's device itself."""
    setting = os.environ.get(DEVICE_PREFETCH_VARIABLE, "").strip()
    if setting.lower() in {"0", "off", "false", "no"}:
        return dataset
    if device is None and setting.startswith("/"):
        device = setting
    if device is None:
        gpus = tf.config.list_logical_devices("GPU")
        if not gpus:
            return dataset
        device = gpus[0].name
    return dataset.apply(tf.data.experimental.prefetch_to_device(device, buffer_size))


# TF 2's class and TF 1.x's (tf.contrib.distribute.CollectiveAllReduceStrategy after TF 2.15's upgrader): TF 2.15's
# Estimator trained a TF_CONFIG cluster under either, and neither is a subclass of the other.
MULTI_WORKER_STRATEGIES = (
    tf.distribute.MultiWorkerMirroredStrategy,
    tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy,
)


class Topology(enum.Enum):
    """Where a strategy's replicas run, which decides what each engine does around the step."""

    ONE_DEVICE = "one device"  # no strategy, or one of a single replica
    DEVICES = "the devices of one machine"  # MirroredStrategy and the like
    WORKERS = "workers in sync"  # MultiWorkerMirroredStrategy: collectives across the cluster's tasks
    PARAMETER_SERVERS = "parameter servers"  # ParameterServerStrategy: this task coordinates, workers step


@dataclasses.dataclass(frozen=True)
class StrategyPlan:
    """A strategy and where its replicas run: what the engines and the modes ask of it, answered once.

    Attributes:
      strategy: the strategy itself (None: no strategy).
      topology: where its replicas run.
    """

    strategy: tf.distribute.Strategy | None
    topology: Topology

    @property
    def in_sync_across_workers(self) -> bool:
        """Whether the replicas run on several tasks in lockstep: saving, metrics and the step all take part in
        collectives, so one task cannot do them alone (the chief saves copies of its own; a worker's metrics
        are summed across workers)."""
        return self.topology is Topology.WORKERS

    @property
    def coordinated(self) -> bool:
        """Whether this task sends steps to workers through a ClusterCoordinator, the variables on ps tasks."""
        return self.topology is Topology.PARAMETER_SERVERS

    @property
    def spans_tasks(self) -> bool:
        """Whether the strategy reaches beyond this task (evaluation and export then read a copy of no strategy,
        as TF 2.15's did: one task evaluates alone)."""
        return self.topology in (Topology.WORKERS, Topology.PARAMETER_SERVERS)

    @property
    def replicas(self) -> int:
        return self.strategy.num_replicas_in_sync if self.strategy is not None else 1


def plan_of(strategy: tf.distribute.Strategy | None) -> StrategyPlan:
    """The plan of `strategy` (RunConfig.train_distribute or eval_distribute, the one a mode made, or None).

    A strategy this sorting does not know (TPUStrategy, CentralStorageStrategy, ...) is given the topology of
    its replicas: one device or the devices of one machine; each engine refuses what it does not run.
    """
    if isinstance(strategy, MULTI_WORKER_STRATEGIES):
        topology = Topology.WORKERS
    elif isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy):
        topology = Topology.PARAMETER_SERVERS
    elif strategy is None or strategy.num_replicas_in_sync == 1:
        topology = Topology.ONE_DEVICE
    else:
        topology = Topology.DEVICES
    return StrategyPlan(strategy, topology)


def parameter_server_cluster(config: ClusterConfig) -> tf.train.ClusterSpec:
    """The TF_CONFIG cluster as ParameterServerStrategy needs it, the same on every task: its coordinator's
    job is `chief` (TF 1's `master` is renamed), and the evaluator, which reads checkpoints, is left out."""
    jobs = config.cluster_spec.as_dict()
    return tf.train.ClusterSpec(
        {"chief" if job == "master" else job: tasks for job, tasks in jobs.items() if job != "evaluator"}
    )


# The process's one connection to a parameter-server cluster: connecting again would end every
# variable of the first (TensorFlow's connection is process-wide).
_CONNECTED: dict[str, tf.distribute.experimental.ParameterServerStrategy] = {}


def _cluster_key(config: ClusterConfig) -> str:
    return repr(sorted(parameter_server_cluster(config).as_dict().items()))


def parameter_server_strategy(config: ClusterConfig) -> tf.distribute.experimental.ParameterServerStrategy:
    """The chief's ParameterServerStrategy over `config`'s cluster: variables on the ps tasks, steps sent to
    the workers; the same one for every call in a process. Creating it connects this process to the
    cluster, after which TensorFlow objects made before (eager tensors, variables) can no longer be used:
    make it before anything else (`is_connected` says whether it was)."""
    key = _cluster_key(config)
    if key not in _CONNECTED:
        cluster = parameter_server_cluster(config)
        require_workers(cluster.as_dict())
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            cluster, task_type="chief", task_id=0, rpc_layer=config.protocol or "grpc"
        )
        logging.info("Connecting to the parameter-server cluster %s", cluster.as_dict())
        _CONNECTED[key] = tf.distribute.experimental.ParameterServerStrategy(resolver)
    return _CONNECTED[key]


def require_workers(cluster: dict) -> None:
    """Refuses a parameter-server cluster (`ClusterSpec.as_dict()`) without workers: nothing would run the steps."""
    if not cluster.get("worker"):
        raise UnsupportedStrategyError(
            "TF_CONFIG's cluster has ps tasks but no worker: under a ParameterServerStrategy the workers run "
            "the steps (the chief only coordinates). Add worker tasks"
        )


def is_connected(config: ClusterConfig) -> bool:
    """Whether this process has connected to `config`'s parameter-server cluster."""
    return _cluster_key(config) in _CONNECTED


def serve_parameter_server_task(config: ClusterConfig) -> tf.distribute.Server:
    """This worker's or ps task's server in a ParameterServerStrategy cluster: it runs what the chief sends.
    With TensorFlow's default of one inter-op thread per core, a server on a 2-core machine can hold every
    thread in a blocked remote call and deadlock; four at least keep it serving."""
    server_config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=max(4, os.cpu_count() or 1))
    logging.info("Starting the TensorFlow server of %s %d for the chief's steps", config.task_type, config.task_id)
    return tf.distribute.Server(
        parameter_server_cluster(config),
        job_name=config.task_type,
        task_index=config.task_id,
        protocol=config.protocol or "grpc",
        config=server_config,
        start=True,
    )


_RUN_BY_THE_KERAS_ENGINE = (
    tf.distribute.MirroredStrategy,
    tf.distribute.MultiWorkerMirroredStrategy,
    tf.distribute.OneDeviceStrategy,
    tf.distribute.experimental.ParameterServerStrategy,
)


def checked_strategy(strategy) -> tf.distribute.Strategy | None:
    """`strategy` if model_to_estimator's engine runs it; else an error naming the ones it does."""
    if strategy is None or isinstance(strategy, _RUN_BY_THE_KERAS_ENGINE):
        return strategy
    raise UnsupportedStrategyError(
        f"RunConfig(train_distribute={type(strategy).__name__}) is not run by compat.estimator: a model_to_estimator "
        "Estimator runs MirroredStrategy (one host), MultiWorkerMirroredStrategy (a TF_CONFIG cluster), "
        "OneDeviceStrategy, and ParameterServerStrategy, which RunConfig refuses as TF 2.15's did: in a TF_CONFIG "
        "cluster with ps tasks model_to_estimator creates it on the chief"
    )
