"""A model_fn or canned Estimator trained with several replicas (RunConfig.train_distribute / eval_distribute).

Each run is a real process: two logical CPU devices exist only if TensorFlow is
told so before it starts, and a multi-worker cluster is two processes on
127.0.0.1. tests/data/tf215_replicated.json is TF 2.15's own run of the same
program (tests/helpers/replicated_program.py, recorded in the TF 2.15 side
environment with `--tf215`, the settings TF 2.15 needed not to hang on 2 cores;
this project runs it without them).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import HELPERS, REPO, start_paused
from test_distributed import free_port, last_json

PROGRAM = os.path.join(HELPERS, "replicated_program.py")
TF215 = json.load(open(os.path.join(REPO, "tests", "data", "tf215_replicated.json")))
INSTALL_THEN_RUN = ("import compat.estimator, runpy, sys; compat.estimator.install(); "
                    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def run_program(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", INSTALL_THEN_RUN, PROGRAM, *args], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO, env=env)


def assert_as_tf215(ours: dict, recorded: dict) -> None:
    """What a user sees of the run is TF 2.15's: checkpoint keys, step, metric keys, export; accuracy close."""
    assert ours["variables"] == recorded["variables"]  # no replica suffixes TF 2.15 did not write
    assert ours["global_step"] == recorded["global_step"]
    assert ours["metric_keys"] == recorded["metric_keys"]
    assert ours["signatures"] == recorded["signatures"]
    assert abs(ours["accuracy"] - recorded["accuracy"]) <= 0.05, (ours["accuracy"], recorded["accuracy"])
    assert abs(ours["loss"] - recorded["loss"]) <= 0.5 * recorded["loss"]  # the loss of one device's scale


@pytest.mark.parametrize("kind", ["model_fn", "dnn"])
def test_mirrored_strategy_over_two_devices_trains_evaluates_predicts_and_exports_as_tf215(tmp_path, kind):
    result = run_program(str(tmp_path / "model"), kind, "mirrored", "200")
    assert result.returncode == 0, result.stderr[-3000:]
    assert_as_tf215(last_json(result.stdout), TF215["mirrored"][kind])


