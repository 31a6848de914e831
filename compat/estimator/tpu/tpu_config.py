"""tf.estimator.tpu's configuration: InputPipelineConfig, TPUConfig and the TPU RunConfig, as TF 2.15.

Off a TPU (`TPUEstimator(use_tpu=False)`, how TPU teams ran their programs on
CPUs and GPUs) these only carry settings: `tpu_config` is kept and reported,
and everything else is the Estimator's RunConfig.
"""

from __future__ import annotations

import collections
import re
from typing import Any

import tensorflow as tf

from compat.core import tf_config as tf_config_reader
from compat.estimator.run_config import RunConfig as _RunConfig

# `<N>` steps, or `<N>s`, `<N>m`, `<N>h` of time, N a positive integer (TF 2.15's accepted forms)
_ITERATIONS_PER_LOOP = re.compile(r"^(?P<value>[1-9][0-9]*)(?P<suffix>[smh]?)$")
_SECONDS_PER = {"s": 1, "m": 60, "h": 3600}


class IterationsPerLoop(collections.namedtuple("IterationsPerLoop", ["value", "unit"])):
    """`iterations_per_loop` read: `value` steps (`unit` "count") or seconds (`unit` "seconds")."""


def parse_iterations_per_loop(iterations_per_loop: Any) -> IterationsPerLoop:
    """`iterations_per_loop` (2, "300s", "60m", "1h") as TF 2.15 read it.

    Raises:
      ValueError: neither a positive integer nor `<N><s|m|h>`, with TF 2.15's message.
    """
    match = _ITERATIONS_PER_LOOP.match(str(iterations_per_loop))
    if match is None or isinstance(iterations_per_loop, bool):
        raise ValueError(
            "Invalid TPUConfig `iterations_per_loop` value. Value must be positive integer value or time-based "
            "value `<N><s|m|h>` where <N> is any positive integer and `s`, `m`, `h` are unit of time in seconds, "
            "minutes, hours respectively. Examples of valid values: `3600s`, `60m`, `1h`. "
            f"Given: {iterations_per_loop!r}"
        )
    suffix = match.group("suffix")
    value = int(match.group("value")) * _SECONDS_PER.get(suffix, 1)
    return IterationsPerLoop(value, "seconds" if suffix else "count")


def _tpu_job_name_from_tf_config() -> str | None:
    """TF_CONFIG's `service.tpu_worker_job_name`, where a cluster manager named the TPU job (TF 2.15 read it)."""
    try:
        tf_config = tf_config_reader.read()
    except ValueError:
        return None  # RunConfig names what is wrong with TF_CONFIG
    name = (tf_config.get("service") or {}).get("tpu_worker_job_name")
    if name:
        tf.compat.v1.logging.info("Load TPU job name from TF_CONFIG: %s", name)
    return name


class InputPipelineConfig:
    """How a TPU job feeds its cores (the values TF 2.15 named)."""

    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


def check_positive_integer(value: Any, name: str) -> None:
    """TF 2.15's check of a TPU setting or argument: `value` a positive int, else ValueError naming `name`."""
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be positive integer. You passed {value}")


