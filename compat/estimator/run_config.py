"""RunConfig: where and how often an Estimator saves, summarises and logs, and its place in a cluster.

TF 2.15's defaults and checks: checkpoints every 600 s unless
`save_checkpoints_steps` (giving both is an error, both None turns checkpoints
off), `keep_checkpoint_max=5`, `save_summary_steps=100`,
`log_step_count_steps=100`. A value out of range raises ValueError, in the
constructor and in `replace()`, with TF 2.15's message.

The cluster properties (`task_type`, `task_id`, `is_chief`, `master`,
`evaluation_master`, `num_worker_replicas`, `num_ps_replicas`,
`cluster_spec`, `global_id_in_cluster`, the default `session_config`'s device
filters) come from the `TF_CONFIG` environment variable, read once, when the
config is built, with the values TF 2.15 gave them (`compat/core/tf_config.py`
reads and checks it: no cluster, a cluster led by a `chief`, or by a `master`).

TF_CONFIG may also carry `session_master`, `eval_session_master`, `model_dir`
and `service` (a dict handed through as `config.service`).

RunConfig describes a cluster; it does not decide whether this project can
train on it. `compat.modes.distribution.check_cluster` and
`compat.estimator.training` refuse the shapes that do not run here (`ps`
jobs, for one).

One deliberate difference from TF 2.15: given a `train_distribute` strategy
and a cluster, TF 2.15 left the cluster properties at their one-machine
values for its distribute coordinator to fill in later. This project has no
coordinator: the Keras engine runs MultiWorkerMirroredStrategy in every task,
and each task needs its own `is_chief` and `task_id` from the start, so they
come from TF_CONFIG whatever the strategy.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
from collections.abc import Callable
from typing import Any

import tensorflow as tf

from compat.core import tf_config as cluster
from compat.core.tf_config import TaskType

_DEFAULT_SAVE_SECS = 600
_UNSET = object()  # tells "not given" from an explicit None, which turns checkpoints off


# The arguments `replace` accepts, in TF 2.15's order.
_REPLACEABLE = (
    "model_dir",
    "tf_random_seed",
    "save_summary_steps",
    "save_checkpoints_steps",
    "save_checkpoints_secs",
    "session_config",
    "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours",
    "log_step_count_steps",
    "train_distribute",
    "device_fn",
    "protocol",
    "eval_distribute",
    "experimental_distribute",
    "experimental_max_worker_delay_secs",
    "session_creation_timeout_secs",
    "checkpoint_save_graph_def",
    "input_cache",
)

_BOTH_CADENCES = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."


# -- argument checks -------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int)


def _takes_only_op(device_fn: Any) -> bool:
    """TF 2.15 called device_fn(op): its positional parameters must be exactly `op` (a partial's bound
    ones left out), or the call would fail deep inside graph building."""
    if not callable(device_fn):
        return False
    try:
        parameters = inspect.signature(device_fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check it against
        return False
    positional = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return positional == ["op"]


# (setting, test its value must pass when it is not None, TF 2.15's message when it does not)
_RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("model_dir", lambda value: value != "", "model_dir should be non-empty"),
    ("save_summary_steps", lambda value: value >= 0, "save_summary_steps should be >= 0"),
    ("save_checkpoints_steps", lambda value: value >= 0, "save_checkpoints_steps should be >= 0"),
    ("save_checkpoints_secs", lambda value: value >= 0, "save_checkpoints_secs should be >= 0"),
    (
        "session_config",
        lambda value: isinstance(value, tf.compat.v1.ConfigProto),
        "session_config must be instance of ConfigProto",
    ),
    ("keep_checkpoint_max", lambda value: value >= 0, "keep_checkpoint_max should be >= 0"),
    ("keep_checkpoint_every_n_hours", lambda value: value > 0, "keep_checkpoint_every_n_hours should be > 0"),
    ("log_step_count_steps", lambda value: value > 0, "log_step_count_steps should be > 0"),
    ("tf_random_seed", _is_int, "tf_random_seed must be integer."),
    ("experimental_max_worker_delay_secs", _is_int, "experimental_max_worker_delay_secs must be an integer if set."),
    ("session_creation_timeout_secs", lambda value: value > 0, "session_creation_timeout_secs should be > 0"),
    ("device_fn", _takes_only_op, 'device_fn must be callable with exactly one argument "op".'),
    ("protocol", lambda value: value in ("grpc", "grpc+verbs"), "protocol should be grpc or grpc+verbs"),
)


def _check_settings(config: RunConfig) -> None:
    """Raises ValueError for the first setting out of range; None always passes (it means "use the default"
    or "off" for each of them)."""
    for name, passes, message in _RULES:
        value = getattr(config, f"_{name}")
        if value is not None and not passes(value):
            raise ValueError(f"{message} (given {value!r})")


def _check_strategies(train_distribute: Any, eval_distribute: Any) -> None:
    """TF 2's ParameterServerStrategy drives its own coordinator and cannot run inside an Estimator; TF 2.15
    refused it by its exact class, pointing at the v1 class Estimators could use."""
    refused = tf.distribute.experimental.ParameterServerStrategy
    for strategy in (train_distribute, eval_distribute):
        if strategy is not None and type(strategy) is refused:
            raise ValueError(
                "Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for "
                "parameter server strategy with estimator."
            )


def _adopt_experimental_distribute(config: RunConfig) -> None:
    """`experimental_distribute` (a DistributeConfig) may carry the strategies instead of the arguments; the
    two ways together are ambiguous, so TF 2.15 refused them."""
    holder = config._experimental_distribute
    if holder is None:
        return
    for name in ("train_distribute", "eval_distribute"):
        carried = getattr(holder, name)  # not a DistributeConfig: the AttributeError TF 2.15 raised here
        if carried is None:
            continue
        if getattr(config, f"_{name}") is not None:
            raise ValueError(f"Either `{name}` or `experimental_distribute.{name}` can be set.")
        setattr(config, f"_{name}", carried)


# -- TF_CONFIG -------------------------------------------------------------------


def _settled_model_dir(tf_config: dict, model_dir: Any) -> str | None:
    """The constructor's model_dir, else TF_CONFIG's; giving both is fine only when they agree."""
    if model_dir is not None:
        model_dir = os.fspath(model_dir)
    # An empty string would read as "not given" below and leave a confusing None; refuse it by name.
    if model_dir == "":
        raise ValueError("model_dir should be non-empty.")
    from_tf_config = tf_config.get("model_dir")
    if from_tf_config == "":
        raise ValueError("model_dir in TF_CONFIG should be non-empty.")
    if from_tf_config:
        if model_dir and model_dir != from_tf_config:
            raise ValueError(
                "`model_dir` provided in RunConfig construct, if set, must have the same value as the "
                f'model_dir in TF_CONFIG. model_dir: {model_dir}, TF_CONFIG["model_dir"]: '
                f"{from_tf_config}. Give one of them, or the same folder to both."
            )
        tf.compat.v1.logging.info("Using model_dir in TF_CONFIG: %s", from_tf_config)
    return model_dir or from_tf_config


def _service(tf_config: dict) -> dict | None:
    """TF_CONFIG's `service`: the platform's own settings, handed through untouched; only its shape is checked."""
    service = tf_config.get("service")
    if service is not None and not isinstance(service, dict):
        raise TypeError(f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(service)}')
    return service


def _cluster_session_config(task_type: str | None, task_id: int) -> tf.compat.v1.ConfigProto | None:
    """TF 2.15's session config for a task of a between-graph cluster: each task sees only the devices it
    works with (the ps, and itself), so a session does not wait on every other task. None for an evaluator
    or a job of another name: nothing to filter for them."""
    if task_type is None:
        return None
    filters = {
        TaskType.MASTER: ["/job:ps", "/job:master"],
        TaskType.CHIEF: ["/job:ps", "/job:chief"],
        TaskType.WORKER: ["/job:ps", f"/job:worker/task:{task_id}"],
        TaskType.PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"],
    }.get(task_type)
    if filters is None:
        return None
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True, device_filters=filters)
    config.graph_options.rewrite_options.meta_optimizer_iterations = 1  # ONE
    return config


# -- RunConfig -------------------------------------------------------------------


def _save_cadence(steps: Any, secs: Any) -> tuple[int | None, float | None]:
    """(save_checkpoints_steps, save_checkpoints_secs) as TF 2.15 settled them: neither named, every
    600 s; naming one, even as None, leaves the other off; both set is an error."""
    if steps is _UNSET and secs is _UNSET:
        return None, _DEFAULT_SAVE_SECS
    steps = None if steps is _UNSET else steps
    secs = None if secs is _UNSET else secs
    if steps is not None and secs is not None:
        raise ValueError(_BOTH_CADENCES)
    return steps, secs


class RunConfig:
    """tf.estimator.RunConfig."""

    # set by _set_placement, from TF_CONFIG
    _cluster_spec: Any
    _task_type: str | None
    _task_id: int

    def __init__(
        self,
        model_dir: str | os.PathLike | None = None,
        tf_random_seed: int | None = None,
        save_summary_steps: int | None = 100,
        save_checkpoints_steps: Any = _UNSET,
        save_checkpoints_secs: Any = _UNSET,
        session_config: tf.compat.v1.ConfigProto | None = None,
        keep_checkpoint_max: int | None = 5,
        keep_checkpoint_every_n_hours: float | None = 10000,
        log_step_count_steps: int | None = 100,
        train_distribute: Any = None,
        device_fn: Callable | None = None,
        protocol: str | None = None,
        eval_distribute: Any = None,
        experimental_distribute: Any = None,
        experimental_max_worker_delay_secs: int | None = None,
        session_creation_timeout_secs: int = 7200,
        checkpoint_save_graph_def: bool = True,
        input_cache: bool | str | os.PathLike | None = None,
    ):
        save_checkpoints_steps, save_checkpoints_secs = _save_cadence(save_checkpoints_steps, save_checkpoints_secs)
        _check_strategies(train_distribute, eval_distribute)
        tf_config = cluster.read()
        self._model_dir = _settled_model_dir(tf_config, model_dir)
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
        self._input_cache = input_cache
        _check_settings(self)
        _adopt_experimental_distribute(self)
        self._service = _service(tf_config)
        self._place(tf_config)

    def _place(self, tf_config: dict) -> None:
        """This task's place in the TF_CONFIG cluster, and the session config a cluster's task runs with."""
        distributed = any(
            strategy is not None
            for strategy in (self._train_distribute, self._eval_distribute, self._experimental_distribute)
        )
        self._set_placement(cluster.placement(tf_config, distributed))
        if (
            self._train_distribute is not None
            and self._task_type == TaskType.EVALUATOR
            and "master" not in tf_config.get("cluster", {})
        ):
            # TF 2.15's distribute coordinator told an evaluator it was a chief (it evaluates alone and writes
            # the eval folders); input_fns and model_fns written for it read `config.is_chief` so.
            self._is_chief = True
        if self._session_config is None and self._cluster_spec.jobs:
            self._session_config = _cluster_session_config(self._task_type, self._task_id)

    def _set_placement(self, placement: cluster.Placement) -> None:
        # Kept as one `_name` attribute per property, as TF 2.15 held them: code written for it (and
        # subclasses) reads and sets `config._is_chief` and the like.
        for field in dataclasses.fields(placement):
            setattr(self, f"_{field.name}", getattr(placement, field.name))

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
    # Not TF 2.15's: whether the Estimator keeps its input_fns' decoded data between calls (True, the
    # default; False; or a folder to keep it in for later runs), see compat/estimator/input_cache.py.
    input_cache = property(lambda self: getattr(self, "_input_cache", None))
    # -- the cluster, from TF_CONFIG -------------------------------------------
    cluster_spec = property(lambda self: self._cluster_spec)
    task_type = property(lambda self: self._task_type)
    task_id = property(lambda self: self._task_id)
    is_chief = property(lambda self: self._is_chief)
    master = property(lambda self: self._master)
    evaluation_master = property(lambda self: self._evaluation_master)
    num_ps_replicas = property(lambda self: self._num_ps_replicas)
    num_worker_replicas = property(lambda self: self._num_worker_replicas)
    global_id_in_cluster = property(lambda self: self._global_id_in_cluster)
    service = property(lambda self: self._service)

    @property
    def saves_checkpoints(self) -> bool:
        return self.save_checkpoints_steps is not None or self.save_checkpoints_secs is not None

    def __deepcopy__(self, memo: dict) -> RunConfig:
        """A deep copy that shares the strategies: a strategy stands for devices and servers, not data, and
        MultiWorkerMirroredStrategy refuses to be deep-copied in eager mode. The copy keeps a subclass's
        type and any attribute set on the original (`Estimator.config` hands out such copies, as TF 2.15)."""
        for shared in (self._train_distribute, self._eval_distribute, self._experimental_distribute):
            if shared is not None:
                memo.setdefault(id(shared), shared)
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            setattr(copied, name, copy.deepcopy(value, memo))
        return copied

    def _copy(self) -> RunConfig:
        return copy.deepcopy(self)

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with `changes`; everything else kept, the cluster placement included (TF_CONFIG is not read
        again). Setting one checkpoint cadence to a value turns the other off; a name RunConfig does not
        take, or a value out of range, raises ValueError."""
        for name in changes:
            if name not in _REPLACEABLE:
                raise ValueError(f"Replacing {name} is not supported. Allowed properties are {list(_REPLACEABLE)}.")
        config = self._copy()
        for name, value in changes.items():
            setattr(config, f"_{name}", value)
        steps, secs = config._save_checkpoints_steps, config._save_checkpoints_secs
        if "save_checkpoints_steps" in changes and "save_checkpoints_secs" in changes:
            if steps is not None and secs is not None:
                raise ValueError(_BOTH_CADENCES)
        elif "save_checkpoints_steps" in changes and steps is not None:
            config._save_checkpoints_secs = None
        elif "save_checkpoints_secs" in changes and secs is not None:
            config._save_checkpoints_steps = None
        _check_settings(config)
        return config
