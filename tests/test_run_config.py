"""RunConfig with TF 2.15's defaults, checks, replace() and TF_CONFIG cluster properties."""

import json

import pytest
import tensorflow as tf

import compat.estimator as estimator


def test_defaults_and_checks():
    config = estimator.RunConfig()
    assert (config.save_checkpoints_secs, config.save_checkpoints_steps) == (600, None)
    assert (config.keep_checkpoint_max, config.save_summary_steps, config.log_step_count_steps) == (5, 100, 100)
    assert config.keep_checkpoint_every_n_hours == 10000 and config.session_creation_timeout_secs == 7200
    assert config.tf_random_seed is None and config.model_dir is None and config.session_config is None
    assert config.train_distribute is None and config.eval_distribute is None and config.device_fn is None
    assert config.checkpoint_save_graph_def is True and config.protocol is None
    with pytest.raises(ValueError, match="`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set"):
        estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    off = estimator.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None)
    assert not off.saves_checkpoints
    for kwargs, message in [({"save_summary_steps": -1}, "save_summary_steps should be >= 0"),
                            ({"keep_checkpoint_max": -1}, "keep_checkpoint_max should be >= 0"),
                            ({"tf_random_seed": "x"}, "tf_random_seed must be integer"),
                            ({"session_config": {"a": 1}}, "session_config must be instance of ConfigProto")]:
        with pytest.raises(ValueError, match=message):
            estimator.RunConfig(**kwargs)
    assert estimator.EvalSpec(input_fn=lambda: None).steps == 100
    assert estimator.EvalSpec(input_fn=lambda: None).throttle_secs == 600
    assert estimator.EvalSpec(input_fn=lambda: None).start_delay_secs == 120
    with pytest.raises(ValueError, match="max_steps > 0"):
        estimator.TrainSpec(input_fn=lambda: None, max_steps=0)


def test_replace_clears_the_other_cadence_and_refuses_unknown_names():
    config = estimator.RunConfig(save_checkpoints_steps=50)
    replaced = config.replace(save_checkpoints_secs=120)
    assert (replaced.save_checkpoints_steps, replaced.save_checkpoints_secs) == (None, 120)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (50, None)  # unchanged
    assert config.replace(save_checkpoints_steps=10).save_checkpoints_steps == 10
    with pytest.raises(ValueError, match="Replacing unknown_key is not supported"):
        config.replace(unknown_key=1)
    with pytest.raises(ValueError, match="Replacing is_chief is not supported"):
        config.replace(is_chief=False)


def test_without_tf_config_it_is_a_lone_chief(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    config = estimator.RunConfig()
    assert (config.is_chief, config.task_type, config.task_id) == (True, "worker", 0)
    assert (config.num_worker_replicas, config.num_ps_replicas, config.global_id_in_cluster) == (1, 0, 0)
    assert (config.master, config.evaluation_master) == ("", "")
    assert config.cluster_spec.as_dict() == {}


CLUSTER = {"chief": ["localhost:2222"], "worker": ["localhost:2223", "localhost:2224"], "ps": ["localhost:2225"]}


@pytest.mark.parametrize("task,expected", [
    ({"type": "worker", "index": 1}, (False, "worker", 1, 3, 1, "grpc://localhost:2224", 2)),
    ({"type": "chief", "index": 0}, (True, "chief", 0, 3, 1, "grpc://localhost:2222", 0)),
    ({"type": "ps", "index": 0}, (False, "ps", 0, 3, 1, "grpc://localhost:2225", 3)),
])
def test_tf_config_cluster_properties_are_tf_2_15s(monkeypatch, task, expected):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER, "task": task}))
    config = estimator.RunConfig()
    assert (config.is_chief, config.task_type, config.task_id, config.num_worker_replicas, config.num_ps_replicas,
            config.master, config.global_id_in_cluster) == expected
    assert config.cluster_spec.as_dict() == CLUSTER and config.evaluation_master == ""
    assert isinstance(config.session_config, tf.compat.v1.ConfigProto)
    assert "/job:ps" in config.session_config.device_filters


