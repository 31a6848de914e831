"""tf.estimator.tpu's configuration: InputPipelineConfig, TPUConfig and the TPU RunConfig, as TF 2.15.

Off a TPU (`TPUEstimator(use_tpu=False)`, how TPU teams ran their programs on
CPUs and GPUs) these only carry settings: `tpu_config` is kept and reported,
and everything else is the Estimator's RunConfig.
"""

from __future__ import annotations

import collections
from typing import Any

from compat.estimator.run_config import RunConfig as _RunConfig


class InputPipelineConfig:
    """How a TPU job feeds its cores (the values TF 2.15 named)."""

    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


def _positive_int(value: Any, name: str) -> None:
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
        if not isinstance(iterations_per_loop, str):
            _positive_int(iterations_per_loop, "iterations_per_loop")
        if num_shards is not None:
            _positive_int(num_shards, "TPUConfig num_shards")
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
            _positive_int(initial_infeed_sleep_secs, "TPUConfig initial_infeed_sleep_secs")
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
