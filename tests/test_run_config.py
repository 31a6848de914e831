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
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["localhost:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    with pytest.raises(ValueError, match='must have one "chief" node'):
        estimator.RunConfig()
