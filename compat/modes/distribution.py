"""Beyond one device: TensorFlow's own distribution strategies, chosen as TensorFlow Model Garden chooses them.

`--distribution_strategy=off|mirrored|multi_worker_mirrored|parameter_server`
and `--num_gpus`, with Model Garden's meanings:

  off                     the default device
  mirrored                `tf.distribute.MirroredStrategy` over `num_gpus` GPUs (the CPU when 0)
  multi_worker_mirrored   `tf.distribute.MultiWorkerMirroredStrategy`, the cluster from TF_CONFIG
  parameter_server        `tf.distribute.experimental.ParameterServerStrategy` over a TF_CONFIG
                          cluster with ps tasks (`mode=estimator`): the chief coordinates, the
                          workers run its steps, the ps tasks hold the variables

What each engine runs, and the parameter-server plumbing, are in `compat.core.strategies`.
"""

from __future__ import annotations

import tensorflow as tf

from compat.config import STRATEGIES, DistributionConfig
from compat.core import strategies, tf_config
from compat.core.strategies import UnsupportedStrategyError


def make_strategy(name: str, num_gpus: int = 0) -> tf.distribute.Strategy | None:
    """The strategy `name` stands for (None for off), as Model Garden's `get_distribution_strategy`."""
    if name == "off":
        return None
    if name == "mirrored":
        gpus = [device.name for device in tf.config.list_logical_devices("GPU")]
        if num_gpus > len(gpus):
            raise UnsupportedStrategyError(
                f"`num_gpus={num_gpus}` but {len(gpus)} GPU(s) are visible; lower "
                "`num_gpus`, or `num_gpus=0` to mirror on the CPU"
            )
        return tf.distribute.MirroredStrategy(gpus[:num_gpus] if num_gpus else ["/cpu:0"])
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "parameter_server":
        from compat.estimator.run_config import RunConfig  # parameter_server_strategy reads its cluster and protocol

        config = RunConfig()
        # Only the coordinator holds the strategy; the workers and ps tasks serve what it sends them.
        return strategies.parameter_server_strategy(config) if config.is_chief else None
    raise UnsupportedStrategyError(f"unknown `distribution_strategy` '{name}'; use one of {', '.join(STRATEGIES)}")


def strategy_for(config: DistributionConfig) -> tf.distribute.Strategy | None:
    """The strategy a run's DistributionConfig names. Create it before any other TensorFlow work:
    MultiWorkerMirroredStrategy sets up collective ops, which TensorFlow allows only at startup."""
    return make_strategy(config.distribution_strategy, config.num_gpus)


def is_chief_task() -> bool:
    """Whether this process is the TF_CONFIG cluster's chief (or trains alone): the one that writes. A cluster
    that `check_cluster` let through without a chief runs a strategy, and is led by worker 0."""
    return tf_config.this_process(distributed=True).is_chief


def task_name() -> str:
    """This process's TF_CONFIG task, as `worker 1`; `chief` when it trains alone."""
    place = tf_config.this_process(distributed=True)
    return f"{place.task_type} {place.task_id}"


def check_cluster(mode: str, strategy: str = "off") -> None:
    """Refuses, before anything is written, a TF_CONFIG that `mode` and `strategy` (a
    `distribution_strategy`) cannot run: any cluster outside `mode=estimator`, ps tasks without
    `distribution_strategy=parameter_server` or that strategy without them, or TF_CONFIG that does not parse."""
    try:  # under a strategy a cluster of workers only is led by worker 0, as in TF 2.15
        cluster = tf_config.this_process(distributed=strategy != "off").cluster_spec.as_dict()
    except ValueError as error:
        raise UnsupportedStrategyError(f"TF_CONFIG: {error}") from error
    if mode == "estimator" and "ps" in cluster and strategy == "parameter_server":
        strategies.require_workers(cluster)
    if mode == "estimator" and ("ps" in cluster) != (strategy == "parameter_server"):
        raise UnsupportedStrategyError(
            "TF_CONFIG names ps tasks: start every task with `distribution_strategy=parameter_server`, or use "
            "a cluster without them (`multi_worker_mirrored`: a chief, workers and an evaluator)"
            if "ps" in cluster
            else "`distribution_strategy=parameter_server` needs a TF_CONFIG cluster with ps tasks (a chief, "
            "workers, ps tasks and optionally an evaluator), every task started with the same command"
        )
    if mode != "estimator" and set(cluster) - {"chief"}:
        raise UnsupportedStrategyError(
            f"TF_CONFIG names a cluster ({', '.join(sorted(cluster))}), but `mode={mode}` runs on one machine: "
            "run every task with `mode=estimator`, or unset TF_CONFIG"
        )
