"""Beyond one device, on TensorFlow's own engines: MirroredStrategy, a TF_CONFIG cluster, the tf.data service.

Every process here is real and listens on 127.0.0.1: TensorFlow fixes its
devices and its cluster when it starts, so each task is a subprocess.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from conftest import HELPERS, run_helper


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


# -- MirroredStrategy -----------------------------------------------------------


def test_mirrored_strategy_splits_each_global_batch_and_learns_as_one_device(tmp_path):
    two = run_helper("mirrored_estimator.py", str(tmp_path / "two"), "two", timeout=300)
    one = run_helper("mirrored_estimator.py", str(tmp_path / "one"), "one", timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    assert one.returncode == 0, one.stderr[-3000:]
    two, one = last_json(two.stdout), last_json(one.stdout)
    assert two["replicas"] == 2 and one["replicas"] == 1
    assert set(two["per_replica_batches"]) == {16}  # half of each global batch of 32
    assert two["global_step"] == one["global_step"] == 150
    assert two["accuracy"] > 0.9 and abs(two["accuracy"] - one["accuracy"]) < 0.05


# -- a TF_CONFIG cluster: chief, worker, evaluator ------------------------------


def start_cluster(model_dir: str, tasks: tuple[str, ...], max_steps: int, slow: float = 0.0) -> dict:
    cluster = {task: [f"127.0.0.1:{free_port()}"] for task in tasks}
    processes = {}
    for task in tasks:
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task, "index": 0}})}
        processes[task] = subprocess.Popen(
            [sys.executable, os.path.join(HELPERS, "cluster_task.py"), model_dir, str(max_steps), str(slow)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return processes


def finish(processes: dict, timeout: int = 300) -> dict:
    results = {}
    for task, process in processes.items():
        try:
            out, err = process.communicate(timeout=timeout)
        finally:
            process.kill()
        results[task] = (process.returncode, out, err)
    return results


def test_multi_worker_cluster_trains_in_sync_and_the_evaluator_follows_the_chief(tmp_path):
    model_dir = str(tmp_path / "model")
    results = finish(start_cluster(model_dir, ("chief", "worker", "evaluator"), max_steps=60))
    for task, (code, _, err) in results.items():
        assert code == 0, f"{task}: {err[-3000:]}"
    chief, worker, evaluator = (last_json(results[task][1]) for task in ("chief", "worker", "evaluator"))
    assert chief["step"] == worker["step"] == 60
    assert chief["weight"] == pytest.approx(worker["weight"], abs=1e-6)  # one model, two copies
    assert evaluator["checkpoint"].endswith("model.ckpt-60")  # it ended after the final checkpoint
    assert os.path.exists(os.path.join(model_dir, "model.ckpt-60.index"))
    eval_steps = set()
    for events in glob.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(events):
            if any(value.tag == "accuracy" for value in event.summary.value):
                eval_steps.add(event.step)
    assert 60 in eval_steps


def test_a_killed_worker_stops_the_job_with_a_clear_message_and_a_rerun_finishes(tmp_path):
    model_dir = str(tmp_path / "model")
    processes = start_cluster(model_dir, ("chief", "worker"), max_steps=200, slow=0.1)
    deadline = time.monotonic() + 240
    while not glob.glob(os.path.join(model_dir, "model.ckpt-40.index")):
        assert time.monotonic() < deadline and processes["chief"].poll() is None, "the cluster did not train"
        time.sleep(0.2)
    processes["worker"].send_signal(signal.SIGKILL)
    code, _, err = finish({"chief": processes["chief"]}, timeout=240)["chief"]
    assert code != 0
    assert "A task of the cluster stopped" in err, err[-3000:]
    reached = int(tf.train.latest_checkpoint(model_dir).rsplit("-", 1)[1])
    assert 40 <= reached < 200

    results = finish(start_cluster(model_dir, ("chief", "worker"), max_steps=200))
    for task, (code, _, err) in results.items():
        assert code == 0, f"{task}: {err[-3000:]}"
    assert last_json(results["chief"][1])["step"] == 200
