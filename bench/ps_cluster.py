"""A parameter-server job under TF 2.15's Estimator and under compat.estimator, side by side, on 127.0.0.1.

    python bench/ps_cluster.py [--rounds 3] [--steps 200] [--venv DIR]

Runs tests/helpers/ps_cluster_program.py (a tf.compat.v1.layers model_fn,
train_and_evaluate with a LatestExporter) as every task of one cluster: a ps,
a chief, two workers and an evaluator, each its own process. TensorFlow 2.15
runs the program as written; this project runs it after
`compat.estimator.install()`. Rounds alternate which side goes first; it prints
each side's median wall time from the first task's start to the last
trainer's and the evaluator's end, and their ratio. Every task shares this
machine's cores, so this measures the layer's overhead, not how a cluster
scales.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from absl import app, flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests", "helpers"))

from bench.tf215 import INSTALL_THEN_RUN, tf215_python  # noqa: E402
from ps_cluster import PROGRAM, cluster_of, finish, start  # noqa: E402

flags.DEFINE_integer("rounds", 3, "Interleaved rounds (medians are reported).", lower_bound=1)
flags.DEFINE_integer("steps", 200, "max_steps of the job.", lower_bound=50)
flags.DEFINE_string("venv", None, "The TensorFlow 2.15 virtual environment (created if missing).")
FLAGS = flags.FLAGS


def run_job(prefix: list[str]) -> tuple[float, int]:
    """One whole job; returns its wall seconds and the chief's final step."""
    model_dir = tempfile.mkdtemp(prefix="ps-bench-")
    started = time.perf_counter()
    results = finish(start([*prefix, PROGRAM, model_dir, str(FLAGS.steps)], cluster_of(), env={"PYTHONPATH": REPO}))
    wall = time.perf_counter() - started
    for task, (code, _, err) in results.items():
        if code != 0:
            raise RuntimeError(f"{task} failed:\n{err[-3000:]}")
    return wall, results["chief0"][1]["step"]


def main(argv) -> None:
    del argv
    sides = {"TF 2.15 tf.estimator": [tf215_python(FLAGS.venv)], "compat.estimator": [sys.executable, "-c",
                                                                                       INSTALL_THEN_RUN]}
    walls: dict[str, list[float]] = {name: [] for name in sides}
    steps: dict[str, list[int]] = {name: [] for name in sides}
    for index in range(FLAGS.rounds):
        order = list(sides.items()) if index % 2 == 0 else list(reversed(sides.items()))
        for name, prefix in order:
            wall, step = run_job(prefix)
            walls[name].append(wall)
            steps[name].append(step)
        print(f"round {index + 1}/{FLAGS.rounds} done", flush=True)
    print(f"\n| ps, chief, 2 workers, evaluator; {FLAGS.steps} steps | job wall time (median) | final steps |")
    print("|---|---:|---|")
    for name in sides:
        print(f"| {name} | {statistics.median(walls[name]):.1f} s | {', '.join(map(str, steps[name]))} |")
    theirs, ours = (statistics.median(walls[name]) for name in sides)
    print(f"\ncompat.estimator takes {ours / theirs:.2f}x TF 2.15's time for the same job")


if __name__ == "__main__":
    app.run(main)
