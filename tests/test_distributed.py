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

import pytest
import tensorflow as tf

from conftest import HELPERS, REPO, run_helper, train_in_process


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


def start_cluster(model_dir: str, tasks: tuple[str, ...], max_steps: int, pause: dict | None = None) -> dict:
    """One process per task; `pause` maps a task to a point where it holds still (tests/helpers/pause.py),
    and those tasks are returned once they hold there."""
    cluster = {task: [f"127.0.0.1:{free_port()}"] for task in tasks}
    processes = {}
    for task in tasks:
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task, "index": 0}})}
        program = [os.path.join(HELPERS, "cluster_task.py"), model_dir, str(max_steps)]
        if pause and task in pause:
            program = [os.path.join(HELPERS, "pause.py"), pause[task], *program]
        processes[task] = subprocess.Popen([sys.executable, *program], env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
    for task in pause or ():
        for line in processes[task].stdout:
            if line.startswith("paused after "):
                break
        else:
            raise AssertionError(f"{task} ended before {pause[task]}: {processes[task].stderr.read()[-3000:]}")
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


def eval_steps_of(model_dir: str) -> set[int]:
    """The steps the evaluator's event files hold an accuracy for."""
    steps = set()
    for events in glob.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(events):
            if any(value.tag == "accuracy" for value in event.summary.value):
                steps.add(event.step)
    return steps


def test_a_killed_worker_stops_the_job_and_a_rerun_with_an_evaluator_finishes_in_sync(tmp_path):
    model_dir = str(tmp_path / "model")
    # The worker holds after its own checkpoint at step 40; the chief, in step with it, cannot pass step 41.
    processes = start_cluster(model_dir, ("chief", "worker"), max_steps=200, pause={"worker": "checkpoint:40"})
    processes["worker"].send_signal(signal.SIGKILL)
    code, _, err = finish({"chief": processes["chief"]}, timeout=240)["chief"]
    assert code != 0
    assert "A task of the cluster stopped" in err, err[-3000:]
    reached = int(tf.train.latest_checkpoint(model_dir).rsplit("-", 1)[1])
    assert reached in (20, 40)  # the chief's save at 40 may or may not have finished when the worker died

    # The same command again, with an evaluator: the job resumes, the chief and worker train in sync, and the
    # evaluator follows the chief to the final checkpoint.
    results = finish(start_cluster(model_dir, ("chief", "worker", "evaluator"), max_steps=200))
    for task, (code, _, err) in results.items():
        assert code == 0, f"{task}: {err[-3000:]}"
    chief, worker, evaluator = (last_json(results[task][1]) for task in ("chief", "worker", "evaluator"))
    assert chief["step"] == worker["step"] == 200
    assert chief["weight"] == pytest.approx(worker["weight"], abs=1e-6)  # one model, two copies
    assert evaluator["checkpoint"].endswith("model.ckpt-200")  # it ended after the final checkpoint
    assert 200 in eval_steps_of(model_dir)


# -- train.py under a strategy -------------------------------------------------


def test_train_py_runs_mirrored_in_both_modes(tiny_data, tmp_path):
    from test_train_cli import _common

    for mode in ("keras", "estimator"):
        model_dir = tmp_path / mode
        result = train_in_process(*_common(tiny_data, tmp_path), f"--mode={mode}", "--epochs=2",
                                  "--distribution_strategy=mirrored", "--noexport", f"--model_dir={model_dir}")
        assert result.returncode == 0, result.stderr[-3000:]
        assert json.loads((model_dir / "metrics.json").read_text())["steps"] > 0


@pytest.mark.parametrize("flags, named", [
    (("--mode=keras", "--distribution_strategy=multi_worker_mirrored"), "--mode=estimator"),
    (("--mode=tune", "--distribution_strategy=mirrored"), "--mode=tune"),
    (("--mode=keras", "--distribution_strategy=parameter_server"), "--mode=estimator"),
    (("--mode=estimator", "--distribution_strategy=parameter_server"), "needs a TF_CONFIG cluster with ps tasks"),
    (("--mode=estimator", "--distribution_strategy=parameter_server", "--cache=memory"), "needs --cache=disk"),
    (("--tf_data_service=localhost:5050",), "grpc://HOST:PORT"),
    (("--mode=estimator", "--enable_xla"), "--enable_xla and --profile_steps apply to --mode=keras"),
])
def test_strategies_a_mode_cannot_run_are_refused_before_anything_is_written(tmp_path, flags, named):
    result = train_in_process(*flags, f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2
    assert named in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_python_caller_gets_the_same_refusals_as_the_flags(tmp_path):
    """Settings that span configs are checked by the configs' own rule (open_run calls it), not by flags alone."""
    from compat.config import DistributionConfig, PipelineConfig, TrainConfig, check_together
    from compat.modes import run

    with pytest.raises(ValueError, match="`distribution_strategy=parameter_server` needs `cache=disk`"):
        check_together("estimator", PipelineConfig(cache="memory"), TrainConfig(),
                       DistributionConfig("parameter_server"))
    with pytest.raises(ValueError, match="apply to `mode=keras`"):
        check_together("estimator", PipelineConfig(), TrainConfig(enable_xla=True), DistributionConfig())
    check_together("keras", PipelineConfig(), TrainConfig(enable_xla=True), DistributionConfig("mirrored"))
    import models

    with pytest.raises(ValueError, match="runs with `mode=estimator` only"):
        with run.open_run("synthetic", PipelineConfig(), models.ModelConfig(), TrainConfig(), str(tmp_path / "run"),
                          mode="keras", distribution=DistributionConfig("multi_worker_mirrored")):
            pass
    assert not (tmp_path / "run").exists()  # refused before the folder was made


@pytest.mark.parametrize("jobs", [("chief", "worker"), ("worker", "worker")])
def test_train_py_on_a_cluster_chief_and_worker_share_one_model_folder(tiny_data, tmp_path, jobs):
    """A chief and a worker; or, as TensorFlow's multi-worker tutorial writes TF_CONFIG, two workers (worker 0
    leads)."""
    from test_train_cli import _common

    model_dir = tmp_path / "run"
    cluster: dict = {}
    for job in jobs:
        cluster.setdefault(job, []).append(f"127.0.0.1:{free_port()}")
    tasks = [(job, cluster[job].index(address)) for job, addresses in cluster.items() for address in addresses]
    processes = {}
    for job, index in tasks:
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": job, "index": index}})}
        task = "chief" if (job, index) == tasks[0] else "worker"
        processes[task] = subprocess.Popen(
            [sys.executable, "train.py", *_common(tiny_data, tmp_path), "--mode=estimator", "--epochs=2",
             "--distribution_strategy=multi_worker_mirrored", "--noexport", f"--model_dir={model_dir}"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = finish(processes)
    for task, (code, _, err) in results.items():
        assert code == 0, f"{task}: {err[-3000:]}"
    assert "test accuracy" in results["chief"][1]
    assert f"worker {tasks[1][1]} finished" in results["worker"][1]
    assert json.loads((model_dir / "metrics.json").read_text())["steps"] > 0


def test_train_py_on_a_parameter_server_cluster_the_chief_coordinates_and_the_workers_train(tiny_data, tmp_path):
    """Every task runs the same command; the chief sends the steps to the worker (ParameterServerStrategy),
    the variables live on the ps (the checkpoint's second shard), and the worker ends after the chief."""
    from test_train_cli import _common

    model_dir = tmp_path / "run"
    cluster = {job: [f"127.0.0.1:{free_port()}"] for job in ("chief", "worker", "ps")}
    processes = {}
    for task in ("ps", "worker", "chief"):
        env = {**os.environ, "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": task, "index": 0}})}
        processes[task] = subprocess.Popen(
            [sys.executable, "train.py", *_common(tiny_data, tmp_path), "--mode=estimator", "--max_steps=12",
             "--eval_every_steps=6", "--distribution_strategy=parameter_server", "--noexport",
             f"--model_dir={model_dir}"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = processes.pop("ps")
    try:
        results = finish(processes)
    finally:
        ps.kill()
        ps.communicate()
    for task, (code, _, err) in results.items():
        assert code == 0, f"{task}: {err[-3000:]}"
    assert "test accuracy" in results["chief"][1]
    assert "worker 0 finished" in results["worker"][1]
    assert json.loads((model_dir / "metrics.json").read_text())["steps"] == 12
    assert {path.name for path in model_dir.glob("model.ckpt-12.data-*")} == {
        "model.ckpt-12.data-00000-of-00002", "model.ckpt-12.data-00001-of-00002"}


# -- the tf.data service ---------------------------------------------------------


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    """`python -m compat.data.service ...`, once it serves: the process and its HOST:PORT."""
    process = subprocess.Popen([sys.executable, "-m", "compat.data.service", *args], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    if "listening on" not in line:
        process.kill()
        process.wait()
        pytest.fail(f"the server did not start: {line!r}")
    return process, line.split()[-1]


@pytest.fixture(scope="module")
def data_service():
    processes = []
    try:
        dispatcher, address = start_server("dispatcher", "--port=0", "--worker_timeout_ms=2000")
        processes.append(dispatcher)
        workers = []
        for _ in range(2):
            workers.append(start_server("worker", f"--dispatcher_address={address}")[0])
            processes.append(workers[-1])
        yield f"grpc://{address}", workers
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_training_through_the_data_service_learns_as_local_input(data_service, tmp_path, caplog):
    address, _ = data_service
    common = ["--max_steps=150", "--noexport", f"--cache_dir={tmp_path / 'cache'}"]
    with caplog.at_level("INFO", logger="absl"):
        served = train_in_process(*common, "--verbosity=0", f"--tf_data_service={address}",
                                  f"--model_dir={tmp_path / 'served'}")
    assert f"Training input from the tf.data service at {address}" in caplog.text
    local = train_in_process(*common, f"--model_dir={tmp_path / 'local'}")
    assert served.returncode == 0 and local.returncode == 0, served.stderr[-3000:] + local.stderr[-3000:]
    served, local = (json.loads((tmp_path / name / "metrics.json").read_text())["test_accuracy"]
                     for name in ("served", "local"))
    assert served > 0.8 and abs(served - local) < 0.1


def test_a_data_service_worker_killed_mid_epoch_does_not_hang_the_trainer(data_service, tmp_path):
    import threading

    from compat import data
    from compat.config import PipelineConfig

    address, workers = data_service
    config = PipelineConfig(data_service=address, cache_dir=str(tmp_path / "cache"), batch_size=32)
    batches = iter(data.build_dataset("synthetic", config, "train"))
    seen = []

    def read() -> None:
        for step in range(60):  # more than an epoch of the synthetic split
            seen.append(int(next(batches)[1].shape[0]))
            if step == 5:
                workers[0].kill()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=180)
    assert not reader.is_alive(), f"the trainer waited after {len(seen)} batches"
    assert seen == [32] * 60


@pytest.mark.parametrize("tf_config, flags, named", [
    ({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}},
     ("--mode=keras",), "--mode=keras runs on one machine"),
    ({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "chief", "index": 0}},
     ("--mode=estimator",), "start every task with --distribution_strategy=parameter_server"),
    ({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "chief", "index": 0}},
     ("--mode=estimator", "--distribution_strategy=parameter_server"), "ps tasks but no worker"),
    ("{not json", ("--mode=estimator",), "TF_CONFIG"),
])
def test_a_tf_config_the_mode_cannot_run_is_refused_before_anything_is_written(tmp_path, monkeypatch, tf_config,
                                                                                flags, named):
    monkeypatch.setenv("TF_CONFIG", tf_config if isinstance(tf_config, str) else json.dumps(tf_config))
    result = train_in_process(*flags, f"--model_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and named in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_a_dispatcher_and_a_worker_serve_a_dataset_in_process():
    """Fast: the servers `python -m compat.data.service` starts, without the processes; every element once."""
    import tensorflow as tf

    from compat.data import service

    dispatcher = service.start_dispatcher(port=0)
    worker = service.start_worker(dispatcher.target, port=0)
    try:
        served = tf.data.Dataset.range(6).apply(
            tf.data.experimental.service.distribute(processing_mode="parallel_epochs", service=dispatcher.target)
        )
        assert sorted(int(n) for n in served) == list(range(6))
    finally:
        worker.stop()
        dispatcher.stop()


@pytest.mark.parametrize("strategy", ["tf2", "v1"])
def test_the_multi_worker_tutorials_cluster_with_eager_disabled_trains_evaluates_and_exports_as_tf215(tmp_path,
                                                                                                       strategy):
    """TensorFlow's "Multi-worker training with Estimator" shape: eager execution disabled, a chief, a worker and
    an evaluator as processes on 127.0.0.1, train_and_evaluate with an exporter, under TF 2's
    MultiWorkerMirroredStrategy or TF 1.x's (`tf.compat.v1.distribute.experimental`, which was refused as "not
    a MultiWorkerMirroredStrategy", then hung). It hung here once (no task served the graph-mode strategy's
    sessions); it ends as TF 2.15's run of the same program."""
    program = os.path.join(HELPERS, "multi_worker_tutorial.py")
    result = subprocess.run([sys.executable, program, "--cluster", sys.executable, str(tmp_path / "model"), "100",
                             "--compat", *(["--v1"] if strategy == "v1" else [])], capture_output=True, text=True,
                            timeout=400, cwd=REPO)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    ours = last_json(result.stdout)
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_multi_worker_tutorial.json")))
    recorded = recorded["v1"] if strategy == "v1" else recorded
    assert ours["chief"] == recorded["chief"]  # the checkpoint's variables and final step
    assert ours["worker"] == recorded["worker"]
    for key in ("metric_keys", "last_evaluated_step", "signatures"):
        assert ours["evaluator"][key] == recorded["evaluator"][key], key
    assert ours["evaluator"]["exports"] >= 1  # one per checkpoint the evaluator saw: the last one at least
    assert abs(ours["evaluator"]["accuracy"] - recorded["evaluator"]["accuracy"]) <= 0.05


@pytest.mark.parametrize("mode,keras", [("eager", "3"), ("graph", "3"), ("eager", "legacy")])
def test_the_multi_worker_tutorial_as_written_two_workers_and_keras_layers_finish_as_on_tf215(tmp_path, mode, keras):
    """TensorFlow's "Multi-worker training with Estimator" tutorial as its readers ran it: a TF_CONFIG of two
    workers and no chief (worker 0 leads), a tf.keras.Sequential model_fn under MultiWorkerMirroredStrategy,
    with eager execution on and disabled, and with tf.keras as Keras 2 (TF_USE_LEGACY_KERAS=1). Both workers reach
    step 200; the folder holds TF 2.15's checkpoints and variable names (TF 2.15's worker 1 also left throwaway
    copies in tmp_worker_1: not written here)."""
    program = os.path.join(HELPERS, "multi_worker_keras_tutorial.py")
    flags = ["--compat"] + (["--graph"] if mode == "graph" else [])
    result = subprocess.run([sys.executable, program, "--cluster", sys.executable, str(tmp_path / "model"), "200",
                             *flags], capture_output=True, text=True, timeout=400, cwd=REPO,
                            env={**os.environ, "TF_USE_LEGACY_KERAS": "1" if keras == "legacy" else "0"})
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    ours = last_json(result.stdout)
    recorded = json.load(open(os.path.join(REPO, "tests", "data", "tf215_multi_worker_keras_tutorial.json")))[mode]
    assert ours["worker0"] == recorded["worker0"] and ours["worker1"] == recorded["worker1"]
    assert ours["worker0"]["global_step"] == 200
    assert ours["files"]["checkpoints"] == recorded["files"]["checkpoints"]
