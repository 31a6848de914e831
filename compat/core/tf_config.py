"""TF_CONFIG, the cluster a process belongs to: read and checked as TF 2.15's RunConfig did.

`compat.estimator.RunConfig` takes its cluster properties from here, and so does
`compat.modes.distribution`, which must know whether this process is the chief (and
refuse a cluster its mode cannot run) without importing the Estimator package.
Three shapes:

- no `cluster`: one process training alone (a worker, index 0, the chief);
- a cluster coordinated by a `chief` job (TF 2's spelling); an `evaluator`
  task stands outside it;
- a cluster coordinated by a `master` job (TF 1's spelling), which takes no
  `chief` and no evaluator.
"""

from __future__ import annotations

import dataclasses
import json
import os

import tensorflow as tf

from compat.core.errors import UserError

logging = tf.get_logger()  # TensorFlow's logger, as TF 2.15's Estimator logged (docs/estimator.md)

GRPC = "grpc://"
LOCAL_MASTER = ""  # an in-process session: no address to reach
_FROM_TF_CONFIG = "Note that these values may be coming from the TF_CONFIG environment variable."


class TaskType:
    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


class TFConfigNotJSONError(UserError, json.JSONDecodeError):
    """TF_CONFIG is set but is not JSON: the JSONDecodeError TF 2.15 raised (a ValueError), naming the variable."""


def read() -> dict:
    """TF_CONFIG as a dict; an unset variable is an empty one. Set but not a JSON object is an error, not a
    silent one-machine run (TF 2.15 refused "" too)."""
    text = os.environ.get("TF_CONFIG")
    if text is None:
        return {}
    try:
        tf_config = json.loads(text)
    except json.JSONDecodeError as error:
        raise TFConfigNotJSONError(
            f"TF_CONFIG is not valid JSON ({error.msg}): {text!r}", error.doc, error.pos
        ) from error
    if not isinstance(tf_config, dict):
        raise ValueError(f"TF_CONFIG must be a JSON object, given {text!r}")
    if tf_config:
        logging.info("TF_CONFIG environment variable: %s", tf_config)
    return tf_config


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where this process stands: everything RunConfig derives from TF_CONFIG's cluster and task."""

    cluster_spec: tf.train.ClusterSpec
    task_type: str
    task_id: int
    is_chief: bool
    master: str
    evaluation_master: str
    num_ps_replicas: int
    num_worker_replicas: int
    global_id_in_cluster: int | None


def _task_of(tf_config: dict) -> dict:
    task = tf_config.get("task") or {}
    if not isinstance(task, dict):
        raise ValueError(f'TF_CONFIG\'s "task" must be an object with "type" and "index", given {task!r}')
    return task


def _alone(tf_config: dict) -> Placement:
    """No cluster: this process trains by itself, so it can only be worker 0, and it is the chief."""
    task = _task_of(tf_config)
    task_type = task.get("type", TaskType.WORKER)
    task_id = int(task.get("index", 0))
    if task_type != TaskType.WORKER:
        raise ValueError(
            'If "cluster" is not set in TF_CONFIG, task type must be WORKER. '
            f"Given {task_type!r}: add the cluster it belongs to, or drop the task."
        )
    if task_id != 0:
        raise ValueError(
            'If "cluster" is not set in TF_CONFIG, task index must be 0. '
            f"Given {task_id}: add the cluster it belongs to, or drop the task."
        )
    return Placement(
        cluster_spec=tf.train.ClusterSpec({}),
        task_type=task_type,
        task_id=task_id,
        is_chief=True,
        master=tf_config.get("session_master", LOCAL_MASTER),
        evaluation_master=tf_config.get("eval_session_master", LOCAL_MASTER),
        num_ps_replicas=0,
        num_worker_replicas=1,
        global_id_in_cluster=0,
    )


def _checked_task(
    cluster_spec: tf.train.ClusterSpec, task: dict, coordinator: str, worker_0_may_lead: bool = False
) -> tuple[str, int]:
    """This process's (type, index), checked against a cluster led by one `coordinator` (chief or master), or
    with `worker_0_may_lead`, by worker 0 where the cluster has no coordinator.

    An evaluator's index has no upper bound: it need not be listed in the cluster.
    """
    led_by_worker_0 = worker_0_may_lead and TaskType.WORKER in cluster_spec.jobs
    if coordinator not in cluster_spec.jobs and not led_by_worker_0:
        raise ValueError(f'If "cluster" is set in TF_CONFIG, it must have one "{coordinator}" node.')
    if coordinator in cluster_spec.jobs and len(cluster_spec.job_tasks(coordinator)) > 1:
        raise ValueError(f'The "cluster" in TF_CONFIG must have only one "{coordinator}" node.')
    task_type, task_id = task.get("type"), task.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == TaskType.EVALUATOR:
        return task_type, task_id
    if task_type not in cluster_spec.jobs:
        raise ValueError(
            f"{task_type} is not a valid task_type in the cluster_spec: {cluster_spec.as_dict()}. {_FROM_TF_CONFIG}"
        )
    if task_id >= len(cluster_spec.job_tasks(task_type)):
        raise ValueError(
            f"{task_id} is not a valid task_id for task_type {task_type} in the cluster_spec: "
            f"{cluster_spec.as_dict()}. {_FROM_TF_CONFIG}"
        )
    return task_type, task_id