def test_an_evaluator_stands_outside_the_cluster_and_a_cluster_needs_a_chief(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}}))
    config = estimator.RunConfig()
    assert (config.is_chief, config.task_type, config.num_worker_replicas, config.num_ps_replicas) == (
        False, "evaluator", 0, 0)
    assert config.cluster_spec.as_dict() == {} and config.global_id_in_cluster is None
    # with a train_distribute strategy TF 2.15's distribute coordinator told the evaluator it was a chief,
    # and input_fns written for it read that (it evaluates alone and writes the eval folders)
    config = estimator.RunConfig(train_distribute=tf.distribute.MirroredStrategy(["/cpu:0"]))
    assert (config.is_chief, config.task_type) == (True, "evaluator")
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["localhost:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    with pytest.raises(ValueError, match='must have one "chief" node'):
        estimator.RunConfig()


# -- TF_CONFIG shapes TF 2.15 accepted, and what it derived from them ------------

def config_for(monkeypatch, tf_config, **arguments):
    """A RunConfig built while TF_CONFIG holds `tf_config` (a dict, or raw text)."""
    monkeypatch.setenv("TF_CONFIG", tf_config if isinstance(tf_config, str) else json.dumps(tf_config))
    return estimator.RunConfig(**arguments)


TF1_CLUSTER = {"master": ["m:1"], "worker": ["w:1", "w:2"], "ps": ["p:1", "p:2"]}


@pytest.mark.parametrize("task,expected", [
    # (type, index) -> (is_chief, master, global id, device filters of the default session config)
    (("master", 0), (True, "grpc://m:1", 0, ["/job:ps", "/job:master"])),
    (("worker", 1), (False, "grpc://w:2", 2, ["/job:ps", "/job:worker/task:1"])),
    (("ps", 1), (False, "grpc://p:2", 4, ["/job:ps", "/job:worker", "/job:chief", "/job:master"])),
])
def test_a_tf1_cluster_led_by_master_works_like_one_led_by_chief(monkeypatch, task, expected):
    config = config_for(monkeypatch, {"cluster": TF1_CLUSTER, "task": {"type": task[0], "index": task[1]}})
    assert (config.task_type, config.task_id) == task
    assert (config.is_chief, config.master, config.global_id_in_cluster,
            list(config.session_config.device_filters)) == expected
    assert (config.num_worker_replicas, config.num_ps_replicas) == (3, 2)  # the master counts as a worker
    assert config.cluster_spec.as_dict() == TF1_CLUSTER and config.evaluation_master == ""
    assert config.session_config.allow_soft_placement


def test_a_one_task_cluster_runs_its_session_in_process(monkeypatch):
    for job in ("master", "chief"):
        config = config_for(monkeypatch, {"cluster": {job: ["h:1"]}, "task": {"type": job, "index": 0}})
        assert (config.master, config.is_chief, config.num_worker_replicas) == ("", True, 1)


@pytest.mark.parametrize("tf_config,message", [
    ({"cluster": {"master": ["m:1"], "chief": ["c:1"]}, "task": {"type": "master", "index": 0}},
     "If `master` node exists in `cluster`, job `chief` is not supported."),
    ({"cluster": {"master": ["m:1"], "worker": ["w:1"]}, "task": {"type": "evaluator", "index": 0}},
     "If `master` node exists in `cluster`, task_type `evaluator` is not supported."),
    ({"cluster": {"master": ["m:1", "m:2"]}, "task": {"type": "master", "index": 0}},
     'The "cluster" in TF_CONFIG must have only one "master" node.'),
    ({"cluster": {"chief": ["c:1", "c:2"]}, "task": {"type": "chief", "index": 0}},
     'The "cluster" in TF_CONFIG must have only one "chief" node.'),
    ({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 0}},
     'If "cluster" is set in TF_CONFIG, it must have one "chief" node.'),
    ({"cluster": {"chief": ["c:1"]}, "task": {"index": 0}}, 'If "cluster" is set in TF_CONFIG, task type must be set.'),
    ({"cluster": {"master": ["m:1"]}}, 'If "cluster" is set in TF_CONFIG, task type must be set.'),
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief"}},
     'If "cluster" is set in TF_CONFIG, task index must be set.'),
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief", "index": -1}},
     "Task index must be non-negative number."),
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "evaluator", "index": -1}},
     "Task index must be non-negative number."),
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief", "index": 1}}, "1 is not a valid task_id"),
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "worker", "index": 0}}, "worker is not a valid task_type"),
    ({"task": {"type": "chief", "index": 0}}, 'If "cluster" is not set in TF_CONFIG, task type must be WORKER.'),
    ({"task": {"type": "worker", "index": 2}}, 'If "cluster" is not set in TF_CONFIG, task index must be 0.'),
    ("", "TF_CONFIG is not valid JSON"),
    ("[1]", "TF_CONFIG must be a JSON object"),
])
def test_a_task_the_cluster_cannot_hold_is_refused_with_tf_2_15s_words(monkeypatch, tf_config, message):
    with pytest.raises(ValueError) as error:
        config_for(monkeypatch, tf_config)
    assert message in str(error.value)


