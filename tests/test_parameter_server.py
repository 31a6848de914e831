"""Parameter-server clusters beside TF 2.15's run: TF 1's between-graph replication on the graph engine, and a
model_to_estimator Estimator on a ParameterServerStrategy.

Every task is a real process on 127.0.0.1: ps, chief (or TF 1's master), one or
two workers and an evaluator, each running tests/helpers/ps_cluster_program.py
with its import lines changed to compat.estimator. tests/data/tf215_ps_cluster.json
is what TF 2.15's real tf.estimator gave for the unchanged program
(`python tests/helpers/ps_cluster.py TF215_PYTHON OUT.json`). Training is
asynchronous, so the final step and the numbers vary from run to run on either
TensorFlow; the checkpoint's variables, the folder's files, the exports and the
evaluator's schedule do not.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import sys
import time

import pytest
import tensorflow as tf

from conftest import HELPERS, REPO

sys.path.insert(0, HELPERS)
from ps_cluster import (PROGRAM, cluster_of, finish, kill_all, paused, start, start_task,  # noqa: E402,I001
                        stderr_of, wait_until_paused)

TF215 = json.load(open(os.path.join(REPO, "tests", "data", "tf215_ps_cluster.json")))
MAX_STEPS = 200
# A trainer stops after the first step whose read of the shared step shows max_steps. Once the step
# reaches max_steps, each trainer (the chief and the workers) may still land the step in flight (its read
# taken before) and the next one: at most two each. TF 2.15 ended at 201-203 for 200 with three trainers.


def in_flight(workers: int) -> int:
    return 2 * (1 + workers)


ENV = {"PYTHONPATH": REPO}


def changed_program(tmp_path) -> str:
    """The program with its two import lines pointed at compat.estimator."""
    source = open(PROGRAM).read()
    changed = source.replace("estimator = tf.estimator\n", "import compat.estimator as estimator\n").replace(
        "model_to_estimator = tf.keras.estimator.model_to_estimator\n",
        "model_to_estimator = estimator.model_to_estimator\n")
    assert "import compat.estimator as estimator\n" in changed and "= estimator.model_to_estimator\n" in changed
    path = tmp_path / "program.py"
    path.write_text(changed)
    return str(path)


def assert_all_succeeded(results: dict) -> None:
    for task, (code, _, err) in results.items():
        assert code == 0, f"{task}: {err[-3000:]}"


def predict_alone(program: str, model_dir: str, *flags: str) -> dict:
    """The cluster's newest checkpoint restored by a single-process Estimator (no TF_CONFIG), in this process:
    the program is run as its own process would run it, without one more TensorFlow import."""
    import contextlib
    import io
    import runpy

    printed = io.StringIO()
    saved_argv, saved_tf_config = sys.argv, os.environ.pop("TF_CONFIG", None)
    sys.argv = [program, model_dir, "0", *flags, "--predict-only"]
    try:
        with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as ended:
            runpy.run_path(program, run_name="__main__")
    finally:
        sys.argv = saved_argv
        if saved_tf_config is not None:
            os.environ["TF_CONFIG"] = saved_tf_config
    assert ended.value.code == 0
    return json.loads(printed.getvalue().strip().splitlines()[-1])


@pytest.mark.parametrize("model", ["model_fn", "canned"])
def test_a_ps_cluster_trains_evaluates_and_exports_as_tf_2_15(tmp_path, model):
    program, model_dir = changed_program(tmp_path), str(tmp_path / "model")
    flags = ["--canned"] if model == "canned" else []
    # Two workers share the model_fn's variables; one is enough to show the canned estimator's on the ps.
    workers = 2 if model == "model_fn" else 1
    results = finish(start([sys.executable, program, model_dir, str(MAX_STEPS), *flags], cluster_of(workers=workers),
                           env=ENV))
    assert_all_succeeded(results)
    theirs = TF215[model]

    final = results["chief0"][1]["step"]  # the chief's last save, after every trainer stopped
    assert MAX_STEPS <= final <= MAX_STEPS + in_flight(workers)
    assert all(report["returned"] is None for _, report, _ in results.values())  # as TF 2.15's tasks
    checkpoint = tf.train.latest_checkpoint(model_dir)
    # The variables lived on the ps task, the chief saved them in one shard, under TF 2.15's names.
    assert sorted(name for name, _ in tf.train.list_variables(checkpoint)) == theirs["variables"]
    assert glob.glob(checkpoint + ".data-00000-of-00001")
    files = {entry.split(".")[0] if entry.startswith("events.") else entry.split("-")[0]
             for entry in os.listdir(model_dir)}
    assert sorted(files) == theirs["files"]

    # The evaluator ends after evaluating a checkpoint at or past max_steps, as TF 2.15's did: the chief's
    # periodic save may land there before its final one.
    evaluator = results["evaluator0"][1]
    # A checkpoint's name is the step the chief's saver read before saving, while the other workers go on
    # stepping the ps's global_step: the saved value may be past its name (asynchronous training, as on TF 2.15).
    assert MAX_STEPS <= evaluator["global_step"] <= final + in_flight(workers)
    assert 1 <= evaluator["exports"] <= 2  # LatestExporter(exports_to_keep=2)
    exports = sorted(glob.glob(os.path.join(model_dir, "export", "latest", "*")))
    assert sorted(tf.saved_model.load(exports[-1]).signatures) == theirs["export_signatures"]

    alone = predict_alone(program, model_dir, *flags)
    assert alone["global_step"] == final
    assert alone["predicted_accuracy"] == pytest.approx(alone["evaluated_accuracy"], abs=1e-6)
    if model == "model_fn":  # Adagrad at 0.5 learns this in 200 steps on either TensorFlow (TF 2.15: 0.977)
        assert alone["evaluated_accuracy"] > 0.9


def test_a_tf1_cluster_led_by_a_master_trains_and_the_master_evaluates(tmp_path):
    """TF 1's cluster has no evaluator task: the master evaluates after its saves, as on one machine."""
    program, model_dir = changed_program(tmp_path), str(tmp_path / "model")
    results = finish(start([sys.executable, program, model_dir, str(MAX_STEPS)], cluster_of("master", workers=1),
                           evaluator=False, env=ENV))
    assert_all_succeeded(results)
    final = results["master0"][1]["step"]
    assert MAX_STEPS <= final <= MAX_STEPS + in_flight(workers=1)
    evaluated = set()
    for events in glob.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(events):
            if any(value.tag == "accuracy" for value in event.summary.value):
                evaluated.add(event.step)
    assert final in evaluated
    assert glob.glob(os.path.join(model_dir, "export", "latest", "*", "saved_model.pb"))