class TPUConfig(
    collections.namedtuple(
        "TPUConfig",
        [
            "iterations_per_loop",
            "num_shards",
            "num_cores_per_replica",
            "per_host_input_for_training",
            "tpu_job_name",
            "initial_infeed_sleep_secs",
            "input_partition_dims",
            "eval_training_input_configuration",
            "experimental_host_call_every_n_steps",
            "experimental_allow_per_host_v2_parallel_get_next",
            "experimental_feed_hook",
        ],
    )
):
    """TPU settings of a RunConfig (tf.estimator.tpu.TPUConfig), with TF 2.15's checks."""

    def __new__(
        cls,
        iterations_per_loop: Any = 2,
        num_shards: int | None = None,
        num_cores_per_replica: int | None = None,
        per_host_input_for_training: Any = True,
        tpu_job_name: str | None = None,
        initial_infeed_sleep_secs: int | None = None,
        input_partition_dims: Any = None,
        eval_training_input_configuration: int = InputPipelineConfig.PER_HOST_V1,
        experimental_host_call_every_n_steps: int = 1,
        experimental_allow_per_host_v2_parallel_get_next: bool = False,
        experimental_feed_hook: Any = None,
    ):
        parse_iterations_per_loop(iterations_per_loop)
        if num_shards is not None:
            check_positive_integer(num_shards, "TPUConfig num_shards")
        if input_partition_dims is not None:
            if len(input_partition_dims) not in (1, 2):
                raise ValueError("input_partition_dims must be a list/tuple with one or two elements.")
            if per_host_input_for_training is not InputPipelineConfig.PER_HOST_V2:
                raise ValueError("input_partition_dims is only supported in PER_HOST_V2 mode.")
            if num_cores_per_replica is None:
                raise ValueError("input_partition_dims requires setting num_cores_per_replica.")
        if num_cores_per_replica is not None and num_cores_per_replica not in (1, 2, 4, 8, 16, 32, 64, 128):
            raise ValueError(f"num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; got {num_cores_per_replica}")
        if eval_training_input_configuration not in (InputPipelineConfig.PER_HOST_V1, InputPipelineConfig.SLICED):
            raise ValueError(
                "eval_training_input_configuration must be PER_HOST_V1 or SLICED; got "
                f"{eval_training_input_configuration}"
            )
        if per_host_input_for_training is False:
            per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
        elif per_host_input_for_training is True:
            per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
        if initial_infeed_sleep_secs:
            check_positive_integer(initial_infeed_sleep_secs, "TPUConfig initial_infeed_sleep_secs")
        tpu_job_name = tpu_job_name or _tpu_job_name_from_tf_config()
        return super().__new__(
            cls,
            iterations_per_loop,
            num_shards,
            num_cores_per_replica,
            per_host_input_for_training,
            tpu_job_name,
            initial_infeed_sleep_secs,
            input_partition_dims,
            eval_training_input_configuration,
            experimental_host_call_every_n_steps,
            experimental_allow_per_host_v2_parallel_get_next,
            experimental_feed_hook,
        )


class RunConfig(_RunConfig):
    """A RunConfig with a `tpu_config` (tf.estimator.tpu.RunConfig); `master` and `evaluation_master` may be set."""

    _tpu_config: Any

    def __init__(
        self,
        tpu_config: TPUConfig | None = None,
        evaluation_master: str | None = None,
        master: str | None = None,
        cluster: Any = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # TPUs run in-graph: no device filters for a TF_CONFIG cluster (TF 2.15 left session_config None)
        self._session_config = kwargs.get("session_config")
        if master is not None and cluster is not None:
            raise ValueError("Both master and cluster are set.")
        self._tpu_config = tpu_config or TPUConfig()
        self._cluster_resolver = cluster
        if master is not None:
            self._master = master
        elif cluster:
            self._master = cluster.master()
        if evaluation_master is not None:
            self._evaluation_master = evaluation_master
        elif not self._evaluation_master and self.task_type != "evaluator":
            self._evaluation_master = self._master
        if cluster:
            self._cluster_spec = cluster.cluster_spec()
            if self._session_config is None:
                self._session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True, isolate_session_state=True)
            if self._session_config.HasField("cluster_def"):
                raise ValueError("You cannot provide a ClusterResolver and session_config.cluster_def.")
            if self._cluster_spec:
                self._session_config.cluster_def.CopyFrom(self._cluster_spec.as_cluster_def())

    @property
    def tpu_config(self) -> TPUConfig:
        return self._tpu_config

    @property
    def cluster(self) -> Any:
        return self._cluster_resolver

    def replace(self, **changes: Any) -> Any:
        tpu_config = changes.pop("tpu_config", None)
        config: Any = super().replace(**changes)
        if tpu_config is not None:
            config._tpu_config = tpu_config
        return config
