"""Starts ps_cluster_program.py as every task of a parameter-server cluster on 127.0.0.1, and records TF 2.15's run.

    python ps_cluster.py TF215_PYTHON OUT.json [MODEL...]
        runs the program unchanged under TF 2.15 (a custom model_fn, --canned and --keras; or the MODELs named),
        and writes what tests/test_parameter_server.py compares with (tests/data/tf215_ps_cluster.json), keeping
        the models OUT already holds

The tests import `start` and `finish`, and run the program with its one import line changed.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile

HELPERS = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HELPERS, "ps_cluster_program.py")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cluster_of(lead: str = "chief", workers: int = 2) -> dict:
    return {lead: [f"127.0.0.1:{_free_port()}"], "worker": [f"127.0.0.1:{_free_port()}" for _ in range(workers)],
            "ps": [f"127.0.0.1:{_free_port()}"]}


def start_task(command: list, cluster: dict, task_type: str, index: int, env: dict | None = None) -> subprocess.Popen:
    """One task; its stderr goes to a file (`stderr_of`), which no unread pipe can make it wait on."""
    tf_config = {"cluster": cluster, "task": {"type": task_type, "index": index}}
    env = {**os.environ, **(env or {}), "TF_CONFIG": json.dumps(tf_config), "TF_CPP_MIN_LOG_LEVEL": "2"}
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    process.log = log  # type: ignore[attr-defined]
    return process


def stderr_of(process: subprocess.Popen) -> str:
    process.log.seek(0)  # type: ignore[attr-defined]
    return process.log.read().decode(errors="replace")  # type: ignore[attr-defined]


def kill_all(processes: dict) -> None:
    """Ends every task (once or again: a task already ended is left as it is)."""
    for process in processes.values():
        process.kill()
        process.wait()
        if process.stdout and not process.stdout.closed:
            process.stdout.close()


def start(command: list, cluster: dict, evaluator: bool = True, env: dict | None = None,
          pause: dict | None = None) -> dict:
    """Every task of `cluster` (and an evaluator) running `command`, keyed `chief0`, `worker1`, `ps0`, ...;
    `pause` maps a task to a point where it holds still (pause.py), and returns once those tasks hold."""
    tasks = [(job, index) for job, addresses in cluster.items() for index in range(len(addresses))]
    if evaluator:
        tasks.append(("evaluator", 0))
    processes: dict = {}
    for job, index in tasks:
        name = f"{job}{index}"
        task_command = paused(command, pause[name]) if pause and name in pause else command
        processes[name] = start_task(task_command, cluster, job, index, env)
    try:
        for name in pause or ():
            wait_until_paused(processes[name])
    except BaseException:
        kill_all(processes)
        raise
    return processes


def paused(command: list, point: str) -> list:
    """`command` ([python, program, ...]) held at `point` by pause.py, run by the same python."""
    return [command[0], os.path.join(HELPERS, "pause.py"), point, *command[1:]]


def wait_until_paused(process: subprocess.Popen) -> None:
    for line in process.stdout:
        if line.startswith("paused after "):
            return
    raise AssertionError(f"the task ended before its pause point: {stderr_of(process)[-3000:]}")


def finish(processes: dict, timeout: int = 300) -> dict:
    """Waits for every task but the ps tasks, which serve until killed (as in TF 2.15), then kills those.
    Returns {task: (exit code, the JSON line it printed last or None, stderr)}."""
    results = {}
    try:
        for name, process in processes.items():
            if not name.startswith("ps"):
                out, _ = process.communicate(timeout=timeout)
                lines = out.strip().splitlines()
                results[name] = (process.returncode, json.loads(lines[-1]) if lines else None, stderr_of(process))
    finally:
        kill_all(processes)
    return results


def _record(python: str, out: str, models: list) -> None:
    import tensorflow as tf

    record = json.load(open(out)) if os.path.exists(out) else {}
    for name in models or ("model_fn", "canned", "keras"):
        flags = [] if name == "model_fn" else [f"--{name}"]
        model_dir = tempfile.mkdtemp(prefix=f"tf215-ps-{name}-")
        results = finish(start([python, PROGRAM, model_dir, "200", *flags], cluster_of()))
        for task, (code, _, err) in results.items():
            assert code == 0, f"{task}: {err[-3000:]}"
        latest = tf.train.latest_checkpoint(model_dir)
        export_base = os.path.join(model_dir, "export", "latest")
        export = os.path.join(export_base, sorted(os.listdir(export_base))[-1])
        record[name] = {
            "steps": {task: report["step"] for task, (_, report, _) in results.items()},
            "variables": sorted(name for name, _ in tf.train.list_variables(latest)),
            "evaluator": results["evaluator0"][1],
            "files": sorted({entry.split(".")[0] if entry.startswith("events.") else entry.split("-")[0]
                             for entry in os.listdir(model_dir)}),
            "export_signatures": sorted(tf.saved_model.load(export).signatures),
        }
    with open(out, "w") as stream:
        json.dump(record, stream, indent=1, sort_keys=True)


if __name__ == "__main__":
    _record(sys.argv[1], sys.argv[2], sys.argv[3:])
