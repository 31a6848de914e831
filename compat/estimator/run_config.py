"""RunConfig: where and how often an Estimator saves, summarises and logs, and its place in a cluster.

TF 2.15's defaults and checks: checkpoints every 600 s unless
`save_checkpoints_steps` (giving both is an error, both None turns checkpoints
off), `keep_checkpoint_max=5`, `save_summary_steps=100`,
`log_step_count_steps=100`. The cluster properties (`task_type`, `task_id`,
`is_chief`, `num_worker_replicas`, `num_ps_replicas`, `cluster_spec`,
`master`, `global_id_in_cluster`, `session_config`'s device filters) come
from the `TF_CONFIG` environment variable when it names a cluster, with the
values TF 2.15 gave them.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import tensorflow as tf
from absl import logging

_DEFAULT_SAVE_SECS = 600
_UNSET = object()  # tells "not given" from an explicit None, which turns checkpoints off
_GRPC = "grpc://"


class TaskType:
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


# The arguments `replace` accepts, in TF 2.15's order.
_REPLACEABLE = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                "save_checkpoints_secs", "session_config", "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
                "log_step_count_steps", "train_distribute", "device_fn", "protocol", "eval_distribute",
                "experimental_distribute", "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
                "checkpoint_save_graph_def")


def _tf_config() -> dict:
    text = os.environ.get("TF_CONFIG")
    if not text:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}): {text!r}") from error


def _global_id(cluster: dict, task_type: str, task_id: int) -> int:
    """The chief first, then the workers, then the other jobs in name order (evaluators have none)."""
    order = [job for job in (TaskType.CHIEF, TaskType.WORKER) if job in cluster]
    order += sorted(job for job in cluster if job not in (TaskType.CHIEF, TaskType.WORKER, TaskType.EVALUATOR))
    global_id = 0
    for job in order:
        if job == task_type:
            return global_id + task_id
        global_id += len(cluster[job])
    raise ValueError(f"TF_CONFIG's task type '{task_type}' is not in its cluster {sorted(cluster)}")


def _cluster_session_config(task_type: str, task_id: int) -> tf.compat.v1.ConfigProto:
    filters = {TaskType.WORKER: ["/job:ps", f"/job:worker/task:{task_id}"],
               TaskType.CHIEF: ["/job:ps", "/job:chief"],
               TaskType.MASTER: ["/job:ps", "/job:master"],
               TaskType.PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"]}.get(task_type, [])
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True, device_filters=filters)
    config.graph_options.rewrite_options.meta_optimizer_iterations = 1  # ONE
    return config


class RunConfig:
    """tf.estimator.RunConfig."""

    def __init__(
        self,
        model_dir: str | None = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int = 100,
        save_checkpoints_steps: Any = _UNSET,
        save_checkpoints_secs: Any = _UNSET,
        session_config: tf.compat.v1.ConfigProto | None = None,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_every_n_hours: float = 10000,
        log_step_count_steps: int = 100,
        train_distribute: Any = None,
        device_fn: Any = None,
        protocol: str | None = None,
        eval_distribute: Any = None,
        experimental_distribute: Any = None,
        experimental_max_worker_delay_secs: int | None = None,
        session_creation_timeout_secs: int = 7200,
        checkpoint_save_graph_def: bool = True,
    ):
        if save_checkpoints_steps is _UNSET and save_checkpoints_secs is _UNSET:
            save_checkpoints_steps, save_checkpoints_secs = None, _DEFAULT_SAVE_SECS
        save_checkpoints_steps = None if save_checkpoints_steps is _UNSET else save_checkpoints_steps
        save_checkpoints_secs = None if save_checkpoints_secs is _UNSET else save_checkpoints_secs
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.")
        checks = [
            (save_summary_steps is None or save_summary_steps >= 0, "save_summary_steps should be >= 0"),
            (save_checkpoints_steps is None or save_checkpoints_steps >= 0, "save_checkpoints_steps should be >= 0"),
            (save_checkpoints_secs is None or save_checkpoints_secs >= 0, "save_checkpoints_secs should be >= 0"),
            (keep_checkpoint_max is None or keep_checkpoint_max >= 0, "keep_checkpoint_max should be >= 0"),
            (keep_checkpoint_every_n_hours is None or keep_checkpoint_every_n_hours > 0,
             "keep_checkpoint_every_n_hours should be > 0"),
            (log_step_count_steps is None or log_step_count_steps >= 0, "log_step_count_steps should be >= 0"),
            (tf_random_seed is None or isinstance(tf_random_seed, int), "tf_random_seed must be integer."),
            (session_config is None or isinstance(session_config, tf.compat.v1.ConfigProto),
             "session_config must be instance of ConfigProto"),
            (device_fn is None or callable(device_fn), "device_fn must be callable"),
            (protocol in (None, "grpc", "grpc+verbs"), f"protocol should be grpc or grpc+verbs, given {protocol!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        self._model_dir = model_dir
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._train_distribute = train_distribute
        self._device_fn = device_fn
        self._protocol = protocol
        self._eval_distribute = eval_distribute
        self._experimental_distribute = experimental_distribute
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._checkpoint_save_graph_def = checkpoint_save_graph_def
        self._init_cluster(_tf_config())

    def _init_cluster(self, tf_config: dict) -> None:
        cluster = tf_config.get("cluster") or {}
        task = tf_config.get("task") or {}
        task_type, task_id = task.get("type"), int(task.get("index", 0))
        config_model_dir = tf_config.get("model_dir")
        if config_model_dir and self._model_dir and config_model_dir != self._model_dir:
            raise ValueError(f"model_dir in TF_CONFIG ({config_model_dir}) and in RunConfig ({self._model_dir}) differ")
        self._model_dir = self._model_dir or config_model_dir
        self._cluster = cluster
        if task_type == TaskType.EVALUATOR:  # an evaluator stands outside the training cluster
            self._task_type, self._task_id, self._is_chief = task_type, task_id, False
            self._cluster_spec = tf.train.ClusterSpec({})
            self._master, self._num_ps_replicas, self._num_worker_replicas, self._global_id = "", 0, 0, None
            return
        if not cluster:
            self._task_type, self._task_id, self._is_chief = task_type or TaskType.WORKER, task_id, True
            self._cluster_spec = tf.train.ClusterSpec({})
            self._master, self._num_ps_replicas, self._num_worker_replicas, self._global_id = "", 0, 1, 0
            return
        if TaskType.CHIEF not in cluster or len(cluster[TaskType.CHIEF]) != 1:
            raise ValueError('If "cluster" is set in TF_CONFIG, it must have one "chief" node.')
        if not task_type:
            raise ValueError('If "cluster" is set in TF_CONFIG, "task" must say its "type" and "index".')
        if task_type not in cluster or task_id >= len(cluster[task_type]):
            raise ValueError(f"TF_CONFIG's task {task_type}:{task_id} is not in its cluster {cluster}")
        self._task_type, self._task_id = task_type, task_id
        self._is_chief = task_type == TaskType.CHIEF
        self._cluster_spec = tf.train.ClusterSpec(cluster)
        self._master = _GRPC + cluster[task_type][task_id]
        self._num_ps_replicas = len(cluster.get(TaskType.PS, []))
        self._num_worker_replicas = len(cluster.get(TaskType.CHIEF, [])) + len(cluster.get(TaskType.WORKER, []))
        self._global_id = _global_id(cluster, task_type, task_id)
        if self._session_config is None:
            self._session_config = _cluster_session_config(task_type, task_id)

    # -- the settings, read-only as in TF 2.15 -----------------------------------
    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    train_distribute = property(lambda self: self._train_distribute)
    eval_distribute = property(lambda self: self._eval_distribute)
    experimental_distribute = property(lambda self: self._experimental_distribute)
    device_fn = property(lambda self: self._device_fn)
    protocol = property(lambda self: self._protocol)
    experimental_max_worker_delay_secs = property(lambda self: self._experimental_max_worker_delay_secs)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)
    checkpoint_save_graph_def = property(lambda self: self._checkpoint_save_graph_def)
    # -- the cluster, from TF_CONFIG -------------------------------------------
    cluster_spec = property(lambda self: self._cluster_spec)
    task_type = property(lambda self: self._task_type)
    task_id = property(lambda self: self._task_id)
    is_chief = property(lambda self: self._is_chief)
    master = property(lambda self: self._master)
    evaluation_master = property(lambda self: "")
    num_ps_replicas = property(lambda self: self._num_ps_replicas)
    num_worker_replicas = property(lambda self: self._num_worker_replicas)
    global_id_in_cluster = property(lambda self: self._global_id)
    service = property(lambda self: None)

    @property
    def saves_checkpoints(self) -> bool:
        return self.save_checkpoints_steps is not None or self.save_checkpoints_secs is not None

    def _arguments(self) -> dict:
        return {name: getattr(self, f"_{name}") for name in _REPLACEABLE}

    def replace(self, **changes: Any) -> "RunConfig":
        """A new RunConfig with `changes`; the other settings kept. As TF 2.15, setting one checkpoint
        cadence clears the other, and a name RunConfig does not take raises ValueError."""
        for name in changes:
            if name not in _REPLACEABLE:
                raise ValueError(f"Replacing {name} is not supported. Allowed properties are {list(_REPLACEABLE)}.")
        arguments = self._arguments()
        if "save_checkpoints_steps" in changes and "save_checkpoints_secs" not in changes:
            arguments["save_checkpoints_secs"] = None
        if "save_checkpoints_secs" in changes and "save_checkpoints_steps" not in changes:
            arguments["save_checkpoints_steps"] = None
        arguments.update(changes)
        return RunConfig(**arguments)

    def with_model_dir(self, model_dir: str | None) -> "RunConfig":
        """This config with its model_dir settled: given (here or in the config), or a new temporary folder."""
        if model_dir and self.model_dir and os.path.abspath(model_dir) != os.path.abspath(self.model_dir):
            raise ValueError("`model_dir` are set both in constructor and `RunConfig`, but with different values. "
                             f"In constructor: '{model_dir}', in `RunConfig`: '{self.model_dir}' ")
        chosen = model_dir or self.model_dir
        if chosen is None:
            chosen = tempfile.mkdtemp()
            logging.warning("Using temporary folder as model directory: %s", chosen)
        config = self.replace(model_dir=os.fspath(chosen))
        if self._session_config is not None and config._session_config is None:
            config._session_config = self._session_config
        return config