def test_an_evaluator_may_have_any_index_and_takes_eval_session_master(monkeypatch):
    config = config_for(monkeypatch, {"cluster": {"chief": ["c:1"]}, "task": {"type": "evaluator", "index": 7},
                                      "session_master": "ignored", "eval_session_master": "grpc://eval:1"})
    assert (config.task_id, config.master, config.evaluation_master) == (7, "", "grpc://eval:1")
    assert config.session_config is None  # nothing to filter: it is outside the training cluster


def test_session_masters_from_tf_config(monkeypatch):
    alone = config_for(monkeypatch, {"session_master": "grpc://here:1", "eval_session_master": "grpc://there:2"})
    assert (alone.master, alone.evaluation_master, alone.is_chief) == ("grpc://here:1", "grpc://there:2", True)
    # In a cluster session_master wins over the task's own address; a trainer's evaluation master stays local.
    for cluster, task in ((CLUSTER, "worker"), (TF1_CLUSTER, "worker"), ({"chief": ["c:1"]}, "chief")):
        config = config_for(monkeypatch, {"cluster": cluster, "task": {"type": task, "index": 0},
                                          "session_master": "grpc://elsewhere:3", "eval_session_master": "x"})
        assert (config.master, config.evaluation_master) == ("grpc://elsewhere:3", "")


def test_global_ids_number_the_coordinator_then_jobs_by_name_then_ps(monkeypatch):
    cluster = {"ps": ["p:1"], "worker": ["w:1", "w:2"], "evaluator": ["e:1"], "chief": ["c:1"], "aux": ["a:1"]}
    expected = {("chief", 0): 0, ("aux", 0): 1, ("evaluator", 0): None, ("worker", 0): 3, ("worker", 1): 4,
                ("ps", 0): 5}  # the evaluator itself has none, but a listed evaluator job takes number 2
    for (task_type, index), global_id in expected.items():
        config = config_for(monkeypatch, {"cluster": cluster, "task": {"type": task_type, "index": index}})
        assert config.global_id_in_cluster == global_id, (task_type, index)
    other = config_for(monkeypatch, {"cluster": cluster, "task": {"type": "aux", "index": 0}})
    assert other.session_config is None and other.num_worker_replicas == 3  # chief and workers only


def test_service_is_handed_through_and_must_be_a_dict(monkeypatch):
    service = {"name": "trainer", "ports": [1, 2], "nested": {"a": 1}}
    assert config_for(monkeypatch, {"service": service}).service == service
    assert config_for(monkeypatch, {"task": {"type": "worker", "index": 0}}).service is None
    with pytest.raises(TypeError, match='If "service" is set in TF_CONFIG, it must be a dict'):
        config_for(monkeypatch, {"service": "trainer"})


def test_model_dir_from_tf_config(monkeypatch, tmp_path):
    folder = str(tmp_path / "model")
    assert config_for(monkeypatch, {"model_dir": folder}).model_dir == folder
    assert config_for(monkeypatch, {"model_dir": folder}, model_dir=folder).model_dir == folder
    assert config_for(monkeypatch, {}, model_dir=tmp_path / "model").model_dir == folder  # a PathLike, as a str
    with pytest.raises(ValueError, match="must have the same value as the model_dir in TF_CONFIG"):
        config_for(monkeypatch, {"model_dir": folder}, model_dir=str(tmp_path / "other"))
    with pytest.raises(ValueError, match="model_dir in TF_CONFIG should be non-empty"):
        config_for(monkeypatch, {"model_dir": ""})
    with pytest.raises(ValueError, match="model_dir should be non-empty"):
        config_for(monkeypatch, {}, model_dir="")


# -- argument checks, in the constructor and in replace() ------------------------