def test_a_worker_killed_and_restarted_rejoins(tmp_path):
    program, model_dir = changed_program(tmp_path), str(tmp_path / "model")
    release = tmp_path / "release"
    command = [sys.executable, program, model_dir, str(MAX_STEPS)]
    cluster = cluster_of(workers=1)
    # The chief holds after its first save (the variables made), so that only the worker trains; the worker
    # holds after its 20th step, its session open on the ps, and is killed there. Started again, it holds
    # after its first step on the shared model, and both are let go.
    env = {**ENV, "PAUSE_RELEASE": str(release)}
    processes = start(command, cluster, evaluator=False, env=env, pause={"chief0": "checkpoint:0", "worker0": "run:20"})
    try:
        processes["worker0"].send_signal(signal.SIGKILL)
        processes["worker0"].wait()
        processes["worker0"] = start_task(paused(command, "run:1"), cluster, "worker", 0, env)
        wait_until_paused(processes["worker0"])
        release.touch()
        results = finish(processes)
    finally:
        kill_all(processes)
    assert_all_succeeded(results)
    assert results["chief0"][1]["step"] >= MAX_STEPS
    assert results["worker0"][1]["session_starts"] == [20]  # the restarted worker went on from the shared step
    assert predict_alone(program, model_dir)["global_step"] == results["chief0"][1]["step"]


def checkpoint_steps(model_dir: str) -> set[int]:
    return {int(path.rsplit("-", 1)[1].split(".")[0]) for path in glob.glob(os.path.join(model_dir, "model.ckpt-*.index"))}