def _session_master(cluster_spec: tf.train.ClusterSpec, task_type: str, task_id: int, tf_config: dict) -> str:
    """TF_CONFIG's `session_master` if given; a one-task cluster runs in process (an RPC to itself would
    only cost time); otherwise this task's own server (between-graph replication)."""
    if "session_master" in tf_config:
        return tf_config["session_master"]
    jobs = cluster_spec.jobs
    if len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1:
        return LOCAL_MASTER
    return GRPC + cluster_spec.task_address(task_type, task_id)


def _global_id(cluster_spec: tf.train.ClusterSpec, task_type: str, task_id: int, coordinator: str) -> int:
    """A number unique across the cluster's tasks: the coordinator is 0, then every other job but `ps` in
    name order (an `evaluator` job listed in the cluster takes numbers too), and `ps` last."""
    jobs = [coordinator] if coordinator in cluster_spec.jobs else []
    jobs += sorted(job for job in cluster_spec.jobs if job not in (coordinator, TaskType.PS))
    if TaskType.PS in cluster_spec.jobs:
        jobs.append(TaskType.PS)
    first = 0
    for job in jobs:
        if job == task_type:
            return first + task_id
        first += len(cluster_spec.job_tasks(job))
    raise ValueError(f"task type {task_type!r} is not in the cluster {cluster_spec.as_dict()}")


def _in_cluster(
    cluster_spec: tf.train.ClusterSpec, task_type: str, task_id: int, tf_config: dict, coordinator: str
) -> Placement:
    """A training task (not an evaluator) of a cluster led by `coordinator`."""
    jobs = cluster_spec.as_dict()
    return Placement(
        cluster_spec=cluster_spec,
        task_type=task_type,
        task_id=task_id,
        is_chief=_leads(cluster_spec, task_type, task_id, coordinator),
        master=_session_master(cluster_spec, task_type, task_id, tf_config),
        evaluation_master=LOCAL_MASTER,
        num_ps_replicas=len(jobs.get(TaskType.PS, [])),
        num_worker_replicas=len(jobs.get(TaskType.WORKER, [])) + len(jobs.get(coordinator, [])),
        global_id_in_cluster=_global_id(cluster_spec, task_type, task_id, coordinator),
    )


def _leads(cluster_spec: tf.train.ClusterSpec, task_type: str, task_id: int, coordinator: str) -> bool:
    """The coordinator leads; in a cluster of workers only (a distribution strategy's), worker 0 does."""
    if coordinator in cluster_spec.jobs:
        return task_type == coordinator
    return task_type == TaskType.WORKER and task_id == 0


def _led_by_chief(cluster_spec: tf.train.ClusterSpec, tf_config: dict, distributed: bool) -> Placement:
    task_type, task_id = _checked_task(cluster_spec, _task_of(tf_config), TaskType.CHIEF, distributed)
    if task_type == TaskType.EVALUATOR:
        # The evaluator only reads checkpoints: it joins no training session and counts in no replica total.
        return Placement(
            cluster_spec=tf.train.ClusterSpec({}),
            task_type=task_type,
            task_id=task_id,
            is_chief=False,
            master=LOCAL_MASTER,
            evaluation_master=tf_config.get("eval_session_master", LOCAL_MASTER),
            num_ps_replicas=0,
            num_worker_replicas=0,
            global_id_in_cluster=None,
        )
    return _in_cluster(cluster_spec, task_type, task_id, tf_config, TaskType.CHIEF)


def _led_by_master(cluster_spec: tf.train.ClusterSpec, tf_config: dict) -> Placement:
    """TF 1's cluster: `master` plays the chief. With a `chief` job too it would be unclear which one leads,
    and TF 1 had no separate evaluator task, so TF 2.15 refused both."""
    if TaskType.CHIEF in cluster_spec.jobs:
        raise ValueError(
            "If `master` node exists in `cluster`, job `chief` is not supported. "
            "Name the coordinator either `chief` or `master`, not both."
        )
    task_type, task_id = _checked_task(cluster_spec, _task_of(tf_config), TaskType.MASTER)
    if task_type == TaskType.EVALUATOR:
        raise ValueError(
            "If `master` node exists in `cluster`, task_type `evaluator` is not supported. "
            "Rename the `master` job to `chief` to run an evaluator."
        )
    return _in_cluster(cluster_spec, task_type, task_id, tf_config, TaskType.MASTER)


def placement(tf_config: dict, distributed: bool = False) -> Placement:
    """Where this process stands in the cluster `tf_config` (as `read` returns it) describes, checked as
    TF 2.15's RunConfig checked it: a ValueError names what is wrong.

    Args:
      tf_config: TF_CONFIG, as `read` returns it.
      distributed: whether the process trains under a distribution strategy (`RunConfig(train_distribute=...)`):
        then, as TF 2.15's distribute coordinator had it, a cluster of workers only is led by worker 0
        (TensorFlow's "Multi-worker training with Estimator" tutorial); without one, a cluster needs a chief.

    Raises:
      ValueError: a cluster without its coordinator, or a task that is not in it.
    """
    cluster_spec = tf.train.ClusterSpec(tf_config.get("cluster") or {})
    if not cluster_spec.jobs:
        return _alone(tf_config)
    if TaskType.MASTER in cluster_spec.jobs:
        return _led_by_master(cluster_spec, tf_config)
    return _led_by_chief(cluster_spec, tf_config, distributed)


def this_process(distributed: bool = False) -> Placement:
    """Where this process stands, from its TF_CONFIG: `placement(read(), distributed)`."""
    return placement(read(), distributed)