@pytest.mark.parametrize("arguments,message", [
    ({"log_step_count_steps": 0}, "log_step_count_steps should be > 0"),
    ({"save_checkpoints_secs": -1}, "save_checkpoints_secs should be >= 0"),
    ({"save_checkpoints_steps": -1}, "save_checkpoints_steps should be >= 0"),
    ({"keep_checkpoint_every_n_hours": 0}, "keep_checkpoint_every_n_hours should be > 0"),
    ({"session_creation_timeout_secs": 0}, "session_creation_timeout_secs should be > 0"),
    ({"experimental_max_worker_delay_secs": 1.5}, "experimental_max_worker_delay_secs must be an integer if set."),
    ({"tf_random_seed": 2.0}, "tf_random_seed must be integer."),
    ({"device_fn": lambda operation: "/cpu:0"}, 'device_fn must be callable with exactly one argument "op".'),
    ({"device_fn": "/cpu:0"}, 'device_fn must be callable with exactly one argument "op".'),
    ({"protocol": "http"}, "protocol should be grpc or grpc+verbs"),
])
def test_a_value_out_of_range_is_refused_when_built_and_when_replaced(monkeypatch, arguments, message):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError) as built:
        estimator.RunConfig(**arguments)
    with pytest.raises(ValueError) as replaced:
        estimator.RunConfig().replace(**arguments)
    assert message in str(built.value) and message in str(replaced.value)
    with pytest.raises(ValueError, match="model_dir should be non-empty"):
        estimator.RunConfig().replace(model_dir="")


def test_none_switches_a_setting_off_and_device_fn_takes_op(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    names = ("tf_random_seed", "save_summary_steps", "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
             "log_step_count_steps", "device_fn", "session_config", "model_dir")
    config = estimator.RunConfig(**{name: None for name in names})
    assert all(getattr(config, name) is None for name in names)
    place = lambda op: "/cpu:0"  # noqa: E731
    assert estimator.RunConfig(device_fn=place).replace(tf_random_seed=1).device_fn is place


def test_tf2_parameter_server_strategy_is_refused(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    refused = tf.distribute.experimental.ParameterServerStrategy
    strategy = refused.__new__(refused)  # not started: building one needs a running cluster
    for argument in ("train_distribute", "eval_distribute"):
        with pytest.raises(ValueError, match="Please use `tf.compat.v1.distribute.experimental.ParameterServer"):
            estimator.RunConfig(**{argument: strategy})


# -- replace() copies, as TF 2.15's did ------------------------------------------

def test_replace_keeps_the_subclass_extra_attributes_and_placement(monkeypatch):
    class NotTheChief(estimator.RunConfig):
        @property
        def is_chief(self):
            return False

    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}}))
    config = NotTheChief()
    config.note = "kept"
    monkeypatch.delenv("TF_CONFIG")  # a copy does not read TF_CONFIG again
    copy = config.replace(save_summary_steps=7)
    assert type(copy) is NotTheChief and copy.note == "kept" and copy.is_chief is False
    assert (copy.task_type, copy.task_id, copy.master, copy.global_id_in_cluster) == ("worker", 1,
                                                                                     "grpc://localhost:2224", 2)
    assert copy.session_config == config.session_config and copy.session_config is not config.session_config
    assert (copy.save_summary_steps, config.save_summary_steps) == (7, 100)


def test_the_estimators_copies_of_its_config_share_the_strategy(monkeypatch, tmp_path):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    config = estimator.RunConfig(train_distribute=strategy, eval_distribute=strategy)
    est = estimator.Estimator(lambda features, labels, mode: None, model_dir=str(tmp_path), config=config)
    for copied in (config.replace(model_dir=str(tmp_path)), est.config, est.config):
        assert copied.train_distribute is strategy and copied.eval_distribute is strategy
    assert est.config is not est.config and est.config.model_dir == str(tmp_path) and config.model_dir is None
    assert isinstance(est.config.session_config, tf.compat.v1.ConfigProto)  # TF 2.15's default, set by the Estimator


def test_replace_turns_the_other_cadence_off_only_for_a_value(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert estimator.RunConfig().replace(save_checkpoints_steps=None).save_checkpoints_secs == 600
    off = estimator.RunConfig().replace(save_checkpoints_steps=None, save_checkpoints_secs=None)
    assert not off.saves_checkpoints
    with pytest.raises(ValueError, match="cannot be both set"):
        estimator.RunConfig().replace(save_checkpoints_steps=5, save_checkpoints_secs=5)


def test_experimental_distribute_must_be_a_distribute_config():
    """TF 2.15 read the strategies off `experimental_distribute` at once: anything else raised AttributeError."""
    with pytest.raises(AttributeError):
        estimator.RunConfig(experimental_distribute="x")