@pytest.mark.parametrize("keras", ["3", "legacy"])
def test_a_model_fn_of_keras_layers_is_replicated_with_tf_2_15s_checkpoint_keys(tmp_path, keras):
    """tf.keras layers in a model_fn under MirroredStrategy: one mirrored variable each, saved under TF 2.15's
    keys (no `/replica_1` copies), trained, evaluated, predicted and exported. Batch norm's moving statistics
    are updated here (TF 2.15's Keras 2 layers left them at their initial values in a graph: docs/estimator.md),
    so the accuracy is TF 2.15's or better; tf_keras' layers (TF_USE_LEGACY_KERAS=1) replicate too."""
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1" if keras == "legacy" else "0"}
    result = run_program(str(tmp_path / "model"), "keras", "mirrored", "200", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    ours, recorded = last_json(result.stdout), TF215["mirrored"]["keras"]
    for key in ("variables", "global_step", "metric_keys", "signatures"):
        assert ours[key] == recorded[key], key
    assert ours["accuracy"] >= recorded["accuracy"] - 0.05, (ours["accuracy"], recorded["accuracy"])


@pytest.mark.parametrize("kind", ["model_fn", "dnn"])
def test_multi_worker_mirrored_strategy_in_a_two_worker_cluster_trains_as_tf215(tmp_path, kind):
    cluster = {"chief": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]}
    processes = {}
    for task in cluster:
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task, "index": 0}})}
        processes[task] = subprocess.Popen(
            [sys.executable, "-c", INSTALL_THEN_RUN, PROGRAM, str(tmp_path / "model"), kind, "multi_worker", "200"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    outputs = {}
    for task, process in processes.items():
        try:
            outputs[task] = process.communicate(timeout=300)
        finally:
            process.kill()
        assert process.returncode == 0, f"{task}: {outputs[task][1][-3000:]}"
    assert last_json(outputs["worker"][0]) == {"task": "worker", "index": 0}
    assert_as_tf215(last_json(outputs["chief"][0]), TF215["multi_worker"][kind])
    # only the chief writes the model folder
    assert not [name for name in os.listdir(tmp_path / "model") if "worker" in name]


def test_a_replicated_run_killed_mid_training_resumes_from_its_checkpoint_to_the_exact_step(tmp_path):
    model_dir = str(tmp_path / "model")
    held = start_paused("checkpoint:100", PROGRAM, model_dir, "model_fn", "mirrored", "400", "--no-export",
                        install=True, stderr_to=str(tmp_path / "first.err"))
    held.send_signal(signal.SIGKILL)
    held.wait()
    assert os.path.exists(os.path.join(model_dir, "model.ckpt-100.index"))
    assert not os.path.exists(os.path.join(model_dir, "model.ckpt-400.index"))
    first = os.stat(os.path.join(model_dir, "model.ckpt-0.index")).st_mtime_ns
    result = run_program(model_dir, "model_fn", "mirrored", "400", "--no-export")
    assert result.returncode == 0, result.stderr[-3000:]
    # resumed at step 100: a run from scratch would have written its step-0 checkpoint again
    assert os.stat(os.path.join(model_dir, "model.ckpt-0.index")).st_mtime_ns == first
    resumed = last_json(result.stdout)
    assert resumed["global_step"] == 400
    assert resumed["variables"] == TF215["mirrored"]["model_fn"]["variables"]


def test_a_strategy_the_engine_cannot_run_is_refused_in_one_line_and_keras_3_layers_replicate(tmp_path):
    model_dir = tmp_path / "model"
    program = (
        "import tensorflow as tf\n"
        "cpu = tf.config.list_physical_devices('CPU')[0]\n"
        "tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)\n"
        "import compat.estimator as estimator\n"
        "strategy = tf.distribute.experimental.CentralStorageStrategy(['/cpu:0', '/cpu:1'])\n"
        "try:\n"
        "    estimator.DNNClassifier([4], [tf.feature_column.numeric_column('x')], model_dir=%r,\n"
        "                            config=estimator.RunConfig(train_distribute=strategy))\n"
        "except ValueError as error:\n"
        "    print(error)\n"
        "import keras, numpy as np\n"
        "def model_fn(features, labels, mode):\n"
        "    logits = keras.layers.Dense(2)(features['x'])\n"
        "    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)\n"
        "    step = tf.compat.v1.train.get_global_step()\n"
        "    return estimator.EstimatorSpec(mode, loss=loss,\n"
        "        train_op=tf.compat.v1.train.AdamOptimizer().minimize(loss, step))\n"
        "data = lambda: tf.data.Dataset.from_tensor_slices(({'x': np.ones((8, 3), 'float32')}, np.ones(8, 'int32')))"
        ".repeat().batch(4)\n"
        "two = tf.compat.v1.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])\n"
        "two_replicas = estimator.Estimator(model_fn, %r, config=estimator.RunConfig(train_distribute=two))\n"
        "print(sorted(two_replicas.train(data, steps=1).get_variable_names()))\n"
        "one = tf.compat.v1.distribute.MirroredStrategy(['/cpu:0'])\n"
        "estimator.Estimator(model_fn, %r, config=estimator.RunConfig(train_distribute=one)).train(data, steps=2)\n"
        "print('one replica trained')\n" % (str(model_dir), str(tmp_path / "keras3"), str(tmp_path / "one")))
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300, cwd=REPO)
    refused, keras_3, one = result.stdout.strip().splitlines()[-3:]
    assert "CentralStorageStrategy" in refused and "MirroredStrategy" in refused, result.stderr[-3000:]
    assert not model_dir.exists()
    # Keras 3 layers' variables are the strategy's: one checkpoint key each, no replica copies
    assert keras_3 == str(["beta1_power", "beta2_power", "dense/bias", "dense/bias/Adam", "dense/bias/Adam_1", "dense/kernel", "dense/kernel/Adam",
                           "dense/kernel/Adam_1", "global_step"]), result.stderr[-3000:]
    # tf.compat.v1's own MirroredStrategy class is taken too; over one device it trains as without a strategy
    assert one == "one replica trained"


def test_every_engine_reads_one_plan_of_each_strategy(tmp_path):
    """Where a strategy's replicas run is decided once (`strategies.plan_of`), and each engine runs what its
    topology allows: the graph engine replicates over devices or workers and takes a single-replica strategy
    as none; the Keras engine also runs OneDeviceStrategy as given; neither runs CentralStorageStrategy."""
    program = (
        "import json, tensorflow as tf\n"
        "cpu = tf.config.list_physical_devices('CPU')[0]\n"
        "tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)\n"
        "from compat.core import strategies\n"
        "from compat.estimator import replicated\n"
        "made = {\n"
        "    'none': None,\n"
        "    'one_device': tf.distribute.OneDeviceStrategy('/cpu:0'),\n"
        "    'mirrored_one': tf.distribute.MirroredStrategy(['/cpu:0']),\n"
        "    'mirrored_two': tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']),\n"
        "    'mirrored_two_v1': tf.compat.v1.distribute.MirroredStrategy(['/cpu:0', '/cpu:1']),\n"
        "    'central': tf.distribute.experimental.CentralStorageStrategy(['/cpu:0', '/cpu:1']),\n"
        "    'multi_worker': tf.distribute.MultiWorkerMirroredStrategy(),\n"
        "}\n"
        "def decided(decide, strategy):\n"
        "    try:\n"
        "        kept = decide(strategy)\n"
        "    except strategies.UnsupportedStrategyError:\n"
        "        return 'refused'\n"
        "    return 'none' if kept is None else 'kept' if kept is strategy else 'other'\n"
        "rows = {}\n"
        "for name, strategy in made.items():\n"
        "    plan = strategies.plan_of(strategy)\n"
        "    rows[name] = [plan.topology.name, plan.replicas, plan.spans_tasks,\n"
        "                  decided(lambda s: replicated.replicas_of(s, 'train_distribute'), strategy),\n"
        "                  decided(strategies.checked_strategy, strategy)]\n"
        "print(json.dumps(rows))\n")
    env = {name: value for name, value in os.environ.items() if name != "TF_CONFIG"}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300, cwd=REPO,
                            env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = last_json(result.stdout)
    assert rows == {
        "none": ["ONE_DEVICE", 1, False, "none", "none"],
        "one_device": ["ONE_DEVICE", 1, False, "none", "kept"],
        "mirrored_one": ["ONE_DEVICE", 1, False, "none", "kept"],
        "mirrored_two": ["DEVICES", 2, False, "kept", "kept"],
        "mirrored_two_v1": ["DEVICES", 2, False, "kept", "refused"],  # TF 1.x's class: the graph engine's only
        "central": ["DEVICES", 2, False, "refused", "refused"],
        "multi_worker": ["WORKERS", 1, True, "kept", "kept"],  # one worker, one replica: still in sync
    }