def test_a_lost_ps_task_started_again_is_filled_from_the_chiefs_newest_checkpoint(tmp_path):
    """As in TF 2.15: the trainers wait for a lost ps task; started again, it gets the chief's newest checkpoint
    (not the initial values) and training goes on to max_steps."""
    program, model_dir = changed_program(tmp_path), str(tmp_path / "model")
    release = tmp_path / "release"
    command = [sys.executable, program, model_dir, str(2 * MAX_STEPS)]
    cluster = cluster_of(workers=1)
    # The chief holds after its save at step 100 or later; the ps is lost and started again meanwhile.
    processes = start(command, cluster, evaluator=False, env={**ENV, "PAUSE_RELEASE": str(release)},
                      pause={"chief0": "checkpoint:100"})
    try:
        held_at = max(checkpoint_steps(model_dir))
        processes["ps0"].kill()
        processes["ps0"].communicate()
        processes["ps0"] = start_task(command, cluster, "ps", 0, ENV)
        release.touch()
        results = finish(processes)
    finally:
        kill_all(processes)
    assert_all_succeeded(results)
    chief = results["chief0"][1]
    assert chief["step"] >= 2 * MAX_STEPS
    # The chief's session was made again on the new ps, from its newest checkpoint, not from step 0.
    assert len(chief["session_starts"]) >= 2 and chief["session_starts"][-1] >= held_at


def test_a_ps_task_that_does_not_come_back_ends_the_chief_naming_the_checkpoint_a_rerun_resumes_from(tmp_path):
    program, model_dir = changed_program(tmp_path), str(tmp_path / "model")
    cluster = {"chief": cluster_of()["chief"], "ps": cluster_of()["ps"]}
    command = [sys.executable, program, model_dir, str(MAX_STEPS), "--give-up-secs", "3"]
    release = tmp_path / "release"
    processes = start(command, cluster, evaluator=False, env={**ENV, "PAUSE_RELEASE": str(release)},
                      pause={"chief0": "checkpoint:50"})
    try:
        held_at = max(checkpoint_steps(model_dir))  # the chief holds after this save
        processes["ps0"].kill()
        processes["ps0"].communicate()
        release.touch()  # the chief's next step meets the lost ps: TensorFlow's session recovery waits for it
        code = processes["chief0"].wait(timeout=120)
        said = stderr_of(processes["chief0"])
    finally:
        kill_all(processes)
    assert code == 1, said[-3000:]
    (ending,) = [line for line in said.splitlines() if "this task ends now" in line]
    assert cluster["ps"][0] in ending and f"resumes from {model_dir}/model.ckpt-{held_at}" in ending, ending
    assert tf.train.latest_checkpoint(model_dir).endswith(f"model.ckpt-{held_at}")
    assert not [name for name in os.listdir(model_dir) if "tempstate" in name or name.endswith("_temp")]


def test_the_watch_names_a_lost_ps_and_the_checkpoint_then_ends_the_task_past_the_timeout(tmp_path, caplog):
    """The chief's and workers' watch in a ps cluster, against real sockets: a task that serves is left out,
    one that refuses connections is named with the newest checkpoint, and past RunConfig's
    session_creation_timeout_secs the task ends with exit status 1."""
    import socket
    import threading

    from compat.estimator.ps_watch import ParameterServerWatch, reachable

    with tf.Graph().as_default():
        tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(session, str(tmp_path / "model.ckpt"), global_step=7)
    with socket.socket() as serving, socket.socket() as refusing:
        serving.bind(("127.0.0.1", 0))
        serving.listen()
        refusing.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused, the port stays ours
        served, lost = (f"127.0.0.1:{sock.getsockname()[1]}" for sock in (serving, refusing))
        assert reachable(served) and not reachable(lost)
        ended: list[int] = []
        done = threading.Event()
        watch = ParameterServerWatch([served, lost], str(tmp_path), give_up_secs=3.0, probe_secs=0.1,
                                     end_process=lambda code: (ended.append(code), done.set()))
        with caplog.at_level("INFO", logger="absl"):
            watch.after_create_session(None, None)
            assert done.wait(30)
    said = {level: [r.getMessage() for r in caplog.records if r.levelname == level] for level in ("WARNING", "ERROR")}
    assert ended == [1] and len(said["WARNING"]) == 1 and len(said["ERROR"]) == 1
    for message in (said["WARNING"][0], said["ERROR"][0]):
        assert lost in message and served not in message
        assert f"resumes from {tmp_path}/model.ckpt-7" in message and "session_creation_timeout_secs, 3 s" in message
    assert "Training waits for them" in said["WARNING"][0] and "this task ends now" in said["ERROR"][0]


def test_a_model_to_estimator_program_trains_on_a_parameter_server_strategy_with_tf_2_15s_files(tmp_path):
    """TF 2.15 replicated a model_to_estimator model between graphs; a Keras 3 model cannot be built into a TF 1
    graph, so here the chief coordinates a ParameterServerStrategy (the workers only serve). The same program,
    the same tasks and exit codes, the variables on the ps (two checkpoint shards, as TF 2.15's), TF 2.15's weight
    names, files (less the graph TF 2.15 wrote, graph.pbtxt and .meta: this engine builds none), evaluator and
    export; the step count is exact where TF 2.15's asynchronous trainers overshot it."""
    program, model_dir = changed_program(tmp_path), str(tmp_path / "model")
    theirs = TF215["keras"]
    results = finish(start([sys.executable, program, model_dir, str(MAX_STEPS), "--keras"], cluster_of(), env=ENV))
    assert_all_succeeded(results)
    assert all(report["returned"] is None for _, report, _ in results.values())
    assert {task: report["step"] for task, (_, report, _) in results.items()} == dict.fromkeys(theirs["steps"], MAX_STEPS)
    checkpoint = tf.train.latest_checkpoint(model_dir)
    weights = sorted(name for name, _ in tf.train.list_variables(checkpoint)
                     if name.startswith("layer_with_weights-") and "OPTIMIZER_SLOT" not in name and ".." not in name)
    assert weights == [name for name in theirs["variables"]
                       if name.startswith("layer_with_weights-") and "OPTIMIZER_SLOT" not in name]
    shards = {path.rsplit("-of-", 1)[1] for path in glob.glob(checkpoint + ".data-*")}
    assert shards == {name.rsplit("-of-", 1)[1] for name in theirs["evaluator"]["checkpoints"] if "data-" in name}
    files = {entry.split(".")[0] if entry.startswith("events.") else entry.split("-")[0]
             for entry in os.listdir(model_dir)}
    assert sorted(files) == [name for name in theirs["files"] if name != "graph.pbtxt"]
    evaluator = results["evaluator0"][1]
    assert evaluator["global_step"] == MAX_STEPS and 1 <= evaluator["exports"] <= 2
    assert evaluator["accuracy"] > 0.9  # TF 2.15: 1.0
    exports = sorted(glob.glob(os.path.join(model_dir, "export", "latest", "*")))
    assert sorted(tf.saved_model.load(exports[-1]).signatures) == theirs["export_signatures"]
    alone = predict_alone(program, model_dir, "--keras")
    assert alone["global_step"] == MAX_STEPS
    assert alone["predicted_accuracy"] == pytest.approx(alone["evaluated_accuracy"], abs=1e-6)


def test_a_worker_killed_and_restarted_rejoins_a_parameter_server_strategy(tmp_path):
    """The one worker of a model_to_estimator cluster is killed after the chief's save at step 100: the chief's
    coordinator holds its steps until the worker is started again, and the job ends at max_steps."""
    program, model_dir = changed_program(tmp_path), str(tmp_path / "model")
    command = [sys.executable, program, model_dir, str(2 * MAX_STEPS), "--keras"]
    cluster = cluster_of(workers=1)
    processes = start(command, cluster, evaluator=False, env=ENV)
    try:
        deadline = time.monotonic() + 120
        while 100 not in checkpoint_steps(model_dir):
            assert time.monotonic() < deadline and processes["chief0"].poll() is None, stderr_of(processes["chief0"])
            time.sleep(0.1)
        processes["worker0"].kill()
        processes["worker0"].communicate()
        processes["worker0"] = start_task(command, cluster, "worker", 0, ENV)
        results = finish(processes)
    finally:
        kill_all(processes)
    assert_all_succeeded(results)
    assert results["chief0"][1]["step"] == results["worker0"][1]["step"] == 2 * MAX_STEPS
    assert max(checkpoint_steps(model_dir)) == 2 * MAX_STEPS
